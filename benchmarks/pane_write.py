"""What one micro-batch's pane write costs the driver's process tree (a diagnostic, not a
throughput benchmark).

The native path writes each batch's panes as ``panes/batch_id=N/`` with Spark's Parquet writer
in overwrite mode (jobs/spark/sinks.py); the hand-written query of
``benchmarks/spark_throughput.py`` writes four columns through Spark's file sink. Here the same
cached batch of pane rows (the results schema, 16 columns, as the benchmark's tumbling
definition emits them) is written ``--writes`` times per variant, variants alternated for
``--rounds`` rounds in one Spark session (``local[2]``, tidemark's session settings):

- ``observed``: overwrite with the pane count as an observed metric (``Observation``), as the
  native path counted before it read the save operator's output rows;
- ``pane_files``: tidemark's writer (``PaneFiles.java`` through ``sinks.write_parquet``): the
  same files without a write query, shipped Hadoop configuration or ``_temporary`` commit
  (the native and engine paths' write now);
- ``plain``: Spark's overwrite alone (the write without tidemark's jar);
- ``no_size_stats`` / ``no_size_stats_plain_constants``: ``plain`` with Parquet's size
  statistics off, and also without dictionary encoding for the constant string columns (job,
  store, timing): writer options that would keep the results schema;
- ``four_columns``: the rows the hand-written query writes (window struct, key, sum, count),
  overwrite alone: the Parquet encoding of tidemark's 16 columns against those 4;
- ``noop``: the same batch through Spark's ``noop`` sink (a planned write query, no files);
- ``count``: only the batch's rows computed (no write query planned).

Reported: CPU ms (driver tree: Python and JVM, ``/proc``) and wall ms per write, per round;
the median over the rounds after the first (warm-up). Writes
benchmarks/results/pane_write.json.

Usage: python benchmarks/pane_write.py [--rows 45000] [--writes 20] [--rounds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_cpu import tree_cpu_s  # noqa: E402

VARIANTS = ("observed", "pane_files", "plain", "no_size_stats", "no_size_stats_plain_constants",
            "four_columns", "noop", "count")
NO_SIZE_STATS = {"parquet.size.statistics.enabled": "false"}
PLAIN_CONSTANTS = {f"parquet.enable.dictionary#{c}": "false" for c in ("job", "store", "timing")}
STORE = "bench__tumbling_window_60000_sum_count__a57d87a6"


def pane_rows(spark: Any, rows: int) -> Any:
    """``rows`` panes in the results schema: 10k keys, one-minute windows, sum and count."""
    from pyspark.sql import functions as F

    i = F.col("id")
    start = (i / 10000).cast("long") * 60000
    return spark.range(rows).select(
        F.lit("bench").alias("job"), F.lit(1).alias("version"), F.lit(STORE).alias("store"),
        F.concat(F.lit('"t'), (i % 10000).cast("string"), F.lit('"')).alias("key"),
        start.alias("window_start"), (start + 60000).alias("window_end"),
        F.lit(None).cast("bigint").alias("first_event_time"),
        F.lit(None).cast("bigint").alias("last_event_time"),
        F.lit("ON_TIME").alias("timing"), F.lit(0).alias("pane_index"),
        F.lit(True).alias("is_first"), F.lit(True).alias("is_last"),
        F.lit(False).alias("retraction"),
        F.concat(F.lit('{"total":'), (i * 7 % 1000).cast("string"), F.lit(',"n":'),
                 (i % 13).cast("string"), F.lit("}")).alias("values"),
        F.lit(1_795_817_119_000).alias("emitted_at"), F.lit(1_795_817_100_000).alias("watermark"),
    ).repartition(2)


def writers(panes: Any, expected: int, four: Any) -> dict[str, Callable[[str], None]]:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from jobs.spark.jvm import pane_files
    from jobs.spark.sinks import write_parquet

    if pane_files(panes.sparkSession) is None:
        raise SystemExit("tidemark's jar is not on the session's class path: build it first")
    seq = iter(range(1_000_000))

    def ours(path: str) -> None:
        assert write_parquet(panes, path) == expected

    def observed(path: str) -> None:
        obs = Observation(f"panes_{next(seq)}")
        panes.observe(obs, F.count(F.lit(1)).alias("n")).write.mode("overwrite").parquet(path)
        assert obs.get["n"] == expected

    def with_options(options: dict[str, str]) -> Callable[[str], None]:
        return lambda path: panes.write.mode("overwrite").options(**options).parquet(path)

    return {
        "observed": observed,
        "pane_files": ours,
        "plain": lambda path: panes.write.mode("overwrite").parquet(path),
        "no_size_stats": with_options(NO_SIZE_STATS),
        "no_size_stats_plain_constants": with_options({**NO_SIZE_STATS, **PLAIN_CONSTANTS}),
        "four_columns": lambda path: four.write.mode("overwrite").parquet(path),
        "noop": lambda path: panes.write.format("noop").mode("overwrite").save(),
        "count": lambda path: panes._jdf.queryExecution().toRdd().count(),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=45_000,
                    help="panes per write (a 2M-event benchmark batch emits ~43k)")
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "pane_write.json"))
    args = ap.parse_args()

    from pyspark.sql import functions as F

    from jobs.config import Settings
    from jobs.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="tidemark-pane-write-"))
    try:
        spark = build_session(
            Settings.from_env({"TIDEMARK_HOME": str(work / "home"),
                               "TIDEMARK_SPARK_MASTER": "local[2]"}),
            app_name="bench-pane-write", shuffle_partitions=2)
        panes = pane_rows(spark, args.rows).cache()
        expected = panes.count()
        four = panes.select(
            F.struct(F.timestamp_millis("window_start").alias("start"),
                     F.timestamp_millis("window_end").alias("end")).alias("window"),
            F.col("key").alias("team"), F.lit(7).cast("long").alias("total"),
            F.lit(3).cast("long").alias("n")).cache()
        four.count()
        write = writers(panes, expected, four)
        runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
        load_before = os.getloadavg()
        for _ in range(args.rounds):
            for v in VARIANTS:
                cpu0, wall0 = tree_cpu_s(os.getpid()), time.monotonic()
                for n in range(args.writes):
                    write[v](str(work / v / f"batch_id={n}"))
                runs[v].append({
                    "cpu_ms_per_write": round((tree_cpu_s(os.getpid()) - cpu0) * 1000 / args.writes, 1),
                    "wall_ms_per_write": round((time.monotonic() - wall0) * 1000 / args.writes, 1),
                })
        spark.stop()
        medians = {v: {
            "cpu_ms_per_write_median": statistics.median(r["cpu_ms_per_write"] for r in rs[1:]),
            "wall_ms_per_write_median": statistics.median(r["wall_ms_per_write"] for r in rs[1:]),
        } for v, rs in runs.items()}
        result: dict[str, Any] = {
            "benchmark": "pane_write",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"cpus": os.cpu_count(), "load_avg_before": load_before,
                        "load_avg_at_end": os.getloadavg()},
            "config": {"rows_per_write": args.rows, "writes": args.writes,
                       "rounds": args.rounds, "master": "local[2]"},
            "results": {v: {**medians[v], "rounds": rs} for v, rs in runs.items()},
        }
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
        for v in VARIANTS:
            r = medians[v]
            print(f"{v:30s} cpu {r['cpu_ms_per_write_median']:7.1f} ms  wall "
                  f"{r['wall_ms_per_write_median']:7.1f} ms per write")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
