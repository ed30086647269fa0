"""A Kafka micro-batch reaches the engine in partition-then-offset order, whatever order the
shuffle delivers its records in, so the job equals replay in its micro-batch mode over the
topic's records in that order (docs/semantics.md, "Spark").

One micro-batch over a 2-partition topic: under a per-key watermark the order of key ``a``'s
records decides which of them are late (partition 0 holds a@30 s then a@5 s, partition 1 holds
a@20 s), so a job that applied them in another order would report other late records and
other panes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.engine.arrival import Arrival
from jobs.kafka.broker import KafkaBroker
from jobs.replay import replay_lines
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions
from tests.kafka.conftest import create_topic, kafka_definition, produce_json, read_jsonl_dir
from tests.kafka.test_source import canon, spark_panes

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _late(out: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((json.dumps(o["key"]), o["event_time"]) for o in out if o["type"] == "late")


def _replay(defn: Any, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(replay_lines(defn, [{"$processing_time": T0}, *records], eof_flush=False,
                             arrival=Arrival("batch")))


@pytest.mark.timeout(300)
def test_a_batch_reaches_the_engine_in_partition_then_offset_order(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    topic = create_topic(broker, partitions=2)
    p0 = [{"team": "a", "score": 1, "et": T0 + 30_000}, {"team": "a", "score": 2, "et": T0 + 5_000}]
    p1 = [{"team": "a", "score": 4, "et": T0 + 20_000}] + [
        {"team": f"c{i % 5}", "score": i, "et": T0 + 1_000 * i} for i in range(60)]
    produce_json(broker, topic, 0, p0)
    produce_json(broker, topic, 1, p1)
    defn = kafka_definition(
        broker, topic,
        watermark={"strategy": "bounded", "delay": "0s", "scope": "key"},
        lateness_basis="event",
        window={"type": "tumbling", "size": "10s"},
        aggregations=[{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}],
    )

    expected = _replay(defn, [*p0, *p1])  # partition, then offset
    # in that order a@30 s sets a's watermark: a@5 s and a@20 s are late; partition 1 first
    # would accept a@20 s, so the order decides the result
    assert ('"a"', T0 + 5_000) in _late(expected) and ('"a"', T0 + 20_000) in _late(expected)
    assert _late(_replay(defn, [*p1, *p0])) != _late(expected)

    ctx = JobContext.create(defn, settings)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True, buckets=2))
    runner.run()
    assert not ctx.plan.native
    assert runner.reports[0].input_rows == len(p0) + len(p1)  # one micro-batch
    late = read_jsonl_dir(Path(ctx.late_path))
    assert sorted((x["key"], x["event_time"]) for x in late) == _late(expected)
    assert canon(spark_panes(spark, ctx)) == canon(expected)
