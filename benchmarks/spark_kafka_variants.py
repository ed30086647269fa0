"""The Kafka variants of benchmarks/spark_throughput.py: a broker with the events in a topic,
the hand-written query reading it, and the ``kafka`` section of the report.

``spark_native_kafka`` / ``tidemark_native_kafka`` / ``tidemark_engine_kafka``: the same events
as the files variants, produced into a 2-partition topic of a real broker started for the run
(keyed by team, in file order), read with ``maxOffsetsPerTrigger`` = events / files (as many
batches as the files variants); the hand-written query on tidemark's session (equal tuning; it
also carries the Kafka connector's jars) against tidemark's two paths. The report's ``kafka``
section gives their ratios to ``spark_native_kafka``, whether the native panes are identical
and, in ``native_differences``, how many differing windows tidemark's late records account for
exactly (the hand-written query judges late rows against a watermark one batch older:
docs/kafka.md, "The native path and a hand-written Spark query").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

KAFKA_VARIANTS = ("spark_native_kafka", "tidemark_native_kafka", "tidemark_engine_kafka")
"""The same events read from a Kafka topic (BENCH_KAFKA_BOOTSTRAP, BENCH_KAFKA_TOPIC and
BENCH_KAFKA_PER_TRIGGER in the children's environment, set by the driver)."""


def kafka_options() -> dict[str, str]:
    return {"kafka.bootstrap.servers": os.environ["BENCH_KAFKA_BOOTSTRAP"],
            "subscribe": os.environ["BENCH_KAFKA_TOPIC"], "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": os.environ["BENCH_KAFKA_PER_TRIGGER"]}



def spark_native_kafka(spark: Any, work: Path, schema: str) -> list[dict[str, Any]]:
    """The hand-written query of the files variants (``_spark_native``) reading the topic."""
    q = start_spark_native_kafka(spark, work, schema)
    q.awaitTermination()
    return [json.loads(p.json) for p in q.recentProgress]


def start_spark_native_kafka(spark: Any, work: Path, schema: str) -> Any:
    """:func:`spark_native_kafka`'s query, started (benchmarks/kafka_planning.py watches it)."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format("kafka")
    for name, value in kafka_options().items():
        reader = reader.option(name, value)
    df = (reader.load().select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
          .select("r.*").withColumn("ts", F.timestamp_millis("et"))
          .withWatermark("ts", "2 seconds"))
    agg = df.groupBy(F.window("ts", "1 minute"), "team").agg(
        F.sum("score").alias("total"), F.count(F.lit(1)).alias("n"))
    q = (agg.writeStream.outputMode("append").format("parquet")
         .option("path", str(work / "spark_native_out"))
         .option("checkpointLocation", str(work / "spark_native_ckpt"))
         .trigger(availableNow=True).start())
    return q



PHASES = ("triggerExecution", "addBatch", "queryPlanning", "getBatch", "latestOffset",
          "walCommit", "commitOffsets")
"""The micro-batch phases of Spark's query progress (``durationMs``) that ``phase_totals``
sums: where the driver's time per batch goes, compared phase by phase between two queries."""


def phase_totals(progress: list[dict[str, Any]]) -> dict[str, int]:
    """Each phase's milliseconds summed over the batches that read input (every phase any
    batch reported, the ones in ``PHASES`` first): ``addBatch`` holds the batch's jobs and the
    sink, the others the driver's own per-batch work around them."""
    totals: dict[str, int] = {}
    for p in progress:
        if int(p.get("numInputRows") or 0) <= 0:
            continue
        for name, ms in (p.get("durationMs") or {}).items():
            totals[name] = totals.get(name, 0) + int(ms)
    return {n: totals[n] for n in (*PHASES, *sorted(set(totals) - set(PHASES))) if n in totals}



def stage_totals(spark: Any) -> dict[str, Any]:
    """What the run's tasks did, summed over every completed stage of the session (Spark's
    status store, kept with the UI off too): executor CPU and run time, task counts, shuffle
    bytes and records. The process tree's CPU minus the tasks' CPU is what the driver and the
    scheduler spent outside tasks. ``by_kind`` splits the executor CPU between the stages that
    write a shuffle (``map``: the source read, the gate, the partial aggregation) and the
    others (``result``: the aggregation after the shuffle and the sink), with each stage's
    CPU in milliseconds in stage order, to see which stage a costlier run spends more in and
    from which batch on."""
    jvm = spark.sparkContext._jvm
    store = spark._jsc.sc().statusStore()
    try:
        stages = jvm.scala.jdk.javaapi.CollectionConverters.asJava(store.stageList(
            None, False, False, getattr(store, "stageList$default$4")(),
            getattr(store, "stageList$default$5")()))
    except Exception as exc:  # noqa: BLE001 - a diagnostic must never lose the run
        return {"error": str(exc).splitlines()[0]}
    out: dict[str, Any] = {"stages": 0, "tasks": 0, "executor_cpu_s": 0.0,
                           "executor_run_s": 0.0, "deserialize_cpu_s": 0.0, "gc_s": 0.0,
                           "shuffle_write_bytes": 0, "shuffle_write_records": 0,
                           "shuffle_write_s": 0.0}
    by_kind: dict[str, dict[str, Any]] = {}
    for st in sorted(stages, key=lambda s: int(s.stageId())):
        if str(st.status()) != "COMPLETE":
            continue
        kind = "map" if int(st.shuffleWriteRecords()) > 0 else "result"
        k = by_kind.setdefault(kind, {"stages": 0, "executor_cpu_s": 0.0, "gc_s": 0.0,
                                      "cpu_ms_by_stage": []})
        k["stages"] += 1
        k["executor_cpu_s"] += int(st.executorCpuTime()) / 1e9
        k["gc_s"] += int(st.jvmGcTime()) / 1e3
        k["cpu_ms_by_stage"].append(int(st.executorCpuTime()) // 1_000_000)
        out["stages"] += 1
        out["tasks"] += int(st.numCompleteTasks())
        out["executor_cpu_s"] += int(st.executorCpuTime()) / 1e9
        out["executor_run_s"] += int(st.executorRunTime()) / 1e3
        out["deserialize_cpu_s"] += int(st.executorDeserializeCpuTime()) / 1e9
        out["gc_s"] += int(st.jvmGcTime()) / 1e3
        out["shuffle_write_bytes"] += int(st.shuffleWriteBytes())
        out["shuffle_write_records"] += int(st.shuffleWriteRecords())
        out["shuffle_write_s"] += int(st.shuffleWriteTime()) / 1e9
    out = {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}
    out["by_kind"] = {kind: {k: round(v, 2) if isinstance(v, float) else v for k, v in d.items()}
                      for kind, d in by_kind.items()}
    return out



def codegen_totals(spark: Any) -> dict[str, float]:
    """Whole-stage / expression code generation so far in this JVM (Spark's ``CodegenMetrics``):
    how many classes Janino compiled and their milliseconds. A query whose generated code
    differs from batch to batch compiles (and the JIT then recompiles) new classes every
    batch; one whose code repeats hits Spark's code cache."""
    m = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
    h = m.METRIC_COMPILATION_TIME()
    n = int(h.getCount())
    return {"compilations": n, "compile_ms_mean": round(float(h.getSnapshot().getMean()), 1)}


THREAD_GROUPS = (("C2 Compiler", "jit_c2"), ("C1 Compiler", "jit_c1"), ("GC Thread", "gc"),
                 ("G1 ", "gc"), ("Executor task", "tasks"), ("stream executio", "stream_thread"),
                 ("Thread-", "py4j_callbacks"), ("dag-scheduler", "scheduler"))
"""JVM thread names (``/proc/<pid>/task/<tid>/comm``, cut at 15 characters) by what they do;
``Thread-N`` threads are py4j's connection threads: the driver's Python calls into the JVM
(building the query, polling its progress) and its callbacks (``foreachBatch``)."""


def jvm_thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of the live threads of the JVM ``pid``, summed by :data:`THREAD_GROUPS`
    (the rest as ``other``). Threads that already ended are not counted (the JIT's compiler
    threads may come and go): a diagnostic of where the JVM's time goes, not a total."""
    hz = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        group = next((g for pat, g in THREAD_GROUPS if name.startswith(pat)), "other")
        out[group] = out.get(group, 0.0) + (int(fields[11]) + int(fields[12])) / hz
    return out


def jvm_pid(spark: Any) -> int:
    """The driver JVM's process id."""
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def thread_cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {g: round(after[g] - before.get(g, 0.0), 2)
            for g in sorted(after, key=lambda g: -(after[g] - before.get(g, 0.0)))}


def start_kafka(base: Path, data: Path, events: int, files: int) -> Any:
    """A broker for the Kafka variants, with the generated events in a 2-partition topic (file
    order, keyed by team); the children find it in their environment."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from jobs.kafka.broker import KafkaBroker

    broker = KafkaBroker(base / "kafka", heap="1g").start()
    topic = "bench-events"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50,
                         "batch.num.messages": 10000, "compression.type": "lz4"})
    for f in sorted(data.glob("part-*.json")):
        for line in f.read_text().splitlines():
            team = line[9:line.index('"', 9)]  # {"team":"t123",...
            while True:
                try:
                    producer.produce(topic, value=line.encode(), key=team.encode())
                    break
                except BufferError:  # the local queue is full: let it drain
                    producer.poll(0.5)
        producer.poll(0)
    assert producer.flush(120) == 0, "the benchmark broker did not take every event"
    os.environ.update({"BENCH_KAFKA_BOOTSTRAP": broker.bootstrap, "BENCH_KAFKA_TOPIC": topic,
                       "BENCH_KAFKA_PER_TRIGGER": str(max(1, events // files))})
    return broker



def late_by_window(late_dir: Path, out: Path) -> str:
    """tidemark's late records per window as sorted lines (key, window_start, count, score
    sum): what the hand-written query, which judges a batch against the watermark one batch
    older, still aggregated (docs/kafka.md, "The native path and a hand-written query")."""
    per: dict[tuple[str, int], list[int]] = {}
    for f in sorted(late_dir.glob("batch_id=*/part-*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                o = json.loads(line)
                acc = per.setdefault((json.loads(o["key"]), o["window_start"]), [0, 0])
                acc[0] += 1
                acc[1] += int(json.loads(o["record"]).get("score") or 0)
    out.write_text("\n".join(sorted(f"{k}|{ws}|{n}|{s}" for (k, ws), (n, s) in per.items())))
    return str(out)



def explain_kafka_differences(spark_panes: str, tidemark_panes: str, late: str
                              ) -> dict[str, Any]:
    """Windows whose final pane differs between the hand-written query and tidemark's native
    path, and how many of them tidemark's late records account for exactly (the hand-written
    count and sum = tidemark's + its late records' in that window)."""
    def table(path: str) -> dict[tuple[str, str], tuple[int, int]]:
        rows = (line.split("|") for line in Path(path).read_text().splitlines() if line)
        return {(r[0], r[1]): (int(r[3]), int(r[2])) for r in rows}  # (n, total)

    theirs, mine = table(spark_panes), table(tidemark_panes)
    late_rows = (line.split("|") for line in Path(late).read_text().splitlines() if line)
    added = {(r[0], r[1]): (int(r[2]), int(r[3])) for r in late_rows}
    differ = {w for w in theirs.keys() | mine.keys() if theirs.get(w) != mine.get(w)}
    explained = {w for w in differ if w in theirs and added.get(w) is not None
                 and theirs[w][0] == mine.get(w, (0, 0))[0] + added[w][0]
                 and theirs[w][1] == mine.get(w, (0, 0))[1] + added[w][1]}
    return {"windows_differing": len(differ), "explained_by_late_records": len(explained),
            "tidemark_late_records": sum(n for n, _ in added.values())}



def kafka_report(by: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The report's ``kafka`` section from the reported run of each variant."""
    kafka: dict[str, Any] = {}
    ref_k = by.get("spark_native_kafka") or {}
    for v in KAFKA_VARIANTS[1:]:
        r = by.get(v) or {}
        if r.get("events_per_s") and ref_k.get("events_per_s"):
            kafka[v] = {"ratio_vs_spark_native_kafka": round(
                r["events_per_s"] / ref_k["events_per_s"], 3)}
            if r.get("steady_events_per_s") and ref_k.get("steady_events_per_s"):
                kafka[v]["steady_ratio_vs_spark_native_kafka"] = round(
                    r["steady_events_per_s"] / ref_k["steady_events_per_s"], 3)
    mine_k = (by.get("tidemark_native_kafka") or {}).get("panes")
    if ref_k.get("panes") and mine_k:
        a = set(Path(ref_k["panes"]).read_text().splitlines())
        b = set(Path(mine_k).read_text().splitlines())
        kafka["native_panes_identical"] = {"spark_native_kafka_panes": len(a),
                                           "tidemark_native_kafka_panes": len(b),
                                           "identical": a == b}
        late_k = (by.get("tidemark_native_kafka") or {}).get("late")
        if late_k:
            kafka["native_differences"] = explain_kafka_differences(
                ref_k["panes"], mine_k, late_k)
    return kafka
