"""The session tidemark runs every job on: its tunings are in effect (docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jobs.spark.session import THROUGHPUT_GC


def test_a_landed_file_is_parsed_by_every_core(spark: Any, tmp_path: Path) -> None:
    """A 1.5 MB file (one micro-batch's worth) is cut into one even split per core: with
    Spark's default open cost it was a single split, parsed by one core while the other idled."""
    path = tmp_path / "landed.json"
    n = 30_000
    path.write_text("".join(
        json.dumps({"team": f"t{i % 97}", "score": i % 100, "et": 1_767_225_600_000 + i}) + "\n"
        for i in range(n)))
    assert path.stat().st_size > 1_000_000
    df = spark.read.schema("team STRING, score INT, et BIGINT").json(str(path))
    sizes = df.rdd.glom().map(len).collect()
    cores = spark.sparkContext.defaultParallelism
    assert len(sizes) == cores == 2, sizes
    assert sum(sizes) == n
    assert min(sizes) >= 0.4 * n, f"uneven splits {sizes}"


def test_the_jvm_runs_the_throughput_collector(spark: Any) -> None:
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    args = list(runtime.getInputArguments())
    assert THROUGHPUT_GC in args, args



def test_python_workers_import_from_compiled_bytecode(spark: Any) -> None:
    """``make install`` compiles the dependencies' and tidemark's bytecode once: on a machine
    with ``PYTHONDONTWRITEBYTECODE`` (ours) every Python worker would otherwise compile
    pandas, NumPy and sqlglot from source when it starts (docs/performance.md, the engine path's limits).
    pyspark itself comes from the installed, compiled copy, not Spark's ``pyspark.zip``
    (jobs/spark/worker_daemon.py)."""

    def uncompiled(_: Any) -> list[str]:
        """In the worker: the modules an engine task imports that it had to compile."""
        import importlib
        import importlib.util
        import os

        missing = []
        for name in ("pyspark.worker", "pyspark.sql.pandas.serializers", "pandas.core.frame", "numpy.lib", "pyarrow.pandas_compat",
                     "sqlglot.dialects", "jobs.engine.engine", "jobs.spark.engine_path.processor"):
            source = str(importlib.import_module(name).__file__)
            if not os.path.exists(importlib.util.cache_from_source(source)):
                missing.append(source)
        return missing

    missing = spark.sparkContext.parallelize([0], 1).flatMap(uncompiled).collect()
    assert missing == []


def test_python_workers_are_forked_by_a_daemon_holding_numba_already(spark: Any) -> None:
    """The engine path's Python functions carry the pre-load (jobs/spark/worker_daemon.py):
    an operator sees numba's dispatcher library mapped in their workers' daemon, which never
    runs a task itself, so every worker it forks starts with it. Other Python functions of
    the session get a daemon of their own that loads nothing."""
    from jobs.spark.worker_daemon import engine_preload

    def daemon(_: Any) -> list[tuple[str, bool]]:
        import os

        ppid = os.getppid()
        with open(f"/proc/{ppid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode()
        with open(f"/proc/{ppid}/maps") as f:
            numba = "numba/_dispatcher" in f.read()
        return [(cmdline, numba)]

    sc = spark.sparkContext
    [(cmdline, numba)] = sc.parallelize([0], 1).flatMap(daemon).collect()
    assert "jobs.spark.worker_daemon" in cmdline
    assert not numba
    with engine_preload(sc):  # the function is wrapped (with its environment) at collect
        [(cmdline, numba)] = sc.parallelize([0], 1).flatMap(daemon).collect()
    assert "jobs.spark.worker_daemon" in cmdline
    assert numba
