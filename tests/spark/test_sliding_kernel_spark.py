"""KIP-450 sliding windows through Spark's engine path, where ``make_engine`` picks the
compiled sliding engine: every pane (values, bounds, first/last event times, ``emitted_at``,
watermark) equals replay's in its micro-batch mode on the general engine, with out-of-order
records, records accepted late and records dropped, over several micro-batches (the state
blob is written and read between them)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.engine import make_engine
from jobs.engine.kernels import SlidingKernelEngine
from jobs.spark.engine_path.config import engine_mode

from .parity import canon, definition, replay_output, spark_panes, spark_run

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

SPEC = {
    "key": "k", "event_time": "ts", "window": {"type": "sliding", "size": "10s"},
    "watermark": {"strategy": "bounded", "delay": "2s"}, "allowed_lateness": "5s",
    "trigger": {"emit": "final"},
    "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "v"},
                     {"name": "first_v", "fn": "first", "of": "v"}],
}
T0 = 1_767_225_600_000


def _rec(k: str, s: float, v: int) -> dict[str, Any]:
    return {"k": k, "ts": T0 + int(s * 1000), "v": v}


INSTANTS = [
    (1_000, [_rec("a", 1, 1), _rec("a", 4, 2), _rec("b", 3, 5)]),
    (2_000, [_rec("a", 12, 3), _rec("a", 2, 4), _rec("b", 15, 6)]),   # out of order
    (3_000, [_rec("a", 30, 7), _rec("a", 9, 8), _rec("b", 16, 9)]),   # 9 s: accepted late
    (4_000, [_rec("a", 11, 10), _rec("b", 45, 11), _rec("a", 44, 12)]),  # 11 s: dropped
    (5_000, [_rec("a", 70, 13), _rec("b", 70, 14)]),
]


def test_sliding_panes_through_spark_equal_replay(spark: Any, tmp_path: Path,
                                                  settings: Settings) -> None:
    defn = definition(tmp_path, SPEC, "k STRING, ts TIMESTAMP, v BIGINT")
    assert isinstance(make_engine(defn, None, engine_mode(defn)), SlidingKernelEngine)
    instants = [(t, [{**r, "ts": _iso(r["ts"])} for r in rs]) for t, rs in INSTANTS]
    expected = replay_output(defn, instants)
    assert any(p.get("type") == "late" for p in expected)  # the input does reach lateness
    _, ctx = spark_run(spark, tmp_path, defn, instants, settings)
    assert not ctx.plan.native
    got = spark_panes(spark, ctx)
    assert canon(got) == canon(expected)
    assert len(canon(got)) >= 10


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat().replace("+00:00", "Z")
