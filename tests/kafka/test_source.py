"""A job reading a real Kafka topic: its panes equal ``tidemark replay`` over the same records
in partition/offset order, malformed values become dead letters with topic, partition, offset
and reason, and the Kafka metadata columns are usable in expressions."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from jobs.engine.arrival import Arrival
from jobs.kafka.broker import KafkaBroker
from jobs.replay import replay_lines
from jobs.spark.context import JobContext
from jobs.spark.gate import ET_REASON, KEY_REASON
from jobs.spark.runner import JobRunner, RunOptions
from jobs.spark.sinks import pane_json
from tests.kafka.conftest import (
    create_topic,
    kafka_definition,
    produce,
    read_jsonl_dir,
)

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def events(n: int, seed: int) -> list[dict[str, Any]]:
    """In event-time order up to 20 s of disorder (the watermark delay is 30 s: none late)."""
    rng = random.Random(seed)
    rows = [{"team": rng.choice("abc"), "score": rng.randint(1, 9), "et": T0 + i * 2_000}
            for i in range(n)]
    for i in range(0, n - 10, 10):
        j = i + rng.randint(0, 9)
        rows[i], rows[j] = rows[j], rows[i]
    return rows


def spark_panes(spark: Any, ctx: JobContext) -> list[dict[str, Any]]:
    if not Path(ctx.panes_path).exists():
        return []
    return [pane_json(r.asDict()) for r in spark.read.parquet(ctx.panes_path).collect()]


def canon(panes: list[dict[str, Any]]) -> list[str]:
    drop = ("emitted_at", "watermark")
    return sorted(json.dumps({k: v for k, v in p.items() if k not in drop} | {"type": "pane"},
                             sort_keys=True) for p in panes if p.get("type", "pane") == "pane")


def run_job(spark: Any, defn: Any, settings: Any, max_per_trigger: int | None = None,
            force_engine: bool = False) -> JobContext:
    ctx = JobContext.create(defn, settings, force_engine=force_engine)
    overrides = {} if max_per_trigger is None else {"maxOffsetsPerTrigger": str(max_per_trigger)}
    JobRunner(spark, ctx, RunOptions(until_idle=True, source_options=overrides)).run()
    return ctx


def test_panes_equal_replay_and_dead_letters_carry_offsets(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    topic = create_topic(broker, partitions=1)
    good = events(120, seed=7)
    bad = {10: b"not json at all", 40: json.dumps({"team": "a", "score": "x9", "et": T0}).encode(),
           70: json.dumps({"team": None, "score": 1, "et": T0 + 1000}).encode(),
           100: json.dumps({"team": "b", "score": 1}).encode()}
    values: list[bytes] = []
    for i, row in enumerate(good):
        if i in bad:
            values.append(bad[i])
        values.append(json.dumps(row).encode())
    produce(broker, topic, [(0, f"k{i}".encode(), v) for i, v in enumerate(values)])

    defn = kafka_definition(broker, topic)
    # several micro-batches: none of the records is late whatever the split
    ctx = run_job(spark, defn, settings, max_per_trigger=37)

    bad_offsets = {off for off, v in enumerate(values) if v in bad.values()}
    records = [{**json.loads(v), "kafka_offset": off} for off, v in enumerate(values)
               if off not in bad_offsets]
    expected = [o for o in replay_lines(defn, records, eof_flush=False) if o["type"] == "pane"]
    got = spark_panes(spark, ctx)
    assert expected, "the data must close some windows"
    assert canon(got) == canon(expected)

    dead = read_jsonl_dir(Path(ctx.dead_letter_path))
    assert len(dead) == 4
    by_offset: dict[int, dict[str, Any]] = {}
    for d in dead:
        rec = json.loads(d["record"])
        assert rec["kafka_topic"] == topic and rec["kafka_partition"] == 0
        by_offset[rec["kafka_offset"]] = d
    assert set(by_offset) == bad_offsets
    offset_of = {v: off for off, v in enumerate(values)}
    assert by_offset[offset_of[bad[10]]]["reason"] == "unparsable record"  # not JSON
    assert json.loads(by_offset[offset_of[bad[10]]]["record"])["kafka_value"] == "not json at all"
    assert by_offset[offset_of[bad[40]]]["reason"] == "unparsable record"  # a wrong type
    assert by_offset[offset_of[bad[70]]]["reason"] == KEY_REASON
    assert by_offset[offset_of[bad[100]]]["reason"] == ET_REASON


def test_the_native_query_parses_each_value_once(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    """The gate's condition names the parsed fields many times; Spark must not push it below
    the parse with ``from_json`` inlined into it (each value parsed several times a record):
    the plan holds one ``from_json``, as a hand-written ``from_json`` query does, and one
    call of the gate. Analysis only: the query is built, not started."""
    defn = kafka_definition(broker, create_topic(broker, partitions=1))
    runner = JobRunner(spark, JobContext.create(defn, settings), RunOptions(until_idle=True))
    writer = runner.build()
    assert runner.gate_kind == "jvm"
    df = writer._df
    plan = spark._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "extended")
    physical = plan.split("== Physical Plan ==")[1]
    assert physical.count("from_json(") == 1, plan
    # the parsed value is read straight from the parse's projection, with no generator
    # between the parse and the gate (one would allocate an array and a row per record)
    assert "Generate" not in physical, plan
    # the gate's verdict is computed once, in a projection, and its filter only reads it:
    # as the filter's condition it was pushed below the projections with their expressions
    # inlined into it (the event time's range check four times)
    optimized = plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    assert optimized.count("tidemark_gate(") == 1, plan
    gate_filter = [line for line in optimized.splitlines()
                   if "Filter" in line and "__keep" in line]
    assert len(gate_filter) == 1 and "CASE WHEN" not in gate_filter[0], plan


@pytest.mark.heavy
def test_slow_partition_records_fall_behind_the_global_watermark(
        spark: Any, broker: KafkaBroker, settings: Any) -> None:
    """Three partitions, one slow: the global watermark follows the partitions that are ahead,
    so the slow partition's records, arriving after the watermark passed their windows, are
    late (dropped with their reason), exactly as replay judges the same two arrival instants."""
    topic = create_topic(broker, partitions=3)
    fast = [[{"team": "ab"[i % 2], "score": i, "et": T0 + i * 2_000} for i in range(p, 60, 2)]
            for p in (0, 1)]
    slow = [{"team": "a", "score": 100 + i, "et": T0 + i * 2_000} for i in range(20)]
    produce(broker, topic, [(p, None, json.dumps(r).encode()) for p in (0, 1) for r in fast[p]])
    defn = kafka_definition(broker, topic, aggregations=[
        {"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}])
    ctx = run_job(spark, defn, settings)  # instant 1: partitions 0 and 1
    produce(broker, topic, [(2, None, json.dumps(r).encode()) for r in slow])
    run_job(spark, defn, settings)  # instant 2: the slow partition's records

    lines: list[dict[str, Any]] = [{"$processing_time": 1}, *fast[0], *fast[1],
                                   {"$processing_time": 2}, *slow]
    expected = list(replay_lines(defn, lines, eof_flush=False, arrival=Arrival("batch")))
    assert canon(spark_panes(spark, ctx)) == canon(
        [o for o in expected if o["type"] == "pane"])
    late = read_jsonl_dir(Path(ctx.late_path))
    want_late = [o for o in expected if o["type"] == "late"]
    assert len(want_late) == len(slow)  # every slow record came after its window closed
    assert sorted((json.loads(x["key"]), x["event_time"], x["reason"]) for x in late) == sorted(
        (o["key"], o["event_time"], o["reason"]) for o in want_late)
    assert all(json.loads(x["record"])["kafka_partition"] == 2 for x in late)


@pytest.mark.heavy
def test_csv_values(spark: Any, broker: KafkaBroker, settings: Any) -> None:
    """``format: csv``: one CSV line per message (no header), a bad line is a dead letter."""
    topic = create_topic(broker)
    lines = [b"a,3,%d" % (T0 + 1_000), b"b,4,%d" % (T0 + 2_000), b"a,x,y,z",
             b"a,5,%d" % (T0 + 70_000), b"a,1,%d" % (T0 + 200_000)]
    produce(broker, topic, [(0, None, v) for v in lines])
    source = {"kind": "kafka", "format": "csv", "schema": "team STRING, score INT, et BIGINT",
              "options": {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic}}
    defn = kafka_definition(broker, topic, source=source, aggregations=[
        {"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}])
    ctx = run_job(spark, defn, settings)
    got = {(p["key"], p["window_start"]): p["values"] for p in spark_panes(spark, ctx)}
    assert got == {("a", T0): {"n": 1, "total": 3}, ("b", T0): {"n": 1, "total": 4},
                   ("a", T0 + 60_000): {"n": 1, "total": 5}}
    dead = read_jsonl_dir(Path(ctx.dead_letter_path))
    assert [(d["reason"], json.loads(d["record"])["kafka_offset"]) for d in dead] == [
        ("unparsable record", 2)]
