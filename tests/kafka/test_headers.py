"""Kafka headers in a job's expressions, against a real broker, on both execution paths: the key
and an aggregation read ``kafka_headers['name']``, and the job's panes and dead letters equal
``tidemark replay`` over the topic's sample (``tidemark kafka sample``), which builds the column
in Python by the same rules: the last value of a repeated name, null for a value that is not
UTF-8, for a null value and for an absent name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.engine.arrival import Arrival
from jobs.kafka.admin import preview_lines, sample
from jobs.kafka.broker import KafkaBroker
from jobs.replay import replay_lines
from jobs.spark.gate import KEY_REASON
from tests.kafka.conftest import create_topic, kafka_definition, read_jsonl_dir
from tests.kafka.test_source import canon, run_job, spark_panes

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z

Headers = list[tuple[str, str | bytes | None]] | None
MESSAGES: list[tuple[int, Headers, int]] = [
    # (partition, headers, event time offset in seconds)
    (0, [("tenant", b"a"), ("weight", b"3")], 1),
    (0, [("tenant", b"a"), ("weight", b"1"), ("weight", b"5")], 2),  # the last value counts
    (0, [("tenant", b"b"), ("weight", b"\xff\xfe")], 3),  # not UTF-8: null, not summed
    (0, [("tenant", b"\xc3\x28"), ("weight", b"7")], 4),  # a key that is not UTF-8: dead letter
    (0, None, 5),  # no headers: no tenant, a dead letter
    (1, [("weight", b"2"), ("tenant", b"x"), ("tenant", b"b")], 6),
    (1, [("tenant", b"b"), ("weight", None)], 7),  # a null value
    (1, [("Tenant", b"c"), ("tenant", b"a"), ("weight", b"10")], 70),  # names are exact
    (1, [("tenant", b"a"), ("weight", b"1")], 200),  # closes the first two minutes
]


def _produce(broker: KafkaBroker, topic: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for part, headers, sec in MESSAGES:
        value = json.dumps({"team": "ignored", "score": 1, "et": T0 + sec * 1000}).encode()
        p.produce(topic, value=value, partition=part, headers=headers)
    assert p.flush(30) == 0


@pytest.mark.heavy
@pytest.mark.timeout(600)
@pytest.mark.parametrize("force_engine", [False, True], ids=["native", "engine"])
def test_headers_in_key_and_aggregation_equal_replay_over_the_sample(
        spark: Any, broker: KafkaBroker, settings: Any, force_engine: bool) -> None:
    topic = create_topic(broker, partitions=2)
    _produce(broker, topic)
    defn = kafka_definition(
        broker, topic, key="kafka_headers['tenant']",
        aggregations=[{"name": "n", "fn": "count"},
                      {"name": "w", "fn": "sum", "of": "CAST(kafka_headers['weight'] AS INT)"}])

    lines = preview_lines(sample(dict(defn.source.options), limit=100))
    assert len(lines) == len(MESSAGES)
    expected = list(replay_lines(defn, [{"$processing_time": T0}, *lines], eof_flush=False,
                                 arrival=Arrival("batch")))
    want = {(o["key"], o["window_start"]): o["values"] for o in expected if o["type"] == "pane"}
    assert want == {("a", T0): {"n": 2, "w": 8}, ("b", T0): {"n": 3, "w": 2},
                    ("a", T0 + 60_000): {"n": 1, "w": 10}}

    ctx = run_job(spark, defn, settings, force_engine=force_engine)  # one micro-batch
    assert ctx.plan.native is not force_engine
    assert canon(spark_panes(spark, ctx)) == canon(expected)
    dead = read_jsonl_dir(Path(ctx.dead_letter_path))
    # replay words the reason after the expression, the job as the gate does
    got_dead = sorted((json.loads(d["record"])["kafka_partition"],
                       json.loads(d["record"])["kafka_offset"]) for d in dead)
    want_dead = sorted((o["record"]["kafka_partition"], o["record"]["kafka_offset"])
                       for o in expected if o["type"] == "dead_letter")
    assert got_dead == want_dead == [(0, 3), (0, 4)]
    assert {d["reason"] for d in dead} == {KEY_REASON}
    assert all("kafka_headers" in json.loads(d["record"]) for d in dead)
