"""The native path writes its panes with Spark's file sink: the ``batch_id=N`` layout, pane
counts in the reports, orphans of a killed attempt never read, and a checkpoint keeping the
writer it started with."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark.checkpoint import write_marker
from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.pane_files import SINK_FILE, SINK_LOG, batch_of, committed_files, pane_files
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import land

pytestmark = pytest.mark.spark


def _defn(tmp: Path, name: str) -> Any:
    return load_definition({
        "name": name,
        "source": {"kind": "files", "path": str(tmp / "in"), "format": "json",
                   "schema": "team STRING, score INT, et BIGINT"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"}],
    })


def _instant(i: int) -> list[dict[str, Any] | str]:
    """File i: three keys in window [10i s, 10i+10 s), closing window i-1."""
    return [{"team": t, "score": i + 1, "et": i * 10_000 + 1_000 * j}
            for j, t in enumerate(("a", "b", "c"))]


def _rows(panes: Path) -> list[dict[str, Any]]:
    out = []
    for f in pane_files(panes):
        for r in pq.read_table(f).to_pylist():
            r["batch_id"] = batch_of(f)
            out.append(r)
    return out


def test_file_sink_layout_and_pane_counts(spark: Any, tmp_path: Path, settings: Settings) -> None:
    land(tmp_path / "in", [_instant(i) for i in range(4)])
    ctx = JobContext.create(_defn(tmp_path, "sinky"), settings)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert runner.run() == "idle"
    assert runner.gate_kind == "jvm" and runner.pane_sink == "file"
    panes = Path(ctx.panes_path)
    assert (panes / SINK_LOG).is_dir()
    rows = _rows(panes)
    # windows 0, 1, 2 closed (window 3 waits for a later watermark), three keys each
    assert sorted((r["key"], r["window_start"]) for r in rows) == sorted(
        (f'"{t}"', w * 10_000) for w in range(3) for t in "abc")
    assert {r["values"] for r in rows if r["window_start"] == 10_000} == {'{"total":2}'}
    # Spark reads the same panes, batch_id from the directory
    seen = sorted((r["key"], r["window_start"], r["batch_id"])
                  for r in spark.read.parquet(ctx.panes_path).collect())
    assert seen == sorted((r["key"], r["window_start"], r["batch_id"]) for r in rows)
    # every pane sits in the batch that emitted it, and the reports count them per batch
    per_batch: dict[int, int] = {}
    for r in rows:
        per_batch[r["batch_id"]] = per_batch.get(r["batch_id"], 0) + 1
    reported = {r.batch_id: r.panes for r in runner.reports}
    assert {b: n for b, n in reported.items() if n} == per_batch
    assert sum(per_batch.values()) == 9


def test_orphans_of_a_killed_attempt_are_never_read(spark: Any, tmp_path: Path,
                                                    settings: Settings) -> None:
    land(tmp_path / "in", [_instant(i) for i in range(3)])
    ctx = JobContext.create(_defn(tmp_path, "orphans"), settings)
    assert JobRunner(spark, ctx, RunOptions(until_idle=True)).run() == "idle"
    panes = Path(ctx.panes_path)
    before = sorted((r["key"], r["window_start"]) for r in _rows(panes))
    assert len(before) == 6
    # what a driver killed inside a batch's write leaves behind: a second copy of its file,
    # written but never listed in the sink's log
    committed = sorted(committed_files(panes) or [])
    assert len(committed) >= 2
    victim = committed[0]
    orphan = victim.with_name("part-00000-orphan.c000.snappy.parquet")
    shutil.copy(victim, orphan)
    assert _rows(panes) and sorted((r["key"], r["window_start"]) for r in _rows(panes)) == before
    assert spark.read.parquet(ctx.panes_path).count() == 6  # Spark ignores it too

    land(tmp_path / "in", [_instant(3)], start=3)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert runner.run() == "idle"
    assert runner.pane_sink == "file"
    assert not orphan.exists()  # removed before the query restarted
    after = sorted((r["key"], r["window_start"]) for r in _rows(panes))
    assert after == sorted(before + [(f'"{t}"', 20_000) for t in "abc"])
    assert len(after) == len(set(after))


def test_a_foreach_batch_checkpoint_keeps_its_writer(spark: Any, tmp_path: Path,
                                                     settings: Settings) -> None:
    land(tmp_path / "in", [_instant(i) for i in range(3)])
    ctx = JobContext.create(_defn(tmp_path, "oldstyle"), settings)
    write_marker(Path(ctx.checkpoint), SINK_FILE, {"panes": "batch"})
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
    assert runner.run() == "idle"
    assert runner.gate_kind == "jvm" and runner.pane_sink == "batch"
    panes = Path(ctx.panes_path)
    assert not (panes / SINK_LOG).exists()
    rows = _rows(panes)
    assert len(rows) == 6
    assert sum(r.panes for r in runner.reports) == 6


def test_file_sink_checkpoint_without_jvm_functions_is_refused(
    spark: Any, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    land(tmp_path / "in", [_instant(0)])
    ctx = JobContext.create(_defn(tmp_path, "nojvm"), settings)
    write_marker(Path(ctx.checkpoint), SINK_FILE, {"panes": "file"})
    monkeypatch.setenv("TIDEMARK_GATE", "python")
    with pytest.raises(SparkRuntimeError) as err:
        JobRunner(spark, ctx, RunOptions(until_idle=True)).run()
    assert err.value.field == "sink.kind"
    assert "file sink" in str(err.value)
