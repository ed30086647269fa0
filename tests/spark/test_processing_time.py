"""The clock on Spark: definitions that move with processing time alone (the processing clock,
idle advance, ``early {after|every}``, ``late {after}``) run the stateful operator in Spark's
ProcessingTime mode, so a window closes when the wall clock passes its end even if no record
ever arrives again. Replay parity over arrival instants is in ``test_transcripts_spark.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jobs.config import Settings
from jobs.definition import load_definition
from jobs.definition.execution import needs_clock
from jobs.engine import Engine, RecordBatch
from jobs.spark.checkpoint import read_batch_info
from jobs.spark.context import JobContext
from jobs.spark.engine_path.time_mode import TIME_FILE, time_mode
from jobs.spark.inspect import open_windows
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import land, run_until_panes
from .parity import canon, replay_output, spark_panes, spark_run


def _defn(tmp: Path, **over: Any) -> Any:
    spec: dict[str, Any] = {
        "name": "clocked",
        "source": {"kind": "files", "path": str(tmp / "in"), "format": "json",
                   "schema": "k STRING, et BIGINT, v BIGINT"},
        "key": "k", "event_time": "et",
        "window": {"type": "tumbling", "size": "1s"},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "v"}],
    }
    spec.update(over)
    return load_definition(spec)


def test_time_mode_follows_the_definition_and_is_fixed_per_checkpoint(tmp_path: Path) -> None:
    final = _defn(tmp_path)
    early_after = _defn(tmp_path, trigger={"emit": "custom", "early": {"after": "5s"}})
    late_after = _defn(tmp_path, allowed_lateness="10s",
                       trigger={"emit": "custom", "late": {"after": "2s"}})
    early_count = _defn(tmp_path, trigger={"emit": "custom", "early": {"count": 3}})
    clock = _defn(tmp_path, event_time="processing")
    idle = _defn(tmp_path, watermark={"delay": "1s", "idle_advance": True})
    assert [needs_clock(d) for d in (final, early_after, late_after, early_count,
                                               clock, idle)] == [
        False, True, True, False, True, True]

    new = tmp_path / "new"
    assert time_mode(early_after, str(new)) == "ProcessingTime"
    assert json.loads((new / TIME_FILE).read_text())["time_mode"] == "ProcessingTime"
    assert time_mode(early_after, str(new)) == "ProcessingTime"  # read back
    assert time_mode(final, str(tmp_path / "plain")) == "EventTime"

    # a checkpoint that ran before the file existed was started in EventTime mode: Spark would
    # refuse another mode, so processing-time triggers keep firing when the bucket is called
    old = tmp_path / "old"
    (old / "offsets").mkdir(parents=True)
    (old / "offsets" / "0").write_text("v1\n{}\n")
    assert time_mode(early_after, str(old)) == "EventTime"
    assert json.loads((old / TIME_FILE).read_text())["time_mode"] == "EventTime"
    # a version that adds idle advance gets a new store since the clock is state-shaping; on
    # a store named before that rule it restarts in place, and the checkpoint's mode stays
    assert time_mode(idle, str(old)) == "EventTime"
    assert time_mode(idle, str(tmp_path / "fresh")) == "ProcessingTime"
    # and a ProcessingTime checkpoint stays so for a version without any clock part
    assert time_mode(final, str(new)) == "ProcessingTime"
    assert time_mode(clock, str(tmp_path / "clock")) == "ProcessingTime"


@pytest.mark.spark
@pytest.mark.heavy  # wall-clock time: waits for the clock to pass a window's end
def test_processing_clock_closes_windows_when_no_record_arrives(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    """One file, then nothing: each key's 1-second window (at the batch's arrival time) must
    still be emitted, ON_TIME, by a later micro-batch that read no input."""
    defn = _defn(tmp_path, event_time="processing",
                 source={"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                         "schema": "k STRING, v BIGINT"})
    land(tmp_path / "in", [[{"k": "a", "v": 1}, {"k": "a", "v": 2}, {"k": "b", "v": 5},
                            "not json", {"v": 7}]])
    ctx = JobContext.create(defn, settings)
    assert not ctx.plan.native
    runner = JobRunner(spark, ctx, RunOptions(trigger_interval="300 milliseconds",
                                              poll_seconds=0.2))
    assert run_until_panes(runner, 2, limit=180, every=0.3) == "stopped"
    rows = [r.asDict() for r in spark.read.parquet(ctx.panes_path).collect()]
    panes = {json.loads(r["key"]): r for r in rows}
    assert sorted(panes) == ["a", "b"], rows
    assert json.loads(panes["a"]["values"]) == {"n": 2, "total": 3}
    assert json.loads(panes["b"]["values"]) == {"n": 1, "total": 5}
    arrival = read_batch_info(ctx.checkpoint, 0).timestamp_ms  # the file's batch
    for r in rows:
        assert r["timing"] == "ON_TIME" and not r["retraction"]
        assert r["window_start"] <= arrival < r["window_end"] == r["window_start"] + 1000
        assert r["emitted_at"] >= r["window_end"]  # the clock passed the end ...
        assert r["batch_id"] > 0  # ... and a batch without records emitted it
    assert sum(rep.input_rows for rep in runner.reports) == 5
    assert sum(rep.dead_letters for rep in runner.reports) == 2  # unparsable, key missing


@pytest.mark.spark
def test_early_after_until_idle_ends_and_state_reads_back(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    """``--until-idle`` ends by itself in the ProcessingTime mode (Spark alone would run no-data
    batches forever); the EARLY panes fired by the clock equal replay's, and ``tidemark state``
    reads the open windows of a ProcessingTime checkpoint."""
    defn = _defn(tmp_path, window={"type": "tumbling", "size": "10s"},
                 trigger={"emit": "custom", "early": {"after": "2s"}, "on_time": True},
                 source={"kind": "files", "path": str(tmp_path / "in"), "format": "json",
                         "schema": "k STRING, et BIGINT, v BIGINT, arrival BIGINT"})
    instants = [(100_000, [{"k": "a", "et": 1000, "v": 1}, {"k": "b", "et": 2000, "v": 2}]),
                (103_000, [{"k": "a", "et": 3000, "v": 4}]),
                (106_000, [{"k": "b", "et": 12000, "v": 8}])]
    expected = replay_output(defn, instants)
    runner, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    assert ctx.plan.path == "engine"
    assert runner.time_mode == "ProcessingTime"
    got = spark_panes(spark, ctx)
    assert any(p["timing"] == "EARLY" for p in expected)
    assert canon(got, ("watermark",)) == canon(expected, ("watermark",))

    eng = Engine(defn)
    for pt, recs in instants:
        eng.ingest(RecordBatch(keys=[r["k"] for r in recs],
                               event_times=np.array([r["et"] for r in recs], dtype=np.int64),
                               columns={"total": [r["v"] for r in recs]}, records=recs,
                               processing_time=pt))
    _, windows = open_windows(spark, ctx)
    assert windows, "windows are still open"
    assert sorted((w["key"], w["window_start"], w["elements"]) for w in windows) == sorted(
        (w["key"], w["window_start"], w["elements"]) for w in eng.open_windows())
