"""Building the SparkSession every tidemark Spark entry point uses.

One factory so that the job, the state inspector, the tests and the benchmark run with the same
state-store configuration: the RocksDB provider (state bigger than memory, and required by the
``transformWithState`` family), changelog checkpointing (cheap commits, and the State Data
Source's change feed), and a small shuffle-partition count (the state store keeps one instance
per shuffle partition; the count is frozen into the checkpoint, so it must not depend on the
machine the job happens to start on).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.config import Settings
from jobs.spark.cds import driver_options
from jobs.spark.spark_home import ENV as SPARK_HOME_ENV
from jobs.spark.spark_home import driver_spark_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DEFAULT_SHUFFLE_PARTITIONS = 4

FILE_OPEN_COST_BYTES = 64 * 1024
THROUGHPUT_GC = "-XX:+UseParallelGC"

BASE_CONF: dict[str, str] = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.files.openCostInBytes": str(FILE_OPEN_COST_BYTES),
    "spark.driver.extraJavaOptions": THROUGHPUT_GC,
    "spark.executor.extraJavaOptions": THROUGHPUT_GC,
    "spark.python.daemon.module": "jobs.spark.worker_daemon",
}
"""Configuration every session gets. Adaptive execution is off because it may coalesce the
shuffle partitions of a stateful query, which is rejected for stateful operators anyway and only
adds planning time to small micro-batches. ANSI mode is off so that an expression that cannot
be evaluated for one record (a bad cast) yields null, and the record becomes a dead letter,
instead of failing the whole micro-batch (docs/semantics.md: malformed records never stop the job).

``openCostInBytes``: Spark cuts a micro-batch's files into splits of
``max(openCostInBytes, total bytes / cores)``, counting every file as ``size + openCostInBytes``.
With the default (4 MiB) a landed 4.7 MB JSON file became one split holding 95% of its records
and one holding 5%, so parsing, the gate and the partial aggregation ran on one core
(docs/performance.md, "What limits each number"). A small open cost gives one even split per core; files are
still packed by the same rule, so a batch of many small files does not become many tasks.

``spark.python.daemon.module``: pyspark's worker daemon, started so that workers import the
installed, byte-compiled pyspark rather than Spark's ``pyspark.zip`` (jobs/spark/worker_daemon.py).
The engine path's operator carries ``TIDEMARK_WORKER_PRELOAD=engine``
(``worker_daemon.engine_preload``): its daemon loads numba and the engine kernels once, before
it forks, so no worker's first engine-path task pays for them; the packing stage carries
``arrow`` (pyarrow and pandas only); other Python tasks get a daemon that loads nothing.

``-XX:+UseParallelGC`` (driver and executors): a micro-batch job wants throughput more than
short pauses (its state lives off-heap in RocksDB; the heap holds a batch's rows). Measured
against Java 17's default G1: 5-9% less CPU for the same run, for native Spark and tidemark
alike (docs/performance.md, "What limits each number"). The option reaches the driver because a PySpark session
launches its JVM with the builder's configuration; a user's own ``extraJavaOptions`` (through
``extra_conf``) replace it. ``build_session`` adds the class-data sharing archive to the
driver's options when it exists (jobs/spark/cds.py).

The driver JVM starts with pyspark's installation as its Spark home, seen without
``pyspark.zip`` (jobs/spark/spark_home.py), so the Python processes Spark starts on the driver
import the installed, byte-compiled pyspark, as the worker daemon's workers do."""


PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the ``jobs`` package; Python workers need it on their path to import
the engine (the editable install is not visible to a worker started by a cluster's executor)."""


def python_worker_env() -> dict[str, str]:
    """Interpreter and import path for Python workers: the same venv and project as the driver,
    so a worker never falls back to a system Python without pyarrow or tidemark."""
    path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
    return {"PYSPARK_PYTHON": sys.executable, "PYTHONPATH": path}


def _gate_jar() -> Path | None:
    """tidemark's JVM functions (jobs/spark/jvm.py), built if needed; None without a JDK."""
    import logging
    import subprocess

    from jobs.spark.jvm import ensure_jar

    try:
        return ensure_jar()
    except (OSError, subprocess.CalledProcessError) as exc:
        logging.getLogger(__name__).warning(
            "tidemark JVM functions not built (%s); the native path uses the Python gate", exc)
        return None


def _bundle_jars(name: str) -> list[str]:
    """A JVM bundle's jars when installed (jobs/jvmdeps/), else none: a job whose source or
    sink needs them then fails at start with the bundle's name (jobs/spark/kafka_source.py)."""
    from jobs.jvmdeps import JvmDepsError, bundle_jars

    try:
        return [str(p) for p in bundle_jars(name)]
    except JvmDepsError:
        return []


def layer_conf(base: Mapping[str, str], *layers: Mapping[str, str]) -> dict[str, str]:
    """``base`` with each layer over it in turn; ``spark.jars`` of a layer is added to the jars
    before it (tidemark's own jar is never replaced), every other key replaced."""
    conf = dict(base)
    jars = [j for j in conf.get("spark.jars", "").split(",") if j]
    for layer in layers:
        rest = dict(layer)
        jars.extend(j for j in rest.pop("spark.jars", "").split(",") if j and j not in jars)
        conf.update(rest)
    if jars:
        conf["spark.jars"] = ",".join(jars)
    return conf


def build_session(
    settings: Settings | None = None,
    app_name: str = "tidemark",
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    extra_conf: Mapping[str, str] | None = None,
    ui: bool = False,
    job: str | None = None,
) -> SparkSession:
    """A SparkSession on ``settings.spark_master`` (``local[*]`` by default; a cluster URL works
    unchanged) with the tidemark state-store configuration.

    ``s3a://`` locations are reached with the S3A connector's jars (bundle ``s3a``) and the
    settings' S3 endpoint and credentials (``Settings.s3``) as ``spark.hadoop.fs.s3a.*``.
    Over tidemark's configuration come the settings' Spark configuration (the platform's, then
    ``job``'s own: ``Settings.spark_conf_for``), then ``extra_conf`` (tests and the benchmark
    tune through it).
    """
    from pyspark.sql import SparkSession

    settings = settings or Settings.from_env()
    builder = SparkSession.builder.master(settings.spark_master).appName(app_name)
    env = python_worker_env()
    os.environ.setdefault("PYSPARK_PYTHON", env["PYSPARK_PYTHON"])
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    conf = dict(BASE_CONF)
    conf["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    conf["spark.executorEnv.PYTHONPATH"] = env["PYTHONPATH"]
    conf["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    conf["spark.ui.enabled"] = "true" if ui else "false"
    jars = [str(j) for j in (_gate_jar(),) if j is not None] + _bundle_jars("spark-kafka")
    jars += _bundle_jars("s3a")  # Hadoop's S3A connector: s3a:// locations (docs/storage.md)
    conf.update(settings.s3().spark_conf())
    if jars:
        conf["spark.jars"] = ",".join(jars)
    cds = driver_options()
    if cds:
        conf["spark.driver.extraJavaOptions"] += f" {cds}"
    conf = layer_conf(conf, settings.spark_conf_for(job), extra_conf or {})
    for name, value in conf.items():
        builder = builder.config(name, value)
    from pyspark import SparkContext

    if SparkContext._active_spark_context is None:  # the JVM starts now: choose its home
        home = driver_spark_home(conf.get("spark.pyspark.python", sys.executable))
        if home is not None:
            os.environ[SPARK_HOME_ENV] = str(home)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
