"""The demo's Kafka side against its real broker: the broker starts under the demo's home with
its topics, the generator produces the page_views events into the topic keyed by page (the
malformed ones too), a second start on the same home keeps topics and records, and the
demo-check's read-back of the pane topic accepts messages that follow the sink's contract and
rejects one whose key does not."""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from jobs.demo import kafka as demo_kafka
from jobs.demo.generator import Disorder, Generator
from jobs.kafka.contract import message_headers, message_key, message_value
from jobs.timeutil import ManualClock

T0 = 1_767_225_600_000


def _records(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                  "enable.auto.commit": False})
    try:
        parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out: list[tuple[int, bytes | None, bytes]] = []
        while len(out) < sum(ends.values()):
            m = c.poll(10.0)
            assert m is not None and not m.error(), m and m.error()
            out.append((m.partition(), m.key(), m.value()))
        return out
    finally:
        c.close()


def _pane(store: str, page: str, start: int, views: int) -> dict[str, Any]:
    return {"job": "page_views", "version": 1, "store": store, "key": json.dumps(page),
            "window_start": start, "window_end": start + 300_000, "first_event_time": start,
            "last_event_time": start + 1, "timing": "ON_TIME", "pane_index": 0, "is_first": True,
            "is_last": True, "retraction": False, "values": json.dumps({"views": views}),
            "emitted_at": start + 400_000, "watermark": start + 300_000}


@pytest.mark.heavy
def test_demo_broker_generator_and_pane_read_back(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    broker = demo_kafka.start_broker(tmp_path)
    try:
        gen = Generator(tmp_path / "landing", ManualClock(T0), events_per_tick=200,
                        disorder=Disorder(malformed_share=0.05),
                        publish={"page_views": demo_kafka.producer(broker.bootstrap)})
        gen._rng = random.Random(3)
        files = gen.tick()
        # the other streams still land files; page_views went to its topic
        assert sorted(f.parent.name for f in files) == ["sensor_readings", "team_scores"]
        got = _records(broker.bootstrap, "page_views")
        assert len(got) == 200
        assert {p for p, _, _ in got} == {0, 1}  # keyed by page over both partitions
        def page(value: bytes) -> str | None:
            try:
                return json.loads(value).get("page")  # type: ignore[no-any-return]
            except ValueError:
                return None

        # keyed by page; a malformed line (no page) has no key and is still sent
        assert all(k == (None if page(v) is None else page(v).encode())  # type: ignore[union-attr]
                   for _, k, v in got)
        assert 0 < sum(k is None for _, k, _ in got) < 200

        p = Producer({"bootstrap.servers": broker.bootstrap})
        rows = [_pane("s1", "/docs", T0, 4), _pane("s1", "/", T0, 9)]
        for r in rows:
            p.produce("page_views_panes", key=message_key(r), value=message_value(r),
                      headers=message_headers(r))
        assert p.flush(30) == 0
        back = demo_kafka.read_panes(broker.bootstrap)
        assert [(r["key"], json.loads(r["values"])) for r in back] == [
            ('"/docs"', {"views": 4}), ('"/"', {"views": 9})]
        p.produce("page_views_panes", key=b"not the contract key",
                  value=message_value(rows[0]), headers=message_headers(rows[0]))
        assert p.flush(30) == 0
        with pytest.raises(ValueError, match="key or headers"):
            demo_kafka.read_panes(broker.bootstrap)
    finally:
        broker.stop()

    again = demo_kafka.start_broker(tmp_path)  # the next `make demo` on the same home
    try:
        assert len(_records(again.bootstrap, "page_views")) == 200
    finally:
        again.stop()
