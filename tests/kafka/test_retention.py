"""The retention guard against a real broker: a store read a topic from offset 0; then the
topic's early records are deleted (as retention deletes old segments); a rebuild from the topic
is refused with the lost offsets named, unless a partial rebuild is accepted, and then it is
complete from the earliest retained offsets. Also the "sample" read the preview uses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobs.kafka.admin import earliest_offsets, first_consumed, sample
from jobs.kafka.broker import KafkaBroker
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.retention import guard
from tests.kafka.conftest import create_topic, kafka_definition, produce
from tests.kafka.test_source import T0, run_job


def delete_before(broker: KafkaBroker, topic: str, partition: int, offset: int) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for fut in admin.delete_records([TopicPartition(topic, partition, offset)]).values():
        fut.result(30)


def test_rebuild_refused_after_retention_deleted_consumed_input(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    topic = create_topic(broker, partitions=2)
    rows = [{"team": "ab"[i % 2], "score": i, "et": T0 + i * 1_000} for i in range(40)]
    produce(broker, topic, [(i % 2, None, json.dumps(r).encode()) for i, r in enumerate(rows)])
    defn = kafka_definition(broker, topic)
    ctx = run_job(spark, defn, settings)
    first = first_consumed(ctx.checkpoint)
    assert first == {(topic, 0): 0, (topic, 1): 0}
    options = dict(defn.source.options)
    assert guard(first, earliest_offsets(options), accept_partial=False).complete

    delete_before(broker, topic, 1, 7)
    earliest = earliest_offsets(options)
    assert earliest == {(topic, 0): 0, (topic, 1): 7}
    with pytest.raises(KafkaSetupError) as err:
        guard(first, earliest, accept_partial=False)
    assert f"{topic}[1] offsets 0..6" in str(err.value)
    verdict = guard(first, earliest, accept_partial=True)
    assert not verdict.complete and verdict.complete_from == {(topic, 0): 0, (topic, 1): 7}


def test_sample_reads_the_first_records_in_partition_offset_order(broker: KafkaBroker) -> None:
    topic = create_topic(broker, partitions=2)
    produce(broker, topic, [(i % 2, f"k{i}".encode(), f'{{"i": {i}}}'.encode())
                            for i in range(10)] + [(0, None, None)])
    got = sample({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic}, limit=4)
    assert [(r["kafka_partition"], r["kafka_offset"]) for r in got] == [
        (0, 0), (0, 1), (0, 2), (0, 3)]
    assert got[0]["kafka_key"] == "k0" and json.loads(got[1]["value"]) == {"i": 2}
    every = sample({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic}, limit=50)
    assert len(every) == 11 and every[5]["value"] is None  # the tombstone, offset 5 of p0
    with pytest.raises(KafkaSetupError, match="does not exist"):
        sample({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "nope"})


def test_cli_sample_feeds_replay(broker: KafkaBroker, tmp_path: Any,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from jobs.cli import main

    topic = create_topic(broker)
    rows = [{"team": "a", "score": i, "et": T0 + i * 20_000} for i in range(6)]
    produce(broker, topic, [(0, None, json.dumps(r).encode()) for r in rows]
            + [(0, None, b"garbage")])
    spec = {"name": "s", "key": "team", "event_time": "et",
            "source": {"kind": "kafka", "schema": "team STRING, score INT, et BIGINT",
                       "options": {"kafka.bootstrap.servers": broker.bootstrap,
                                   "subscribe": topic}},
            "window": {"type": "tumbling", "size": "1m"},
            "aggregations": [{"name": "n", "fn": "count"},
                             {"name": "hi", "fn": "max", "of": "kafka_offset"}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["kafka", "sample", str(path), "--limit", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and lines[-1] == "garbage"
    assert json.loads(lines[2]) == {**rows[2], "kafka_key": None, "kafka_topic": topic,
                                    "kafka_partition": 0, "kafka_offset": 2}
    sample_file = tmp_path / "in.jsonl"
    sample_file.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(path), "--input", str(sample_file),
                 "--output", str(tmp_path / "out.jsonl")]) == 0
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    panes = [o for o in out if o["type"] == "pane"]
    assert [p["values"] for p in panes] == [{"n": 3, "hi": 2}, {"n": 3, "hi": 5}]
    assert [o["type"] for o in out].count("dead_letter") == 1
