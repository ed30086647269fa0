"""Windows, Late data, Recovery snapshots and Migrations: what an operator reads there.

Expected values come from the ``ran_job`` fixture's docstring (two micro-batches written by
hand), not from the pages' own output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pandas as pd
from streamlit.testing.v1 import AppTest

from jobs.catalog import BatchProgress, BatchSnapshot, Catalog, PaneRecord
from tests.ui.helpers import T0, app_as, button, landing, team_scores, texts, widget


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_windows_lists_emitted_panes_and_open_windows(ran_job: str) -> None:
    at = app_as("viewer", "views/windows.py")
    assert not at.exception
    panes = frame_with(at, "batch")
    assert list(panes["timing"]) == ["ON_TIME", "LATE"]
    assert list(panes["v.total"]) == [7, 9] and list(panes["v.n"]) == [2, 3]
    assert list(panes["batch"]) == [0, 1]
    # a's window has fired twice but has no final pane: it is open
    assert "Open windows (1)" in texts(at)
    assert len(at.get("vega_lite_chart")) == 1


def test_windows_empty_state(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    cat.create_job(team_scores(landing(tmp_path / "l", [])), "editor")
    at = app_as("viewer", "views/windows.py")
    assert "No panes emitted yet" in texts(at)


def test_late_data_counts_samples_and_dead_letters(ran_job: str) -> None:
    at = app_as("viewer", "views/late_data.py")
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Late accepted"] == "1" and metrics["Late dropped"] == "1"
    per_window = frame_with(at, "accepted")
    by_key = {r["key"]: (r["accepted"], r["dropped"]) for _, r in per_window.iterrows()}
    assert by_key == {'"a"': (1, 0), '"b"': (0, 1)}
    late = frame_with(at, "reason")
    assert list(late["reason"]) == ["expired"]
    assert '"score": 9' in late["record"].iloc[0]
    dead = next(d.value for d in at.dataframe if list(d.value.columns)[-1] == "record"
                and "key" not in d.value.columns)
    assert list(dead["reason"]) == ["key is null"]
    assert len(at.get("vega_lite_chart")) == 2  # per window, over time


def test_late_data_empty_state(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    cat.create_job(team_scores(landing(tmp_path / "l", [])), "editor")
    at = app_as("viewer", "views/late_data.py")
    assert "No late or malformed records" in texts(at)


def test_snapshots_list_and_detail(ran_job: str) -> None:
    at = app_as("viewer", "views/snapshots.py")
    assert not at.exception
    table = frame_with(at, "batch id")
    assert list(table["batch id"]) == [1, 0]  # newest first
    assert list(table["watermark"]) == ["2026-01-01T00:02:30.000Z", "2026-01-01T00:01:50.000Z"]
    widget(at, "selectbox", "Snapshot").select(0).run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Watermark"] == "2026-01-01T00:01:50.000Z" and metrics["State rows"] == "2"


def test_roll_back_to_an_earlier_store(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    """v2 has a new store (bigger windows) and is active; v1's store has run before, so
    re-activating v1 resumes its checkpoint."""
    src = landing(tmp_path / "landing", [])
    v1 = cat.create_job(team_scores(src), "editor")
    run = cat.start_run("team_scores", 1, v1.store_name, 1, "h", None)
    cat.record_batch(run.id, BatchProgress(0, 1, 1.0, 1, T0, 1, 10),
                     BatchSnapshot(0, v1.created_at, T0, {"o": 0}, 10, "/ckpt/v1"), [])
    cat.end_run(run.id, "stopped", "test")
    cat.save_version("team_scores", team_scores(src, size="2m"), "editor", base_version=1)
    cat.activate("team_scores", 2, "operator", mode="immediate")
    assert cat.job("team_scores").active_version == 2

    viewer = app_as("editor", "views/snapshots.py")
    widget(viewer, "selectbox", "State store").select(v1.store_name).run()
    assert widget(viewer, "checkbox", "I want to roll team_scores back to v1").disabled
    assert button(viewer, "Roll back to this store").disabled

    at = app_as("operator", "views/snapshots.py")
    widget(at, "selectbox", "State store").select(v1.store_name).run()
    assert button(at, "Roll back to this store").disabled
    widget(at, "checkbox", "I want to roll team_scores back to v1").check().run()
    button(at, "Roll back to this store").click().run()
    assert not at.exception
    assert cat.job("team_scores").active_version == 1
    assert cat.audit(job="team_scores", action="rollback")[0].actor == "operator"


def test_migrations_progress(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    src = landing(tmp_path / "landing", [])
    cat.create_job(team_scores(src), "editor")
    cat.save_version("team_scores", team_scores(src, size="2m"), "editor", base_version=1)
    cat.activate("team_scores", 2, "editor")  # new store: plans a migration
    (m,) = cat.migrations("team_scores")
    cat.update_migration(m.id, "replaying", "airflow", replayed_files=3, total_files=12,
                         new_watermark=T0, old_watermark=T0 + 90_000)
    at = app_as("viewer", "views/migrations.py")
    assert not at.exception
    (bar,) = cast(list[Any], at.get("progress"))
    assert bar.value == 25 and "3 of 12 files" in bar.proto.text  # percent
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Catch-up remaining"] == "1m30s"
    assert "Running (1)" in texts(at)


def test_migrations_empty_state(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    cat.create_job(team_scores(landing(tmp_path / "l", [])), "editor")
    at = app_as("viewer", "views/migrations.py")
    assert "No migrations yet" in texts(at)


def test_windows_reads_a_parquet_sink(cat: Catalog, users: dict[str, str], tmp_path: Path) -> None:
    """Panes written the way the Spark job writes them (jobs.spark.schema.PANE_DDL, one
    directory per batch) show up; Spark's `_temporary` leftovers are ignored."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = team_scores(landing(tmp_path / "l", []), sink="parquet")
    spec["sink"]["path"] = str(tmp_path / "results")
    v = cat.create_job(spec, "editor")
    panes_dir = tmp_path / "results" / v.store_name / "panes"
    for batch, (timing, total, n) in enumerate([("ON_TIME", 7, 2), ("LATE", 9, 3)]):
        table = pa.table({
            "job": ["team_scores"], "version": pa.array([1], pa.int32()), "store": [v.store_name],
            "key": ['"a"'], "window_start": [T0], "window_end": [T0 + 60_000],
            "first_event_time": pa.array([None], pa.int64()),
            "last_event_time": pa.array([None], pa.int64()), "timing": [timing],
            "pane_index": pa.array([batch], pa.int32()), "is_first": [batch == 0],
            "is_last": [False], "retraction": [False],
            "values": [f'{{"total": {total}, "n": {n}}}'], "emitted_at": [T0 + (2 + batch) * 60_000],
            "watermark": [T0 + 110_000]})
        (panes_dir / f"batch_id={batch}").mkdir(parents=True)
        pq.write_table(table, panes_dir / f"batch_id={batch}" / "part-0.parquet")
    (panes_dir / "_temporary").mkdir()
    (panes_dir / "_temporary" / "junk").write_text("not parquet")
    at = app_as("viewer", "views/windows.py")
    assert not at.exception, at.exception
    panes = frame_with(at, "batch")
    assert list(panes["key"]) == ['"a"', '"a"']
    assert list(panes["timing"]) == ["ON_TIME", "LATE"] and list(panes["v.total"]) == [7, 9]


def test_retractions_are_told_apart_from_panes(cat: Catalog, users: dict[str, str],
                                               tmp_path: Path) -> None:
    spec = team_scores(landing(tmp_path / "l", [])) | {"accumulation": "retracting"}
    v = cat.create_job(spec, "editor")
    base = {"key": "a", "window_start": T0, "window_end": T0 + 60_000, "is_last": False,
            "watermark": T0}
    cat.write_panes(v.store_name, 0, [PaneRecord.from_json(base | {
        "timing": "EARLY", "pane_index": 0, "is_first": True, "retraction": False,
        "values": {"total": 3, "n": 1}, "emitted_at": T0 + 1000})])
    cat.write_panes(v.store_name, 1, [
        PaneRecord.from_json(base | {"timing": "EARLY", "pane_index": 0, "is_first": True,
                                     "retraction": True, "values": {"total": 3, "n": 1},
                                     "emitted_at": T0 + 2000}),
        PaneRecord.from_json(base | {"timing": "EARLY", "pane_index": 1, "is_first": False,
                                     "retraction": False, "values": {"total": 7, "n": 2},
                                     "emitted_at": T0 + 2000})])
    at = app_as("viewer", "views/windows.py")
    panes = frame_with(at, "batch")
    assert list(panes["kind"]) == ["pane", "retraction", "pane"]
    assert list(panes["v.total"]) == [3, 3, 7]
    # the open window is the newest real pane, not the retraction
    open_w = next(d.value for d in at.dataframe if "batch" not in d.value.columns)
    assert list(open_w["v.total"]) == [7]
