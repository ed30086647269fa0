"""Spark runtime throughput: native Spark vs tidemark's native path vs the engine path.

All variants run side by side in one invocation on the same generated data (JSON files, N
events, K keys, 1 hour of event time, 20% of events up to 5 s out of order), each in a fresh
driver process (own JVM) with local[2], shuffle partitions 2, RocksDB, maxFilesPerTrigger=1 and
the availableNow trigger. Variants:
- ``spark_native``: the hand-written ``groupBy(window(...))`` job on Spark's defaults (plus the
  fixed comparison settings above) -- the baseline the issue names;
- ``spark_native_tuned``: the same query on tidemark's session (jobs/spark/session.py), i.e.
  given every tuning tidemark applies to its own jobs: the comparison at equal tuning;
- ``tidemark_native`` / ``tidemark_engine``: the definition run by ``JobRunner``;
- ``tidemark_native_hdfs`` / ``tidemark_native_delta`` (not in the default list): the native
  path with checkpoint and results on HDFS (a MiniDFSCluster started for the run), and with a
  Delta sink; ``storage_cost`` reports their events/s and batch p95 next to local Parquet
  (``tidemark_native``, which must be in the same run) and whether their panes are identical.
- ``spark_native_kafka`` / ``tidemark_native_kafka`` / ``tidemark_engine_kafka`` (not in the
  default list): the same events read from a 2-partition topic of a real broker started for the
  run (benchmarks/spark_kafka_variants.py says how, and what the ``kafka`` section reports).
Ratios are reported against both baselines (``ratio_vs_spark_native`` and
``..._tuned``). Writes benchmarks/results/spark_throughput.json:

- events/s = input events / wall time from the query's start to its end (JVM start excluded);
- batch duration percentiles (triggerExecution of data batches);
- pane latency = per emitting micro-batch, its triggerExecution (time from the batch's start,
  when the closing watermark is known, to its panes being durable) - p50/p95;
- peak memory = peak RSS of the driver process tree (Python driver, JVM, Python workers);
- steady_events_per_s = input events / summed trigger time of the data batches after the first
  WARMUP_BATCHES (5 of 20 at the defaults): the rate of a process whose JIT has warmed up, which
  is what a job that runs for days sees; the final no-data batch (which only drains the last
  windows at the end of availableNow) is left out;
- cpu_s = CPU seconds the driver's process tree (Python driver, JVM, Python workers) spent
  between the query's start and end (JVM start excluded): on a shared machine it is steadier
  than wall time, and events_per_cpu_s / cpu_ratio_vs_spark_native compare work, not waiting;
- driver_python_cpu_s = the part of cpu_s the driver's Python process spent itself (the
  runner's polling, ``foreachBatch`` callbacks), not its JVM;
- phases_ms = each phase of Spark's query progress (``durationMs``: addBatch, queryPlanning,
  walCommit, ...) summed over the data batches, to compare the driver's per-batch work phase by
  phase; tasks = the tasks' executor CPU and run time, task and stage counts, shuffle bytes and
  records from Spark's status store (cpu_s minus the tasks' CPU is the work outside tasks),
  and ``by_kind``: the same executor CPU split between the stages that write a shuffle
  (``map``) and the others (``result``), each stage's CPU listed in stage order;
- python_cpu_by_role_s (engine variants) = CPU seconds of the JVM's Python processes by role,
  from /proc: the worker daemons, the ``mapInArrow`` packing workers (only without tidemark's jar), the operator's workers,
  workers already exited; operator_phases_cpu_s = the operator tasks' phase timers summed
  (``jobs/spark/engine_path/profiling.py``, ``time.thread_time``, no cProfile);
- results: tidemark native panes compared with native Spark's (key, window, sum, count).
- gate: which gate a tidemark variant ran (``jvm``: Spark SQL + Java functions, no Python
  worker; ``python``: the mapInArrow gate; null: the engine path splits dead letters itself).

Usage: python benchmarks/spark_throughput.py [--events 2000000] [--keys 10000] [--files 20]
       [--variants spark_native,spark_native_tuned,tidemark_native,tidemark_engine]
       [--rounds 1] [--order alternate] [--keep]
With --rounds N every variant runs N times, interleaved, in the order --variants gives in even
rounds and in the reverse order in odd ones (A B C, C B A, A B C ...; ``--order fixed``: always
A B C): the run that follows another in the same round tends to come out a point or two
better (docs/performance.md, Method), so with an even number of rounds each variant of a pair
runs first as often as second. The run with the lower median events/s of each variant is
reported (all runs are kept under "runs");
"paired_by_round" adds, per variant, its ratio to each baseline run of the same round and the
median of those ratios (baselines ``spark_native``, ``spark_native_tuned`` and, for the Kafka
variants, ``spark_native_kafka``), on events/s and, as ``..._per_cpu_s``, on events per CPU
second.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_cpu import (  # noqa: E402
    operator_phases,
    python_cpu_by_role,
    tree_cpu_s,
    tree_rss,
)
from spark_kafka_variants import (  # noqa: E402  (after the path)
    KAFKA_VARIANTS,
    codegen_totals,
    jvm_pid,
    jvm_thread_cpu,
    kafka_options,
    kafka_report,
    late_by_window,
    phase_totals,
    spark_native_kafka,
    stage_totals,
    start_kafka,
    thread_cpu_delta,
)

from jobs.spark.engine_path.profiling import (  # noqa: E402
    CPROFILE_PREFIX,
    PROFILE_ENV,
    profile_dir,
)
from jobs.spark.session import ROCKSDB_PROVIDER  # noqa: E402

T0 = 1_767_225_600_000
HOUR = 3_600_000
SCHEMA = "team STRING, score INT, et BIGINT"
WARMUP_BATCHES = 5
"""Data batches left out of steady_events_per_s: the JVM's JIT compiles the query's code and
RocksDB fills its memtable during the first batches of a fresh process; a job that runs for
days spends almost all of its time past them."""


def generate(directory: Path, events: int, keys: int, files: int, seed: int = 1) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per = events // files
    for f in range(files):
        lines = []
        for i in range(per):
            n = f * per + i
            t = T0 + n * HOUR // events
            if rng.random() < 0.2:
                t -= rng.randint(0, 5000)
            lines.append(f'{{"team":"t{rng.randrange(keys)}","score":{rng.randint(0, 100)},"et":{t}}}\n')
        path = directory / f"part-{f:04d}.json"
        path.write_text("".join(lines))
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))


def spec(name: str, data: Path, full: bool) -> dict[str, Any]:
    s: dict[str, Any] = {
        "name": name,
        "source": {"kind": "files", "path": str(data), "format": "json", "schema": SCHEMA},
        "key": "team", "event_time": "et", "watermark": {"delay": "2s"},
        "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"}, {"name": "n", "fn": "count"}],
    }
    if full:  # early + late triggers, retracting, allowed lateness: engine path
        s.update({"allowed_lateness": "10s", "accumulation": "retracting",
                  "trigger": {"emit": "custom", "early": {"count": 50}, "on_time": True,
                              "late": {"count": 1}}})
    return s


# ---------------------------------------------------------------- one variant (child process)

STORAGE_VARIANTS = ("tidemark_native_hdfs", "tidemark_native_delta")
"""The native path's job with its checkpoint and Parquet results on HDFS (a MiniDFSCluster the
benchmark starts), and with a Delta sink on the local disk: the cost of remote storage and of
Delta next to ``tidemark_native`` (local Parquet), on the same data in the same run."""


def run_variant(variant: str, data: Path, work: Path, hdfs: tuple[str, str] | None = None
                ) -> dict[str, Any]:
    from jobs.config import Settings
    from jobs.spark.session import build_session

    env = {"TIDEMARK_HOME": str(work), "TIDEMARK_SPARK_MASTER": "local[2]"}
    if variant == "tidemark_native_hdfs":
        assert hdfs is not None, "tidemark_native_hdfs needs --hdfs-url/--webhdfs-url"
        env.update({"TIDEMARK_CHECKPOINT_ROOT": f"{hdfs[0]}/bench/{work.name}/ck",
                    "TIDEMARK_RESULTS_ROOT": f"{hdfs[0]}/bench/{work.name}/results",
                    "TIDEMARK_WEBHDFS_URL": hdfs[1]})
    settings = Settings.from_env(env)
    account = work / "engine_account"
    if variant.startswith("tidemark_engine") and not os.environ.get(PROFILE_ENV):
        # role marks and phase timers (no cProfile) of the engine path's workers
        os.environ[PROFILE_ENV] = str(account)
    if variant == "spark_native":
        spark = _plain_session(variant)
    else:
        spark = build_session(settings, app_name=f"bench-{variant}", shuffle_partitions=2)
    jpid = jvm_pid(spark)
    cpu0 = tree_cpu_s(os.getpid())
    threads0, codegen0 = jvm_thread_cpu(jpid), codegen_totals(spark)
    py0 = time.process_time()
    started = time.monotonic()
    gate: str | None = None
    if variant in ("spark_native", "spark_native_tuned"):
        progress = _spark_native(spark, data, work)
        panes_path = str(work / "spark_native_out")
    elif variant == "spark_native_kafka":
        progress = spark_native_kafka(spark, work, SCHEMA)
        panes_path = str(work / "spark_native_out")
    else:
        from jobs.definition import load_definition
        from jobs.spark.context import JobContext
        from jobs.spark.runner import JobRunner, RunOptions

        raw = spec("bench", data, full=variant in ("tidemark_engine", "tidemark_engine_kafka"))
        if variant == "tidemark_native_delta":
            raw["sink"] = {"kind": "delta"}
        if variant in KAFKA_VARIANTS:
            raw["source"] = {"kind": "kafka", "format": "json", "schema": SCHEMA,
                             "options": kafka_options()}
        defn = load_definition(raw)
        ctx = JobContext.create(defn, settings)
        runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
        cpu0 = tree_cpu_s(os.getpid())
        threads0, codegen0 = jvm_thread_cpu(jpid), codegen_totals(spark)
        py0 = time.process_time()
        started = time.monotonic()
        runner.run()
        q = runner.query
        assert q is not None
        progress = [json.loads(p.json) for p in q.recentProgress]
        panes_path = ctx.panes_path
        gate = runner.gate_kind
    elapsed = time.monotonic() - started
    cpu_s = tree_cpu_s(os.getpid()) - cpu0
    py_cpu_s = time.process_time() - py0  # the driver's Python process alone (no JVM)
    rows = sum(int(p.get("numInputRows") or 0) for p in progress)
    data_batches = [p for p in progress if int(p.get("numInputRows") or 0) > 0]
    durations = [int(p["durationMs"]["triggerExecution"]) for p in data_batches]
    steady = data_batches[WARMUP_BATCHES:]
    steady_ms = sum(int(p["durationMs"]["triggerExecution"]) for p in steady)
    steady_rows = sum(int(p.get("numInputRows") or 0) for p in steady)
    emitting = [int(p["durationMs"]["triggerExecution"]) for p in progress
                if int((p.get("sink") or {}).get("numOutputRows") or 0) != 0]
    result: dict[str, Any] = {
        "variant": variant,
        "gate": gate,
        "input_rows": rows,
        "elapsed_s": round(elapsed, 2),
        "events_per_s": round(rows / elapsed, 1) if elapsed else None,
        "cpu_s": round(cpu_s, 1),
        "events_per_cpu_s": round(rows / cpu_s, 1) if cpu_s else None,
        "driver_python_cpu_s": round(py_cpu_s, 2),
        "steady_events_per_s": round(steady_rows * 1000 / steady_ms, 1) if steady_ms else None,
        "steady_batches": len(steady),
        "batches": len(progress),
        "batch_ms_p50": _pct(durations, 50),
        "batch_ms_p95": _pct(durations, 95),
        "pane_latency_ms_p50": _pct(emitting or durations, 50),
        "pane_latency_ms_p95": _pct(emitting or durations, 95),
        "phases_ms": phase_totals(progress),
    }
    result["tasks"] = stage_totals(spark)  # before the panes are read back
    result["jvm_threads_cpu_s"] = thread_cpu_delta(threads0, jvm_thread_cpu(jpid))
    if variant.startswith("tidemark_engine"):
        where = profile_dir()
        if where is not None:
            result["python_cpu_by_role_s"] = python_cpu_by_role(jpid, Path(where[0]))
            result["operator_phases_cpu_s"] = operator_phases(Path(where[0]))
    codegen = codegen_totals(spark)
    result["codegen"] = {"compilations": codegen["compilations"] - codegen0["compilations"],
                         "compile_ms_mean": codegen["compile_ms_mean"]}
    result["panes"] = _panes(spark, panes_path, variant, work)
    if variant == "tidemark_native_kafka":
        result["late"] = late_by_window(Path(ctx.late_path), work / f"{variant}.late.txt")
    spark.stop()
    return result


def _pct(values: list[int], p: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return round(statistics.quantiles(values, n=100, method="inclusive")[p - 1], 1)


PLAIN_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
}
"""The hand-written baseline's session: what the issue fixes for the comparison (local[2], two
shuffle partitions, the RocksDB state store) and Spark's defaults for everything else, which is
what a job written by hand runs with. ``spark_native_tuned`` runs the same query on tidemark's
own session (jobs/spark/session.py: changelog checkpointing, balanced file splits, the
throughput collector), so the report also shows the ratio at equal tuning."""


def _plain_session(variant: str) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName(f"bench-{variant}")
    for name, value in PLAIN_CONF.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _spark_native(spark: Any, data: Path, work: Path) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    df = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(data))
          .withColumn("ts", F.timestamp_millis("et")).withWatermark("ts", "2 seconds"))
    agg = df.groupBy(F.window("ts", "1 minute"), "team").agg(
        F.sum("score").alias("total"), F.count(F.lit(1)).alias("n"))
    q = (agg.writeStream.outputMode("append").format("parquet")
         .option("path", str(work / "spark_native_out"))
         .option("checkpointLocation", str(work / "spark_native_ckpt"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return [json.loads(p.json) for p in q.recentProgress]


def _panes(spark: Any, path: str, variant: str, work: Path) -> str | None:
    """Final panes as a file of sorted lines (key, window_start, total, n) for comparison."""
    from pyspark.sql import functions as F

    from jobs.storage import is_local

    if is_local(path) and not Path(path).exists():
        return None
    if variant == "tidemark_native_delta":
        from jobs.spark.delta_sink import read_table

        df = spark.createDataFrame(read_table(path))
    else:
        df = spark.read.parquet(path)
    if variant.startswith("spark_native"):
        df = df.select(F.col("team").alias("k"), F.unix_millis("window.start").alias("ws"),
                       "total", "n")
    else:
        df = df.where(~F.col("retraction") & F.col("is_last")).select(
            F.get_json_object(F.concat(F.lit('{"k":'), "key", F.lit("}")), "$.k").alias("k"), F.col("window_start").alias("ws"),
            F.get_json_object("values", "$.total").cast("long").alias("total"),
            F.get_json_object("values", "$.n").cast("long").alias("n"))
    lines = sorted(f"{r.k}|{r.ws}|{r.total}|{r.n}" for r in df.collect())
    out = work / f"{variant}.panes.txt"
    out.write_text("\n".join(lines))
    return str(out)


# ---------------------------------------------------------------- driver

def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = sorted((r for r in runs if r.get("events_per_s")), key=lambda r: r["events_per_s"])
    return dict(ok[(len(ok) - 1) // 2]) if ok else dict(runs[0])


def paired_ratios(runs: list[dict[str, Any]], variants: list[str]) -> dict[str, Any]:
    """Per variant and baseline, events/s over the baseline's events/s of the same round, and
    the median of those ratios. A round's runs follow each other within minutes, so pairing by
    round cancels the machine's drift over the whole invocation (10-20% here), which the
    lower-median runs of ``results`` do not; both are reported, neither replaces the other."""
    out: dict[str, Any] = {}
    by_round: dict[int, dict[str, float]] = {}
    cpu_by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        if r.get("events_per_s"):
            by_round.setdefault(int(r.get("round", 0)), {})[r["variant"]] = float(r["events_per_s"])
        if r.get("events_per_cpu_s"):
            cpu_by_round.setdefault(int(r.get("round", 0)), {})[r["variant"]] = float(
                r["events_per_cpu_s"])
    for v in variants:
        for base_name, name in (("spark_native", "vs_spark_native"),
                                ("spark_native_tuned", "vs_spark_native_tuned"),
                                ("spark_native_kafka", "vs_spark_native_kafka")):
            if v == base_name:
                continue
            for rounds, suffix in ((by_round, ""), (cpu_by_round, "_per_cpu_s")):
                ratios = [round(rnd[v] / rnd[base_name], 3) for _, rnd in sorted(rounds.items())
                          if v in rnd and base_name in rnd]
                if ratios:
                    out.setdefault(v, {})[name + suffix] = {
                        "by_round": ratios, "median": round(statistics.median(ratios), 3)}
    return out


def measure(variant: str, data: Path, base: Path, round_no: int = 0,
            hdfs: tuple[str, str] | None = None) -> dict[str, Any]:
    work = base / f"round{round_no}"
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"{variant}.json"
    remote = ["--hdfs-url", hdfs[0], "--webhdfs-url", hdfs[1]] if hdfs else []
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", variant, "--data", str(data), "--work", str(work),
         "--out", str(out), *remote], cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.5)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    code = proc.wait()
    stop.set()
    th.join()
    if code != 0:
        return {"variant": variant, "error": f"exit code {code}"}
    result: dict[str, Any] = json.loads(out.read_text())
    result["peak_rss_mb"] = round(peak / 2**20, 1)
    return result


def round_order(variants: list[str], round_no: int, order: str) -> list[str]:
    """The variants in the order round ``round_no`` runs them: ``alternate`` reverses every
    odd round (so a pair's runs take turns at going first), ``fixed`` never does."""
    if order == "alternate" and round_no % 2 == 1:
        return list(reversed(variants))
    return list(variants)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--variants",
                    default="spark_native,spark_native_tuned,tidemark_native,tidemark_engine")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--order", choices=("alternate", "fixed"), default="alternate",
                    help="alternate: odd rounds run the variants in reverse order")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "spark_throughput.json"))
    ap.add_argument("--child")
    ap.add_argument("--data")
    ap.add_argument("--work")
    ap.add_argument("--out")
    ap.add_argument("--hdfs-url")
    ap.add_argument("--webhdfs-url")
    ap.add_argument("--profile", help="directory: the engine path's Python workers write a "
                    "cProfile and phase timers per task there (without it, phase timers only, "
                    "in the run's work directory) (jobs/spark/engine_path/profiling.py)")
    args = ap.parse_args()
    if args.profile:
        os.environ[PROFILE_ENV] = CPROFILE_PREFIX + str(Path(args.profile).resolve())
    if args.child:
        work = Path(args.work) / args.child
        work.mkdir(parents=True, exist_ok=True)
        hdfs_urls = (args.hdfs_url, args.webhdfs_url) if args.hdfs_url else None
        Path(args.out).write_text(json.dumps(
            run_variant(args.child, Path(args.data), work, hdfs_urls)))
        return 0
    base = Path(tempfile.mkdtemp(prefix="tidemark-bench-"))
    cluster = None
    broker = None
    try:
        if "tidemark_native_hdfs" in args.variants.split(","):
            from jobs.storage import minihdfs

            cluster = minihdfs.start()
        hdfs = (cluster.url, cluster.http) if cluster is not None else None
        data = base / "data"
        t = time.monotonic()
        generate(data, args.events, args.keys, args.files)
        gen_s = time.monotonic() - t
        variants = args.variants.split(",")
        if set(variants) & set(KAFKA_VARIANTS):
            broker = start_kafka(base, data, args.events, args.files)
        runs: list[dict[str, Any]] = []
        for round_no in range(args.rounds):
            for position, v in enumerate(round_order(variants, round_no, args.order)):
                r = measure(v, data, base, round_no, hdfs)
                r["round"] = round_no
                r["position_in_round"] = position
                r["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
                runs.append(r)
        results = [_median_run([r for r in runs if r["variant"] == v]) for v in variants]
        by = {r["variant"]: r for r in results}
        for base_name, suffix in (("spark_native", ""), ("spark_native_tuned", "_tuned")):
            ref_run = by.get(base_name) or {}
            for field, ratio in (("events_per_s", "ratio_vs_spark_native"),
                                 ("events_per_cpu_s", "cpu_ratio_vs_spark_native"),
                                 ("steady_events_per_s", "steady_ratio_vs_spark_native")):
                for r in results:
                    if ref_run.get(field) and r.get(field):
                        r[ratio + suffix] = round(r[field] / ref_run[field], 3)
        comparison = None
        ref = (by.get("spark_native") or {}).get("panes")
        mine = (by.get("tidemark_native") or {}).get("panes")
        if ref and mine:
            a = set(Path(ref).read_text().splitlines())
            b = set(Path(mine).read_text().splitlines())
            comparison = {"spark_native_panes": len(a), "tidemark_native_panes": len(b),
                          "identical": a == b, "only_spark": len(a - b), "only_tidemark": len(b - a)}
        local = by.get("tidemark_native") or {}
        storage_cost: dict[str, Any] = {}
        for v in STORAGE_VARIANTS:
            r = by.get(v) or {}
            if not (r and local and r.get("events_per_s") and local.get("events_per_s")):
                continue
            same = None
            if r.get("panes") and local.get("panes"):
                same = (Path(r["panes"]).read_text().splitlines()
                        == Path(local["panes"]).read_text().splitlines())
            storage_cost[v] = {
                "events_per_s": r["events_per_s"], "batch_ms_p95": r["batch_ms_p95"],
                "local_parquet_events_per_s": local["events_per_s"],
                "local_parquet_batch_ms_p95": local["batch_ms_p95"],
                "throughput_ratio_vs_local_parquet": round(
                    r["events_per_s"] / local["events_per_s"], 3),
                "panes_identical_to_local_parquet": same,
            }
        kafka = kafka_report(by)
        for r in [*runs, *results]:
            r.pop("panes", None)
            r.pop("late", None)
        report = {
            "benchmark": "spark_throughput",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
            "data": {"events": args.events, "keys": args.keys, "files": args.files,
                     "format": "json", "event_time_span": "1h", "out_of_order": "20% up to 5s",
                     "generate_s": round(gen_s, 1)},
            "config": {"master": "local[2]", "shuffle_partitions": 2, "state_store": "RocksDB",
                       "maxFilesPerTrigger": 1, "trigger": "availableNow"},
            "rounds": args.rounds,
            "order": args.order,
            "results": results,
            "runs": [{k: v for k, v in r.items() if k != "panes"} for r in runs],
            "paired_by_round": paired_ratios(runs, variants),
            "comparison": comparison,
            "storage_cost": storage_cost,
            "kafka": kafka,
        }
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
        print(json.dumps(report, indent=2))
    finally:
        if broker is not None:
            broker.stop()
        if cluster is not None:
            minihdfs.stop(cluster)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
