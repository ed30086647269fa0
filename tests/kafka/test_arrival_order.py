"""A Kafka micro-batch reaches the engine in partition-then-offset order, whatever order Spark
plans and shuffles its records in, so the job equals replay in its micro-batch mode over the
topic's records in that order (docs/semantics.md, "Spark").

One micro-batch over an 8-partition topic (Spark plans the offset ranges of more than four
partitions in hash order, not partition order): key ``a`` has one record a partition, its event
times rising with the partition number, each in a window of its own. Under a per-key watermark
any other order makes some of them late, so a job that applied them in planned or shuffled
order would report late records and miss panes.
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
PARTITIONS = 8


def _late(out: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((json.dumps(o["key"]), o["event_time"]) for o in out if o["type"] == "late")


def _replay(defn: Any, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(replay_lines(defn, [{"$processing_time": T0}, *records], eof_flush=False,
                             arrival=Arrival("batch")))


@pytest.mark.timeout(300)
def test_a_batch_reaches_the_engine_in_partition_then_offset_order(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    topic = create_topic(broker, partitions=PARTITIONS)
    parts = [[{"team": "a", "score": p + 1, "et": T0 + 10_000 * p + 5_000},
              *[{"team": f"c{i}", "score": i, "et": T0 + 10_000 * p + 1_000 * i}
                for i in range(5)]] for p in range(PARTITIONS)]
    for p, rows in enumerate(parts):
        produce_json(broker, topic, p, rows)
    in_order = [r for rows in parts for r in rows]
    defn = kafka_definition(
        broker, topic,
        watermark={"strategy": "bounded", "delay": "0s", "scope": "key"},
        lateness_basis="event",
        window={"type": "tumbling", "size": "10s"},
        aggregations=[{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}],
    )

    expected = _replay(defn, in_order)  # partition, then offset
    # in that order nothing is late; the partitions in another order make some of a's late
    assert _late(expected) == []
    assert _late(_replay(defn, [r for rows in parts[::-1] for r in rows])) != []

    ctx = JobContext.create(defn, settings)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True, buckets=2))
    runner.run()
    assert not ctx.plan.native
    assert runner.reports[0].input_rows == len(in_order)  # one micro-batch
    late = read_jsonl_dir(Path(ctx.late_path))
    assert sorted((x["key"], x["event_time"]) for x in late) == _late(expected)
    assert canon(spark_panes(spark, ctx)) == canon(expected)
