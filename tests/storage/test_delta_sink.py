"""The ``delta`` sink: panes in a Delta table on HDFS, each batch written once (an application
transaction per commit: app id = store, version = batch id), and the current-result view."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.spark.context import JobContext
from jobs.spark.delta_sink import (
    committed_version,
    current_panes,
    read_table,
    table_uri,
    write_delta,
)
from jobs.spark.runner import JobRunner, RunOptions
from jobs.spark.sinks import PANE_COLUMNS, pane_json
from jobs.storage.minihdfs import MiniHdfs

from .hdfsjobs import HdfsRun
from .jobfiles import FILES, FINAL_PANES, T0, final_panes, land, scores

pytestmark = pytest.mark.spark


def test_panes_land_in_a_delta_table_once_per_batch(
        spark: Any, hdfs: MiniHdfs, hdfs_delta_run: HdfsRun) -> None:
    """The job's run is the suite's shared native-path Delta run on HDFS (the UI test on HDFS
    reads it too), so the re-written batches go to a second table under another root."""
    run = hdfs_delta_run
    ctx, runner = run.ctx, run.runner
    assert run.exit_reason == "idle" and ctx.panes_path.startswith(f"{hdfs.url}/")

    table = read_table(ctx.panes_path)
    assert table.column_names == ["job", "version", "store", *PANE_COLUMNS, "batch_id"]
    rows = table.to_pylist()
    assert final_panes([pane_json(r) for r in rows]) == FINAL_PANES
    assert sum(r.panes for r in runner.reports) == len(rows) == 3
    batches = sorted({r["batch_id"] for r in rows})
    from deltalake import DeltaTable

    history = DeltaTable(table_uri(ctx.panes_path)).history()
    # one commit per batch with panes, none for the batches without
    assert len([h for h in history if h["operation"] == "WRITE"]) == len(batches)
    assert committed_version(table_uri(ctx.panes_path), ctx.store) == batches[-1]

    # the same batches written by the same sink function to a second table of the store ...
    copy = replace(ctx, output_root=f"{hdfs.url}/delta-rewrite/{ctx.store}")
    frame = spark.createDataFrame(table)
    for b in batches:
        write_delta(copy, frame.where(f"batch_id = {b}").drop("batch_id"), b)
    assert read_table(copy.panes_path).num_rows == len(rows)
    assert committed_version(table_uri(copy.panes_path), ctx.store) == batches[-1]
    # ... then a batch written again (what a re-run after a crash does) adds nothing
    last = batches[-1]
    again = frame.where(f"batch_id = {last}").drop("batch_id")
    n = again.count()
    assert n > 0 and write_delta(copy, again, last) == n
    assert read_table(copy.panes_path).num_rows == len(rows)
    # while a new batch id is appended (the idempotence is per batch, not per content)
    assert write_delta(copy, again, last + 1) == n
    assert read_table(copy.panes_path).num_rows == len(rows) + n
    assert committed_version(table_uri(copy.panes_path), ctx.store) == last + 1


def test_the_current_result_view_gives_each_windows_latest_pane(
        spark: Any, tmp_path: Path) -> None:
    """Retracting mode with an early pane per record: a window's panes are retracted and replaced;
    the view keeps one row per window, its latest values. (A local table: the UI's Windows
    page reads it too, from the Delta log, without Spark.)"""
    land(tmp_path / "in", FILES)
    defn = scores(tmp_path / "in", sink={"kind": "delta"}, accumulation="retracting",
                  trigger={"emit": "custom", "early": {"count": 1}, "on_time": True})
    settings = Settings.from_env({"TIDEMARK_HOME": str(tmp_path / "home")})
    ctx = JobContext.create(defn, settings, force_engine=True)
    assert JobRunner(spark, ctx, RunOptions(until_idle=True, buckets=2)).run() == "idle"

    rows = read_table(ctx.panes_path).to_pylist()
    assert any(r["retraction"] for r in rows)
    latest: dict[tuple[Any, int, int], dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: (r["pane_index"], r["batch_id"], r["retraction"])):
        latest[(r["key"], r["window_start"], r["window_end"])] = r
    expected = {k: r["values"] for k, r in latest.items() if not r["retraction"]}

    view = [r.asDict() for r in current_panes(spark, ctx).collect()]
    got = {(r["key"], r["window_start"], r["window_end"]): r["values"] for r in view}
    assert len(view) == len(got) == len(expected) < len(rows)
    assert got == expected
    closed = {(json.loads(r["key"]), r["window_start"] - T0): json.loads(r["values"])
              for r in view if r["timing"] == "ON_TIME"}
    assert closed == FINAL_PANES

    # the UI reads the same panes from the table's log (no Spark)
    from ui.results import delta_panes

    ui_rows = delta_panes(defn, settings.results_root, store=ctx.store, limit=10_000)
    assert sorted(json.dumps(r.pane, sort_keys=True) for r in ui_rows) == sorted(
        json.dumps({**pane_json(r), "type": "pane"}, sort_keys=True) for r in rows)
