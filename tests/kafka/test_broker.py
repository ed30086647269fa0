"""The broker fixture is a real Kafka: records produced come back in partition/offset order."""

from __future__ import annotations

from jobs.kafka.broker import KafkaBroker
from tests.kafka.conftest import consume_all, create_topic, produce


def test_produce_and_consume_round_trip(broker: KafkaBroker) -> None:
    topic = create_topic(broker, partitions=2)
    produce(broker, topic, [(0, b"a", b"1"), (1, b"b", b"2"), (0, None, b"3")])
    got = [(p, o, k, v) for p, o, k, v, _ in consume_all(broker, topic)]
    assert got == [(0, 0, b"a", b"1"), (0, 1, None, b"3"), (1, 0, b"b", b"2")]
