"""tidemark against Bytewax 0.21.1 itself, on random streams with out-of-order and late records.

The expected outputs were computed by Bytewax (``tests/peers/bytewax_fixtures.py`` writes
``fixtures/bytewax_0_21_1.json``; Bytewax is not needed here). Each stream is replayed as a
plain log, one record a line, under the definition Bytewax's ``EventClock`` corresponds to:
per-key watermark with the wait as delay, event lateness basis, final panes, no allowed
lateness (docs/semantics.md, "Peers"). Final panes (key, bounds, members, sum) and late records
(key, record, window) must be the same.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jobs.definition import load_definition
from jobs.replay import replay_lines

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bytewax_0_21_1.json"
DOC = json.loads(FIXTURES.read_text())
BASE_MS = int(datetime.fromisoformat(DOC["base"]).astimezone(UTC).timestamp() * 1000)


def definition(case: dict[str, Any]) -> Any:
    w = case["window"]
    if w["type"] == "session":
        window: dict[str, Any] = {"type": "session", "gap": f"{w['gap_s']}s"}
    else:
        window = {"type": w["type"], "size": f"{w['size_s']}s", "align_to": DOC["base"]}
        if w["type"] == "hopping":
            window["step"] = f"{w['step_s']}s"
    return load_definition({
        "name": "bytewax_peer",
        "key": "k",
        "event_time": "t",
        "watermark": {"strategy": "bounded", "delay": f"{case['delay_s']}s", "scope": "key"},
        "lateness_basis": "event",
        "allowed_lateness": 0,
        "window": window,
        "trigger": {"emit": "final"},
        "aggregations": [{"name": "ids", "fn": "collect", "of": "id"},
                         {"name": "sum", "fn": "sum", "of": "v"}],
    })


def tidemark(case: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The stream replayed as a plain log, in the shape of the fixture."""
    lines = [{"id": r["id"], "k": r["k"], "v": r["v"], "t": BASE_MS + r["t_s"] * 1000}
             for r in case["records"]]
    session = case["window"]["type"] == "session"
    panes, late = [], []
    for o in replay_lines(definition(case), lines):
        if o["type"] == "pane":
            assert o["timing"] == "ON_TIME" and o["is_last"], o
            lo = o["first_event_time"] if session else o["window_start"]
            hi = o["last_event_time"] if session else o["window_end"]
            panes.append({"key": o["key"], "open_s": (lo - BASE_MS) // 1000,
                          "close_s": (hi - BASE_MS) // 1000, "ids": sorted(o["values"]["ids"]),
                          "sum": o["values"]["sum"]})
        elif o["type"] == "late":
            assert o["reason"] == "before_watermark", o
            late.append({"key": o["key"], "id": o["record"]["id"],
                         "window_start_s": None if session
                         else (o["window_start"] - BASE_MS) // 1000})
        else:
            raise AssertionError(f"unexpected output line {o}")
    panes.sort(key=lambda p: (p["key"], p["open_s"], p["close_s"]))
    late.sort(key=lambda x: (x["key"], x["id"], x["window_start_s"] or 0))
    return {"panes": panes, "late": late}


def test_the_fixtures_cover_what_the_model_promises() -> None:
    cases = DOC["cases"]
    assert DOC["peer"] == "bytewax 0.21.1"
    assert len(cases) >= 30
    assert {c["window"]["type"] for c in cases} == {"tumbling", "hopping", "session"}
    assert all(c["expected"]["late"] for c in cases[:6]) or sum(
        bool(c["expected"]["late"]) for c in cases) >= 20
    out_of_order = sum(
        any(b["t_s"] < a["t_s"] for a, b in zip(c["records"], c["records"][1:], strict=False))
        for c in cases)
    assert out_of_order == len(cases)


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["case"] for c in DOC["cases"]])
def test_same_final_panes_and_late_records_as_bytewax(case: dict[str, Any]) -> None:
    assert tidemark(case) == case["expected"]
