"""tidemark's native path and a hand-written Spark query over the same multi-partition topic,
cut into the same micro-batches by ``maxOffsetsPerTrigger``, differ exactly where the docs say
they do (docs/kafka.md, "The native path and a hand-written Spark query").

Two partitions whose event times advance at different speeds: every micro-batch takes half of
its offsets from each, so the batch's largest event time (from the fast partition) is ahead of
the slow partition's records in the next batch. Those records meet a watermark that has
already passed their window: tidemark judges a micro-batch against the watermark the previous
batch set (docs/semantics.md, section 2), so they are late (``expired``), exactly as ``tidemark
replay`` in micro-batch mode over the same batches says. Spark's own aggregation judges late
rows against the watermark one batch older and still counts them in the window it closes in
that batch. The test checks both sides against their rules, record by record.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from jobs.engine.arrival import Arrival
from jobs.kafka.broker import KafkaBroker
from jobs.replay import replay_lines
from jobs.storage.manifest import read_batch_info
from tests.kafka.conftest import create_topic, kafka_definition, produce_json, read_jsonl_dir
from tests.kafka.test_source import canon, run_job, spark_panes

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
WINDOW = 10_000
DELAY = 2_000
PER_TRIGGER = 30


def _partitions() -> list[list[dict[str, Any]]]:
    """Partition 0: one record a second for a minute; partition 1: one every half second for
    half a minute. Keys alternate in both."""
    fast = [{"team": "ab"[i % 2], "score": i, "et": T0 + i * 1_000} for i in range(60)]
    slow = [{"team": "ba"[i % 2], "score": 100 + i, "et": T0 + i * 500} for i in range(60)]
    return [fast, slow]


def _batches(checkpoint: str, topic: str, parts: list[list[dict[str, Any]]]
             ) -> list[tuple[int, list[dict[str, Any]]]]:
    """(the batch's watermark, its records in partition/offset order) per data batch of a
    query, from its offsets log (the start of a batch is the end of the one before)."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
    start = [0] * len(parts)
    for n in sorted(int(f.name) for f in (Path(checkpoint) / "offsets").iterdir()
                    if f.name.isdigit()):
        info = read_batch_info(checkpoint, n)
        ends = [int(info.source_offsets[0][topic].get(str(p), start[p]))
                for p in range(len(parts))]
        records = [r for p in range(len(parts)) for r in parts[p][start[p]:ends[p]]]
        out.append((info.watermark_ms, records))
        start = ends
    return out


def _hand_written(spark: Any, broker: KafkaBroker, topic: str, work: Path) -> Path:
    """The query a Spark user writes for the same definition (as the benchmark's
    ``spark_native_kafka``), with the same offsets per trigger."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format("kafka")
    for name, value in {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                        "startingOffsets": "earliest",
                        "maxOffsetsPerTrigger": str(PER_TRIGGER)}.items():
        reader = reader.option(name, value)
    rows = (reader.load()
            .select(F.from_json(F.col("value").cast("string"),
                                "team STRING, score INT, et BIGINT").alias("r"))
            .select("r.*").withColumn("ts", F.timestamp_millis("et"))
            .withWatermark("ts", f"{DELAY // 1000} seconds"))
    agg = rows.groupBy(F.window("ts", f"{WINDOW // 1000} seconds"), "team").agg(
        F.count(F.lit(1)).alias("n"), F.sum("score").alias("total"))
    q = (agg.writeStream.outputMode("append").format("parquet")
         .option("path", str(work / "out")).option("checkpointLocation", str(work / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return work


@pytest.mark.heavy
@pytest.mark.timeout(900)
def test_native_path_equals_replay_and_differs_from_spark_only_by_its_late_rule(
        spark: Any, broker: KafkaBroker, settings: Any, tmp_path: Path) -> None:
    topic = create_topic(broker, partitions=2)
    parts = _partitions()
    for p, rows in enumerate(parts):
        produce_json(broker, topic, p, rows)
    defn = kafka_definition(
        broker, topic, watermark={"delay": f"{DELAY}ms"},
        window={"type": "tumbling", "size": f"{WINDOW}ms"},
        aggregations=[{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "score"}])

    ctx = run_job(spark, defn, settings, max_per_trigger=PER_TRIGGER)
    assert ctx.plan.native
    ours = _batches(ctx.checkpoint, topic, parts)
    assert sum(len(records) for _, records in ours) == 120 and len(ours) >= 4

    # tidemark = replay in micro-batch mode over the job's own batches
    lines: list[dict[str, Any]] = []
    for n, (_, records) in enumerate(ours):
        lines += [{"$processing_time": T0 + n}, *records]
    expected = list(replay_lines(defn, lines, eof_flush=False, arrival=Arrival("batch")))
    assert canon(spark_panes(spark, ctx)) == canon(expected)
    late = read_jsonl_dir(Path(ctx.late_path))
    want_late = [o for o in expected if o["type"] == "late"]
    assert sorted((json.loads(x["key"]), x["event_time"], x["window_start"], x["reason"])
                  for x in late) == sorted(
        (o["key"], o["event_time"], o["window_start"], o["reason"]) for o in want_late)
    assert len(want_late) >= 10  # the slow partition fell behind: the difference shows
    assert all(json.loads(x["record"])["kafka_partition"] == 1 for x in late)

    # the hand-written query: the same cuts, and Spark's rule over them
    work = _hand_written(spark, broker, topic, tmp_path / "spark")
    theirs = _batches(str(work / "ck"), topic, parts)
    data = [(wm, records) for wm, records in theirs if records]
    assert [records for _, records in data] == [records for _, records in ours if records]
    kept: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    previous = 0  # Spark drops a row whose window ended at or before the older watermark
    for wm, records in data:
        for r in records:
            start = r["et"] - r["et"] % WINDOW
            if start + WINDOW > previous:
                kept[(r["team"], start)][0] += 1
                kept[(r["team"], start)][1] += r["score"]
        previous = wm
    final_wm = max(wm for wm, _ in theirs)  # a window is emitted once it ends by then
    spark_rule = {k: tuple(v) for k, v in kept.items() if k[1] + WINDOW <= final_wm}
    from pyspark.sql import functions as F

    got = {(r.team, r.ws): (r.n, r.total) for r in spark.read.parquet(str(work / "out")).select(
        "team", F.unix_millis("window.start").alias("ws"), "n", "total").collect()}
    assert got == spark_rule

    # so the two differ by exactly tidemark's late records (Spark kept them all here)
    mine = {(o["key"], o["window_start"]): (o["values"]["n"], o["values"]["total"])
            for o in expected if o["type"] == "pane"}
    late_sum: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for o in want_late:
        late_sum[(o["key"], o["window_start"])][0] += 1
        late_sum[(o["key"], o["window_start"])][1] += o["record"]["score"]
    assert got != mine
    added = {w: (mine.get(w, (0, 0))[0] + late_sum.get(w, [0, 0])[0],
                 mine.get(w, (0, 0))[1] + late_sum.get(w, [0, 0])[1])
             for w in mine.keys() | late_sum.keys() if w[1] + WINDOW <= final_wm}
    assert added == got
