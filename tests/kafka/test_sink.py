"""The kafka sink: one message per pane, read back and compared with the Parquet results; a
re-run batch (a crash after the send, before the commit) re-sends byte-identical messages, and
the consumer rule of docs/kafka.md sees every pane once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.kafka.broker import KafkaBroker
from jobs.kafka.contract import latest_per_pane, message_key, message_value
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions
from tests.kafka.conftest import consume_all, create_topic, kafka_definition, produce
from tests.kafka.test_source import T0


def parquet_rows(spark: Any, ctx: JobContext) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.read.parquet(ctx.panes_path).collect()]


@pytest.mark.heavy
def test_one_message_per_pane_and_byte_identical_resend(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    source, out = create_topic(broker, partitions=2), create_topic(broker, partitions=3)
    rows = [{"team": "ab"[i % 2], "score": i, "et": T0 + i * 5_000} for i in range(60)]
    produce(broker, source, [(i % 2, None, json.dumps(r).encode()) for i, r in enumerate(rows)])
    defn = kafka_definition(
        broker, source,
        trigger={"emit": "custom", "early": {"count": 3}, "on_time": True},
        accumulation="retracting",
        sink={"kind": "kafka", "topic": out,
              "options": {"kafka.bootstrap.servers": broker.bootstrap}})
    ctx = JobContext.create(defn, settings)
    opts = RunOptions(until_idle=True, source_options={"maxOffsetsPerTrigger": "20"})
    JobRunner(spark, ctx, opts).run()

    table = parquet_rows(spark, ctx)
    sent = consume_all(broker, out)
    assert len(table) > 10 and any(r["retraction"] for r in table)
    assert len(sent) == len(table)
    assert sorted((k, v) for _, _, k, v, _ in sent) == sorted(
        (message_key(r), message_value(r)) for r in table)
    for _, _, key, value, headers in sent:
        v = json.loads(value)
        assert json.loads(key) == {"store": ctx.store, "key": v["key"],
                                   "window_start": v["window_start"],
                                   "window_end": v["window_end"]}
        assert dict(headers) == {
            "tidemark.version": b"1", "tidemark.store": ctx.store.encode(),
            "tidemark.timing": v["timing"].encode(),
            "tidemark.pane_index": str(v["pane_index"]).encode(),
            "tidemark.retraction": b"true" if v["retraction"] else b"false"}
    # one window's panes share a key, hence a partition, in pane order
    by_key: dict[bytes, list[tuple[int, int, int]]] = {}
    for part, off, key, value, _ in sent:
        by_key.setdefault(key, []).append((part, off, json.loads(value)["pane_index"]))
    for panes in by_key.values():
        assert len({p for p, _, _ in panes}) == 1
        assert [i for _, _, i in sorted(panes)] == sorted(i for _, _, i in panes)

    # a crash after the last batch's send and before its commit: the batch runs again
    commits = Path(ctx.checkpoint) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    first_send = {(k, v) for _, _, k, v, _ in sent}
    JobRunner(spark, ctx, RunOptions(until_idle=True)).run()
    again = consume_all(broker, out)
    assert len(again) > len(sent)  # the last batch was sent twice...
    assert {(k, v) for _, _, k, v, _ in again} == first_send  # ...with the same bytes
    assert sorted(latest_per_pane((k, v) for _, _, k, v, _ in again).values()) == sorted(
        message_value(r) for r in parquet_rows(spark, ctx))


@pytest.mark.heavy
def test_late_records_and_dead_letters_go_to_their_topics(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    from tests.kafka.conftest import read_jsonl_dir

    source, out, late_t, dead_t = (create_topic(broker) for _ in range(4))
    first = [{"team": "a", "score": i, "et": T0 + i * 10_000} for i in range(20)]
    produce(broker, source, [(0, None, json.dumps(r).encode()) for r in first])
    defn = kafka_definition(
        broker, source,
        sink={"kind": "kafka", "topic": out, "late_topic": late_t, "dead_letter_topic": dead_t,
              "options": {"kafka.bootstrap.servers": broker.bootstrap}})
    ctx = JobContext.create(defn, settings)
    JobRunner(spark, ctx, RunOptions(until_idle=True)).run()
    late = [{"team": "b", "score": 1, "et": T0 + 5_000}, {"team": "a", "score": 2, "et": T0}]
    produce(broker, source, [(0, None, json.dumps(r).encode()) for r in late]
            + [(0, None, b"not json"), (0, None, b'{"team": "a", "score": 1}')])
    JobRunner(spark, ctx, RunOptions(until_idle=True)).run()

    want_late = read_jsonl_dir(Path(ctx.late_path))
    want_dead = read_jsonl_dir(Path(ctx.dead_letter_path))
    assert len(want_late) == 2 and len(want_dead) == 2
    got_late = [json.loads(v) for _, _, _, v, _ in consume_all(broker, late_t)]
    got_dead = [json.loads(v) for _, _, _, v, _ in consume_all(broker, dead_t)]
    key = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    assert sorted(map(key, got_late)) == sorted(map(key, want_late))
    assert sorted(map(key, got_dead)) == sorted(map(key, want_dead))
    assert {json.loads(d["record"])["kafka_offset"] for d in got_dead} == {22, 23}
