"""Class-data sharing for the driver JVM: Spark's classes loaded from an archive, not from jars.

Why: a fresh driver JVM (every job start, every restart Airflow makes, every migration and
every ``tidemark state``) loads ~20,000 classes from pyspark's jars and verifies their bytecode.
Measured on this machine (2M-event native-path run, ``sun.cls.time``): 5-6 s of class loading
while the session starts and another 3.7-4.6 s inside the running query, most of it in the
first micro-batches; with the archive, 2.3-2.8 s and 1.2-1.5 s. On two cores that is CPU
taken from the first batches (docs/performance.md, "What limits each number").

How: Java 17's dynamic archive (JEP 350). ``python -m jobs.spark.cds`` (run by ``make
install``) starts a driver with ``-XX:ArchiveClassesAtExit``, runs a small native-path job and
a small engine-path job end to end (file source, gate, RocksDB state, Parquet panes, Python
workers), lets the JVM exit normally, and publishes the archive atomically under a name that
carries everything the archive depends on: the JVM binary and pyspark's jars (names, sizes,
modification times). :func:`driver_options` then adds ``-XX:SharedArchiveFile`` to the
driver's options when that archive exists.

Safe by construction: the JVM checks the archive against its own version and class path at
start and, when anything differs, runs without it (``-Xshare:auto``, Java's default); the
archive's log tags are silenced so a mismatch prints nothing. Only the driver uses it: on a
cluster the executors start with another class path. ``TIDEMARK_JVM_CDS=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from jobs.config import Settings
from jobs.jvmdeps.jdk import jdk_tool
from jobs.spark.jvm import BUILD

ENV_SWITCH = "TIDEMARK_JVM_CDS"
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""The archive's own log tags: a mismatched archive is skipped without a word on stdout."""


def archive_path() -> Path | None:
    """Where the archive for this JVM and these Spark jars lives (it may not exist yet);
    None without a ``java`` binary."""
    import pyspark

    found = jdk_tool("java")
    if found is None:
        return None
    java = Path(found).resolve()
    digest = hashlib.sha256()
    home = java.parent.parent
    for p in (java, home / "lib" / "server" / "libjvm.so", home / "lib" / "modules"):
        if p.exists():
            st = p.stat()
            digest.update(f"{p}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    jars = Path(pyspark.__file__).parent / "jars"
    for jar in sorted(jars.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return BUILD / f"tidemark-driver-{digest.hexdigest()[:12]}.jsa"


def enabled() -> bool:
    """False when ``TIDEMARK_JVM_CDS`` (or ``jvm_cds`` in the settings file) turns it off."""
    value = Settings.from_env().value(ENV_SWITCH) or "on"
    return value.lower() not in ("off", "0", "false", "no")


def driver_options() -> str:
    """JVM options for the driver: the archive when it exists (else nothing)."""
    if not enabled():
        return ""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def ensure_archive(timeout: float = 600.0) -> Path | None:
    """The archive, created if missing (one warm-up driver, ~1 min); None when it cannot be
    made (no JVM, or the warm-up failed: jobs then simply run without it)."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file():
        return path
    BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        staged = Path(tmp) / path.name
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "jobs.spark.cds", "--warm-up", str(staged), tmp],
                capture_output=True, text=True, timeout=timeout,
                env={**os.environ, ENV_SWITCH: "off"},
            )
            failure = "" if proc.returncode == 0 else (proc.stderr or proc.stdout)[-2000:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            failure = str(exc)
        if failure or not staged.is_file():
            print(f"class-data sharing archive not created:\n{failure}", file=sys.stderr)
            return None
        publish(staged, path)
    return path


def publish(staged: Path, path: Path) -> None:
    """Move a finished archive to ``path`` atomically (concurrent builders each publish a whole
    archive) and delete the archives older JVMs or jars left beside it (~200 MB each, and no
    driver of this installation can use them; a JVM still mapping one keeps its pages)."""
    os.replace(staged, path)
    for old in path.parent.glob("tidemark-driver-*.jsa"):
        if old != path:
            old.unlink(missing_ok=True)


def _warm_up(archive: Path, work: Path) -> None:
    """Run what a tidemark driver runs, in a JVM that writes ``archive`` when it exits."""
    import json

    from pyspark import SparkContext

    from jobs.config import Settings
    from jobs.definition import load_definition
    from jobs.spark.context import JobContext
    from jobs.spark.runner import JobRunner, RunOptions
    from jobs.spark.session import THROUGHPUT_GC, build_session

    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    t0 = 1_700_000_000_000
    for f in range(2):
        lines = [json.dumps({"team": f"t{i % 7}", "score": i, "et": t0 + f * 60_000 + i * 500})
                 for i in range(200)]
        lines += ["{not json", json.dumps({"team": "late", "score": 1, "et": t0})]
        path = data / f"part-{f:04d}.json"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))
    settings = Settings.from_env({"TIDEMARK_HOME": str(work / "home"),
                                  "TIDEMARK_SPARK_MASTER": "local[2]"})
    spark = build_session(settings, app_name="tidemark-cds", shuffle_partitions=2, extra_conf={
        "spark.driver.extraJavaOptions": f"{THROUGHPUT_GC} -XX:ArchiveClassesAtExit={archive}"})
    base = {
        "name": "cds", "source": {"kind": "files", "path": str(data), "format": "json",
                                  "schema": "team STRING, score INT, et BIGINT"},
        "key": "team", "event_time": "et", "watermark": {"delay": "2s"},
        "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
    }
    engine = {**base, "name": "cds_engine", "allowed_lateness": "10s",
              "accumulation": "retracting",
              "trigger": {"emit": "custom", "early": {"count": 50}, "on_time": True,
                          "late": {"count": 1}}}
    for spec in (base, engine):
        ctx = JobContext.create(load_definition(spec), settings)
        JobRunner(spark, ctx, RunOptions(until_idle=True)).run()
        spark.read.parquet(ctx.panes_path).count()
    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stdin is not None:
        proc.stdin.close()  # the JVM exits on EOF, and writes the archive as it does
        proc.wait(timeout=300)


if __name__ == "__main__":  # ``python -m jobs.spark.cds``: build ahead (the Makefile does)
    if len(sys.argv) == 4 and sys.argv[1] == "--warm-up":
        _warm_up(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        built = ensure_archive()
        print(built if built else "no class-data sharing archive: drivers load classes from jars")
