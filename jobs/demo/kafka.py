"""The demo's Kafka side: its broker, the topics, the producer the generator writes one stream
to, and reading the panes back for ``make demo-check``.

One example job (``page_views``) reads its events from the topic ``page_views`` and sends its
panes to ``page_views_panes``. The broker is the tests' single-node KRaft broker
(:class:`jobs.kafka.broker.KafkaBroker`) on 127.0.0.1 and a free port, its data under
``<home>/kafka`` so a second ``make demo`` keeps topics and offsets. The definitions name the
broker as ``${env:TIDEMARK_DEMO_KAFKA}``, set by the demo for the jobs and the UI.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobs.kafka.broker import KafkaBroker

BOOTSTRAP_ENV = "TIDEMARK_DEMO_KAFKA"
STREAM = "page_views"
"""The generator's stream that goes to Kafka (the topic has the same name)."""
TOPICS = {"page_views": 2, "page_views_panes": 1}
"""Topic -> partitions. Events are keyed by page, so a page's events stay in one partition."""
PANES_TOPIC = "page_views_panes"


def start_broker(home: Path) -> KafkaBroker:
    """The demo's broker, started, with its topics created (kept from an earlier start)."""
    broker = KafkaBroker(home / "kafka").start()
    try:
        ensure_topics(broker.bootstrap)
    except BaseException:
        broker.stop()
        raise
    return broker


def ensure_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=30).topics)
    new = [NewTopic(t, n, 1) for t, n in TOPICS.items() if t not in existing]
    for fut in (admin.create_topics(new).values() if new else []):
        fut.result(30)


class TopicWriter:
    """The generator's publish function for ``page_views``: one message per line, keyed by the
    event's page (a malformed line has no page and no key), acknowledged before it returns.
    ``close`` ends the client before the broker stops (else it retries the connection, loudly,
    until the process exits)."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        self.bootstrap = bootstrap
        self._p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                            "linger.ms": 20})

    def __call__(self, lines: list[str]) -> None:
        for line in lines:
            try:
                page = json.loads(line).get("page")
            except (ValueError, AttributeError):
                page = None
            self._p.produce(STREAM, value=line.encode(),
                            key=None if page is None else page.encode())
        if self._p.flush(30) != 0:
            raise OSError(f"the demo broker at {self.bootstrap} did not acknowledge the events")

    def close(self) -> None:
        self._p.flush(10)
        self._p.close()


def producer(bootstrap: str) -> Callable[[list[str]], None]:
    return TopicWriter(bootstrap)


def read_panes(bootstrap: str, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    """Every pane message of ``page_views_panes`` so far, as Parquet-shaped rows, each checked
    against the sink's contract (its key and headers follow from its value)."""
    from confluent_kafka import Consumer, TopicPartition

    from jobs.kafka.contract import message_headers, message_key, row_of_value

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-check-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    rows: list[dict[str, Any]] = []
    try:
        tp = TopicPartition(PANES_TOPIC, 0)
        low, high = c.get_watermark_offsets(tp, timeout=timeout_s)
        c.assign([TopicPartition(PANES_TOPIC, 0, low)])
        pos, deadline = low, time.monotonic() + timeout_s
        while pos < high and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            offset, value = int(m.offset() or 0), m.value()
            pos = offset + 1
            if value is None:
                raise ValueError(f"{PANES_TOPIC} offset {offset}: a pane message without value")
            row = row_of_value(value)
            if m.key() != message_key(row) or list(m.headers() or []) != message_headers(row):
                raise ValueError(f"{PANES_TOPIC} offset {offset}: key or headers do not "
                                 "follow from the value (docs/kafka.md, the sink's contract)")
            rows.append(row)
    finally:
        c.close()
    return rows
