"""Open windows as the panes tell them (pure)."""

from __future__ import annotations

from typing import Any

from ui.results import PaneRow, open_from_panes


def pane(key: Any, start: int, end: int, *, last: bool = False, retraction: bool = False,
         total: int = 0) -> PaneRow:
    return PaneRow(1, "s", 0, {"key": key, "window_start": start, "window_end": end,
                               "is_last": last, "retraction": retraction,
                               "values": {"total": total}})


def test_a_final_pane_closes_a_window() -> None:
    rows = [pane("a", 0, 10, total=1), pane("a", 0, 10, last=True, total=2), pane("b", 0, 10)]
    assert [p["key"] for p in open_from_panes(rows)] == ["b"]


def test_keys_are_told_apart_by_json_type() -> None:
    rows = [pane("1", 0, 10), pane(1, 0, 10, last=True)]
    assert [p["key"] for p in open_from_panes(rows)] == ["1"]


def test_extended_and_merged_sessions_replace_the_old_windows() -> None:
    # gap 10: sessions [0,10) and [20,30), then 12 extends the first to [0,22) which overlaps
    # the second: the merged session [0,30) is the only open one
    rows = [pane("a", 0, 10, total=1), pane("a", 20, 30, total=1), pane("a", 0, 22, total=2),
            pane("a", 0, 30, total=3)]
    assert [(p["window_start"], p["window_end"]) for p in open_from_panes(rows, merges=True)] == [(0, 30)]
    # hopping windows overlap legitimately: nothing is replaced
    assert len(open_from_panes(rows, merges=False)) == 4


def test_retractions_are_not_windows() -> None:
    rows = [pane("a", 0, 10, total=1), pane("a", 0, 10, retraction=True, total=1)]
    assert [p["values"]["total"] for p in open_from_panes(rows)] == [1]
