"""Switching jobs on the Windows page shows the new job's own store, keys and value: no choice
made for one job stays selected (and shown) under another."""

from __future__ import annotations

from pathlib import Path

from jobs.catalog import Catalog, PaneRecord
from tests.ui.helpers import T0, app_as, landing, team_scores


def _pane(key: str, value: int) -> PaneRecord:
    return PaneRecord.from_json({
        "key": key, "window_start": T0, "window_end": T0 + 60_000, "is_last": False,
        "watermark": T0, "timing": "ON_TIME", "pane_index": 0, "is_first": True,
        "retraction": False, "values": {"total": value, "n": 1}, "emitted_at": T0 + 1000})


def test_switching_jobs_shows_the_new_jobs_store_and_keys(
        cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    src = landing(tmp_path / "l", [])
    first = cat.create_job(team_scores(src, name="alpha"), "editor")
    second = cat.create_job(team_scores(src, name="beta", size="2m"), "editor")
    assert first.store_name != second.store_name
    cat.write_panes(first.store_name, 0, [_pane("a1", 1), _pane("a2", 2)])
    cat.write_panes(second.store_name, 0, [_pane("b1", 3)])

    at = app_as("viewer", "views/windows.py")
    assert not at.exception, at.exception
    job = next(s for s in at.selectbox if s.label == "Job")
    assert job.value == "alpha"
    keys = next(m for m in at.multiselect if m.label == "Keys")
    assert keys.value == ['"a1"', '"a2"']
    keys.unselect('"a2"').run()

    next(s for s in at.selectbox if s.label == "Job").select("beta").run()
    assert not at.exception, at.exception
    assert next(s for s in at.selectbox if s.label == "State store").value == second.store_name
    assert next(m for m in at.multiselect if m.label == "Keys").value == ['"b1"']

    next(s for s in at.selectbox if s.label == "Job").select("alpha").run()
    assert next(s for s in at.selectbox if s.label == "State store").value == first.store_name
    # alpha's own keys again (Streamlit forgets the state of a widget a run did not show)
    assert next(m for m in at.multiselect if m.label == "Keys").value == ['"a1"', '"a2"']
