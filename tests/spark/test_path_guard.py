"""A checkpoint written by one execution path is never run by the other.

The store name keeps the two apart for every version saved since the path became
state-shaping; this guards what it cannot see (versions named before that rule, forced
engine runs). Without the guard Spark failed inside the first batch with
STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA, after the engine path had already
written its time-mode file into the native checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.path_guard import PATH_FILE, recorded_path
from jobs.spark.runner import JobRunner, RunOptions

from .parity import definition, spark_panes, spark_run

pytestmark = pytest.mark.spark

SPEC = {"key": "k", "event_time": "et", "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "n", "fn": "count"}], "trigger": {"emit": "final"}}
INSTANTS = [(1_000, [{"k": "a", "et": 1_000}, {"k": "b", "et": 2_000}]),
            (2_000, [{"k": "a", "et": 12_000}])]


def _engine_runner(spark: Any, defn: Any, settings: Settings) -> tuple[JobRunner, JobContext]:
    ctx = JobContext.create(defn, settings, force_engine=True)
    return JobRunner(spark, ctx, RunOptions(until_idle=True, buckets=2)), ctx


def test_the_engine_path_refuses_a_native_checkpoint_and_writes_nothing_into_it(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    defn = definition(tmp_path, SPEC, "k STRING, et BIGINT")
    _, native = spark_run(spark, tmp_path, defn, INSTANTS, settings)
    assert native.plan.native and len(spark_panes(spark, native)) == 2
    root = Path(native.checkpoint)
    assert recorded_path(native.checkpoint) == "native"
    before = sorted(p.name for p in root.iterdir())

    runner, engine = _engine_runner(spark, defn, settings)
    assert engine.checkpoint == native.checkpoint  # one store name, as for a legacy catalog
    with pytest.raises(SparkRuntimeError) as err:
        runner.build()
    text = str(err.value)
    assert text.startswith("store: ") and "holds the state of the native path" in text
    assert "runs on the engine path" in text and "migration" in text
    assert sorted(p.name for p in root.iterdir()) == before  # no time-mode file, nothing else

    # a checkpoint from before the path file is recognised by the native key-layout file
    (root / PATH_FILE).unlink()
    assert recorded_path(native.checkpoint) == "native"
    with pytest.raises(SparkRuntimeError, match="holds the state of the native path"):
        runner.build()

    # the native path itself restarts on it as before: nothing new, the same panes
    again = JobRunner(spark, native, RunOptions(until_idle=True))
    again.run()
    assert len(spark_panes(spark, native)) == 2


def test_the_native_path_refuses_an_engine_checkpoint(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    defn = definition(tmp_path, SPEC, "k STRING, et BIGINT")
    _, engine = spark_run(spark, tmp_path, defn, INSTANTS, settings, force_engine=True)
    assert not engine.plan.native and recorded_path(engine.checkpoint) == "engine"
    native = JobContext.create(defn, settings)
    with pytest.raises(SparkRuntimeError, match="holds the state of the engine path"):
        JobRunner(spark, native, RunOptions(until_idle=True)).build()
    (Path(engine.checkpoint) / PATH_FILE).unlink()  # older checkpoint: its time-mode file says
    with pytest.raises(SparkRuntimeError, match="holds the state of the engine path"):
        JobRunner(spark, native, RunOptions(until_idle=True)).build()
