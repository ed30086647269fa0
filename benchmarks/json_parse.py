"""What parsing JSON costs per record (a diagnostic, not a throughput benchmark).

The benchmark's events (``{"team":"t123","score":45,"et":1767225600000}``) are cached as
binary values in one Spark session (``local[1]``, tidemark's session settings), then parsed
``--rounds`` times per variant, variants alternated, each parse summed so every column is read:

- ``length``: the values' lengths only (reading the cached strings, no parse);
- ``from_json``: Spark's ``from_json`` with the corrupt-record column (PERMISSIVE), as the
  Kafka source parsed before tidemark's plain-case parser;
- ``from_json_plain``: ``from_json`` without the corrupt-record column, as the hand-written
  Kafka query of ``benchmarks/spark_throughput.py`` parses;
- ``tidemark``: ``jobs.spark.fast_json.parse_json`` (the plain-case parser, ``from_json``
  behind it);
- ``json_files`` / ``tidemark_files``: the same lines as a JSON Lines file read by Spark's
  JSON source and by ``FastJsonFileFormat``.

Reported: CPU seconds of the driver's process tree per variant and round, and the median over
the rounds after the first (warm-up). Writes benchmarks/results/json_parse.json.

Usage: python benchmarks/json_parse.py [--events 2000000] [--rounds 5]
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

SCHEMA = "team STRING, score INT, et BIGINT"
VARIANTS = ("length", "from_json", "from_json_plain", "tidemark", "json_files",
            "tidemark_files")


def queries(spark: Any, events: int, files: Path) -> dict[str, Callable[[], Any]]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from jobs.spark.fast_json import FAST_JSON_FILE_FORMAT, parse_json
    from jobs.spark.schema import CORRUPT_COLUMN

    df = spark.range(events).select(F.format_string(
        '{"team":"t%d","score":%d,"et":%d}', (F.col("id") * 7919) % 10000, F.col("id") % 101,
        F.lit(1_767_225_600_000) + F.col("id") * 1800).alias("s"))
    df.write.mode("overwrite").text(str(files))
    cached = df.select(F.col("s").cast("binary").alias("value")).cache()
    cached.count()
    text = F.col("value").cast("string")
    schema = StructType.fromDDL(SCHEMA)
    assert isinstance(schema, StructType)
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}
    with_corrupt = f"{SCHEMA}, {CORRUPT_COLUMN} STRING"

    def total(v: Any) -> Any:
        return [F.sum(v["score"]), F.count(v["team"]), F.sum(v["et"])]

    def from_files(fmt: str) -> Any:
        read = (spark.read.schema(with_corrupt).format(fmt).options(**options)
                .load(str(files)))
        return read.agg(F.sum("score"), F.count("team"), F.sum("et"))

    plans: dict[str, Callable[[], Any]] = {
        "length": lambda: cached.agg(F.sum(F.length(text))),
        "from_json": lambda: cached.select(F.from_json(text, with_corrupt, options).alias("v"))
        .agg(*total(F.col("v"))),
        "from_json_plain": lambda: cached.select(F.from_json(text, SCHEMA).alias("v"))
        .agg(*total(F.col("v"))),
        "tidemark": lambda: cached.select(parse_json(
            spark, text, schema, CORRUPT_COLUMN, options).alias("v"))
        .agg(*total(F.col("v"))),
        "json_files": lambda: from_files("json"),
        "tidemark_files": lambda: from_files(FAST_JSON_FILE_FORMAT),
    }

    def collect(plan: Callable[[], Any]) -> Callable[[], Any]:
        # a new DataFrame per run: collecting one DataFrame twice reuses its shuffle's output
        return lambda: plan().collect()

    return {name: collect(plan) for name, plan in plans.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "json_parse.json"))
    args = ap.parse_args()

    from jobs.config import Settings
    from jobs.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="tidemark-json-parse-"))
    try:
        spark = build_session(
            Settings.from_env({"TIDEMARK_HOME": str(work / "home"),
                               "TIDEMARK_SPARK_MASTER": "local[1]"}),
            app_name="bench-json-parse", shuffle_partitions=1)
        run = queries(spark, args.events, work / "lines")
        answers: dict[str, Any] = {}
        cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
        load_before = os.getloadavg()
        for r in range(args.rounds):
            order = VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))
            for v in order:
                cpu0 = tree_cpu_s(os.getpid())
                answers[v] = [tuple(row) for row in run[v]()]
                cpu[v].append(round(tree_cpu_s(os.getpid()) - cpu0, 2))
        spark.stop()
        parsed = {v: answers[v] for v in VARIANTS if v != "length"}
        result: dict[str, Any] = {
            "benchmark": "json_parse",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"cpus": os.cpu_count(), "load_avg_before": load_before,
                        "load_avg_at_end": os.getloadavg()},
            "config": {"events": args.events, "rounds": args.rounds, "master": "local[1]"},
            "same_answers": len({json.dumps(a) for a in parsed.values()}) == 1,
            "results": {v: {"cpu_s_median": statistics.median(cpu[v][1:]), "cpu_s": cpu[v]}
                        for v in VARIANTS},
        }
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
        for v in VARIANTS:
            print(f"{v:16s} cpu {result['results'][v]['cpu_s_median']:6.2f} s  {cpu[v]}")
        print("same answers:", result["same_answers"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
