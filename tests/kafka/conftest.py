"""A real Apache Kafka broker (KRaft, 127.0.0.1, a free port) for the Kafka tests.

One broker for the test session (started only when a test asks for it): every test creates
its own topics, so tests never see each other's records. The Spark session depends on it, so
Spark's cached producers and consumers close before the broker stops.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.kafka.broker import KafkaBroker


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(Path(tmp_path_factory.mktemp("kafka"))) as b:
        yield b


def create_topic(broker: KafkaBroker, partitions: int = 1, **config: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"t-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fut = admin.create_topics([NewTopic(name, partitions, 1, config=config)])[name]
    fut.result(30)
    return name


def produce(broker: KafkaBroker, topic: str,
            records: list[tuple[int, bytes | None, bytes | None]]) -> None:
    """(partition, key, value) triples, in order, acknowledged by the broker."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                  "linger.ms": 5})
    for part, key, value in records:
        p.produce(topic, value=value, key=key, partition=part)
    assert p.flush(30) == 0


def produce_json(broker: KafkaBroker, topic: str, partition: int, rows: list[dict]) -> None:
    produce(broker, topic, [(partition, None, json.dumps(r).encode()) for r in rows])


def consume_all(broker: KafkaBroker, topic: str, timeout: float = 30.0
                ) -> list[tuple[int, int, bytes, bytes, list[tuple[str, bytes]]]]:
    """Every message of ``topic`` as (partition, offset, key, value, headers)."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": uuid.uuid4().hex,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        parts = sorted(md.partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out = []
        pos = {p: 0 for p in parts}
        deadline = time.monotonic() + timeout
        while any(pos[p] < ends[p] for p in parts) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value(), list(m.headers() or [])))
            pos[m.partition()] = m.offset() + 1
        return sorted(out, key=lambda r: (r[0], r[1]))
    finally:
        c.close()


@pytest.fixture(scope="session")
def spark(broker: KafkaBroker) -> Iterator[Any]:
    """One local[2] session (the Kafka connector's jars are on ``spark.jars``)."""
    import os

    from jobs.config import Settings
    from jobs.spark.session import build_session

    settings = Settings.from_env({**os.environ, "TIDEMARK_SPARK_MASTER": "local[2]"})
    session = build_session(settings, app_name="tidemark-kafka-tests", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture()
def settings(tmp_path: Path) -> Any:
    from jobs.config import Settings

    return Settings.from_env({"TIDEMARK_HOME": str(tmp_path / "home"),
                              "TIDEMARK_SPARK_MASTER": "local[2]"})


def kafka_definition(broker: KafkaBroker, topic: str, **spec: Any) -> Any:
    """A team-scores definition reading ``topic`` (1-minute windows, 30 s watermark delay)."""
    from jobs.definition import load_definition

    full: dict[str, Any] = {
        "name": "kscores",
        "source": {"kind": "kafka", "format": "json", "schema": "team STRING, score INT, et BIGINT",
                   "options": {"kafka.bootstrap.servers": broker.bootstrap,
                               "subscribe": topic}},
        "key": "team",
        "event_time": "et",
        "watermark": {"delay": "30s"},
        "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"},
                         {"name": "total", "fn": "sum", "of": "score"},
                         {"name": "last_offset", "fn": "max", "of": "kafka_offset"}],
    }
    full.update(spec)
    return load_definition(full)


def read_jsonl_dir(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted(path.glob("batch_id=*/part-*.jsonl")):
        out.extend(json.loads(line) for line in f.read_text().splitlines() if line.strip())
    return out
