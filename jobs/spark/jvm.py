"""tidemark's JVM functions: built from the Java sources next to this file, loaded into Spark.

Why Java at all: on the native path every record used to cross into a Python worker once, only
so the gate could read the batch's watermark and pick out the few malformed or late records.
``jvm/src/tidemark/spark/`` does that inside Spark's JVM (``BatchWatermark``, ``Gate``), so a
native job starts no Python worker. The jar is compiled on first use with the JDK's ``javac``
against pyspark's own jars and cached under a name carrying the hash of the sources (a changed
source can never be served by a stale jar). Without a JDK, or in a session whose JVM started
without the jar, :func:`register` returns False and the runner falls back to the Python gate
(same output; measured slower).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.config import Settings
from jobs.jvmdeps.jdk import jdk_tool

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCES = Path(__file__).parent / "jvm" / "src"
BUILD = Path(__file__).parent / "jvm" / "build"
FUNCTIONS_CLASS = "tidemark.spark.Functions"
PANE_FILES_CLASS = "tidemark.spark.PaneFiles"


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def jar_path() -> Path:
    """Where the jar for the current sources lives (it may not exist yet)."""
    digest = hashlib.sha256()
    for src in _sources():
        digest.update(src.relative_to(SOURCES).as_posix().encode())
        digest.update(src.read_bytes())
    return BUILD / f"tidemark-spark-{digest.hexdigest()[:12]}.jar"


def ensure_jar() -> Path | None:
    """The jar, compiled if needed; None when no JDK compiler is available."""
    jar = jar_path()
    if jar.exists():
        return jar
    javac = jdk_tool("javac")
    if javac is None:
        return None
    import pyspark

    classpath = str(Path(pyspark.__file__).parent / "jars" / "*")
    BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        classes = Path(tmp) / "classes"
        subprocess.run(
            [javac, "-nowarn", "--release", "17", "-encoding", "UTF-8", "-cp", classpath,
             "-d", str(classes), *map(str, _sources())],
            check=True, capture_output=True, text=True,
        )
        staged = Path(tmp) / jar.name
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for cls in sorted(classes.rglob("*.class")):
                zf.write(cls, cls.relative_to(classes).as_posix())
        os.replace(staged, jar)  # atomic: concurrent builders each publish a whole jar
    return jar


def register(spark: SparkSession) -> bool:
    """Register ``tidemark_gate`` in ``spark`` (the batch watermark is registered per
    checkpoint: :func:`register_our_watermark`); False when the session's JVM cannot load
    tidemark's classes (no jar on its class path)."""
    if Settings.from_env().value("TIDEMARK_GATE") == "python":
        return False
    try:
        jvm: Any = spark._jvm
        jvm.tidemark.spark.Functions.register(spark._jsparkSession)
    except Exception:  # noqa: BLE001 - any failure means: use the Python gate
        return False
    return True


_STATICS: dict[tuple[str, str], tuple[Any, Any]] = {}
"""(class, method) -> (the JVM view it was looked up in, the py4j member or None)."""


def static_method(spark: SparkSession, cls: str, name: str) -> Any | None:
    """The py4j handle of the static method ``cls.name`` in ``spark``'s JVM, looked up once per
    JVM (each lookup is a reflection round trip, and the per-batch callers run every
    micro-batch); None when the JVM has no such class (no tidemark jar on its class path)."""
    from py4j.java_gateway import JavaClass

    jvm: Any = spark._jvm
    hit = _STATICS.get((cls, name))
    if hit is None or hit[0] is not jvm:
        found = getattr(jvm, cls) if jvm is not None else None
        member = getattr(found, name) if isinstance(found, JavaClass) else None
        hit = _STATICS[(cls, name)] = (jvm, member)
    return hit[1]


def pane_files(spark: SparkSession) -> Any | None:
    """``tidemark.spark.PaneFiles.write`` in the session's JVM (a batch's panes written as
    Parquet files without a write query of its own: jobs/spark/sinks.py), or None when the
    session's JVM has no tidemark jar on its class path."""
    return static_method(spark, PANE_FILES_CLASS, "write")


def register_our_watermark(spark: SparkSession, checkpoint: str, shift: int,
                           allowed_lateness: int) -> str:
    """Register tidemark's watermark before the running batch of ``checkpoint`` (null: none
    yet; ``GateConfig.our_watermark`` of the batch watermark) as a function without arguments
    and return its name."""
    digest = hashlib.sha256(f"{checkpoint}\0{shift}\0{allowed_lateness}".encode())
    name = "tidemark_ours_" + digest.hexdigest()[:16]
    jvm: Any = spark._jvm
    jvm.tidemark.spark.Functions.registerOurWatermark(
        spark._jsparkSession, name, checkpoint, shift, allowed_lateness)
    return name


def register_batch_timestamp(spark: SparkSession, checkpoint: str) -> str:
    """Register the batch timestamp (offsets log ``batchTimestampMs``) of ``checkpoint`` as a
    function without arguments and return its name: the native path's ``emitted_at`` inside
    the streaming query (a literal would change the generated code every batch)."""
    name = "tidemark_ts_" + hashlib.sha256(checkpoint.encode()).hexdigest()[:16]
    jvm: Any = spark._jvm
    jvm.tidemark.spark.Functions.registerBatchTimestamp(spark._jsparkSession, name, checkpoint)
    return name


if __name__ == "__main__":  # ``python -m jobs.spark.jvm``: build ahead (the Makefile does)
    built = ensure_jar()
    print(built if built else "no javac: the native path will use the Python gate")
