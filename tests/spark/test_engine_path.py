"""The engine path on real Spark: sessions with early/late triggers in retracting mode, parity
with replay for the same arrival instants, the late sink, and state inspection at a snapshot.
Expected behaviour is replay's (itself checked by hand-written transcripts); the one documented
difference is the ``watermark`` field of panes fired by a count trigger during ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import read_jsonl_dir
from .parity import canon, definition, replay_output, spark_panes, spark_run

pytestmark = pytest.mark.spark


def test_sessions_retracting_equal_replay_and_state_is_inspectable(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    defn = definition(tmp_path, {
        "key": "team", "event_time": "et", "window": {"type": "session", "gap": "10s"},
        "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True,
                    "late": {"count": 1}},
        "allowed_lateness": "20s", "accumulation": "retracting",
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
    }, "team STRING, score INT, et BIGINT")
    instants = [
        (1000, [{"team": "a", "score": 1, "et": 1000}, {"team": "b", "score": 2, "et": 2000}]),
        (2000, [{"team": "a", "score": 5, "et": 12000}, {"team": "a", "score": 3, "et": 5000}]),
        (3000, [{"team": "a", "score": 7, "et": 40000}]),
        # a@14000 extends a's closed-but-not-expired session (late, accepted, retraction);
        # b@3000: b's session [2000, 12000) expired at wm 40000 >= 12000 + 20000 -> dropped
        (4000, [{"team": "a", "score": 1, "et": 14000}, {"team": "b", "score": 1, "et": 3000}]),
        (5000, [{"team": "a", "score": 1, "et": 90000}]),
    ]
    runner, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    assert not ctx.plan.native
    expected = replay_output(defn, instants)
    got = spark_panes(spark, ctx)
    assert any(p["retraction"] for p in got)
    assert canon(got, ("watermark",)) == canon(expected, ("watermark",))
    on_time = [p for p in got if p["timing"] == "ON_TIME"]
    assert canon(on_time) == canon([p for p in expected if p.get("timing") == "ON_TIME"])

    late = read_jsonl_dir(Path(ctx.late_path))
    assert [(x["key"], x["event_time"], x["reason"]) for x in late] == [('"b"', 3000, "expired")]
    assert sum(r.late_dropped for r in runner.reports) == 1
    assert sum(r.late_accepted for r in runner.reports) >= 1

    from jobs.spark.inspect import open_windows

    batch, windows = open_windows(spark, ctx)
    # at the end: a's session [40000, 50000) closed (wm 90000) but within lateness? 50000+20000
    # <= 90000 -> expired; only a@90000's session is open
    assert [(w["key"], w["window_start"], w["window_end"]) for w in windows] == [
        ("a", 90000, 100000)]
    _, earlier = open_windows(spark, ctx, batch_id=1)
    assert {(w["key"], w["window_start"]) for w in earlier} == {("a", 1000), ("b", 2000)}


def test_spark_analyzer_rejects_with_field_name(spark: Any, tmp_path: Path,
                                                settings: Settings) -> None:
    defn = load_definition({
        "name": "bad", "source": {"kind": "files", "path": str(tmp_path / "in"),
                                  "format": "json", "schema": "team STRING, note STRING, et TIMESTAMP"},
        "key": "team", "event_time": "et", "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "s", "fn": "sum", "of": "note"}],
    })
    (tmp_path / "in").mkdir()
    runner = JobRunner(spark, JobContext.create(defn, settings), RunOptions(until_idle=True))
    with pytest.raises(SparkRuntimeError) as err:
        runner.build()
    assert err.value.field == "aggregations[1].of"
    assert "numeric" in str(err.value)
