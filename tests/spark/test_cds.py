"""The driver JVM's class-data sharing archive (jobs/spark/cds.py): named for what it depends
on, used by every session build_session starts, ignored without a word when it does not fit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobs.spark import cds

ROOT = Path(__file__).resolve().parents[2]


def _driver(tmp_path: Path, body: str, env: dict[str, str],
            prelude: str = "") -> subprocess.CompletedProcess[str]:
    """A fresh Python driver (its own JVM) running ``body`` after building a session
    (``prelude`` runs before the session is built)."""
    script = textwrap.dedent(prelude) + textwrap.dedent("""
        from jobs.config import Settings
        from jobs.spark.session import build_session
        spark = build_session(Settings.from_env(
            {"TIDEMARK_HOME": %r, "TIDEMARK_SPARK_MASTER": "local[1]"}))
        spark.sparkContext.setLogLevel("ERROR")
    """) % str(tmp_path / "home") + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


def test_archive_name_changes_with_the_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"one")
    monkeypatch.setattr(pyspark, "__file__", str(tmp_path / "pyspark" / "__init__.py"))
    first = cds.archive_path()
    assert first is not None and first.name.startswith("tidemark-driver-")
    assert cds.archive_path() == first  # stable while nothing changes
    (jars / "spark-sql.jar").write_bytes(b"two")
    second = cds.archive_path()
    assert second != first  # a jar more: the old archive no longer describes the class path
    os.utime(jars / "spark-sql.jar", ns=(1, 1))
    assert cds.archive_path() not in (first, second)  # a replaced jar (new mtime) too


def test_publishing_replaces_stale_archives(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    stale = build / "tidemark-driver-000000000000.jsa"
    stale.write_bytes(b"old jdk")
    jar = build / "tidemark-spark-abc.jar"
    jar.write_bytes(b"gate")
    staged = tmp_path / "staged.jsa"
    staged.write_bytes(b"new")
    target = build / "tidemark-driver-111111111111.jsa"
    cds.publish(staged, target)
    assert target.read_bytes() == b"new" and not staged.exists()
    assert not stale.exists()  # an archive no driver here can use is gone
    assert jar.exists()  # nothing else in the build directory is touched


def test_switched_off_adds_no_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cds.ENV_SWITCH, "off")
    assert cds.driver_options() == ""


def test_a_missing_archive_adds_no_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cds.ENV_SWITCH, "on")
    monkeypatch.setattr(cds, "archive_path", lambda: tmp_path / "absent.jsa")
    assert cds.driver_options() == ""


def test_the_driver_loads_spark_from_the_archive(tmp_path: Path) -> None:
    archive = cds.ensure_archive()
    assert archive is not None and archive.is_file(), "the archive could not be built"
    log = tmp_path / "classes.log"
    proc = _driver(tmp_path, """
        print("ROWS", spark.range(5).count())
        print("OPTS", spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
    """, {"JAVA_TOOL_OPTIONS": f"-Xlog:class+load=info:file={log}",
          cds.ENV_SWITCH: "on"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 5" in proc.stdout
    assert f"-XX:SharedArchiveFile={archive}" in proc.stdout
    lines = log.read_text().splitlines()
    shared = [ln for ln in lines if "source: shared objects file (top)" in ln]
    from_jars = [ln for ln in lines if " org.apache.spark." in ln
                 and ("source: file:" in ln or "source: jar:" in ln)]
    assert any(" org.apache.spark.sql.SparkSession " in ln for ln in shared)
    assert len(shared) > 5000, f"only {len(shared)} classes came from the archive"
    spark_shared = [ln for ln in shared if " org.apache.spark." in ln]
    # what the warm-up job never touched still comes from the jars (here: range's classes)
    assert len(from_jars) < 0.05 * len(spark_shared), from_jars[:5]


def test_an_archive_that_does_not_fit_is_ignored_silently(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.jsa"
    bogus.write_bytes(b"\0" * 4096)
    proc = _driver(tmp_path, """
        print("ROWS", spark.range(5).count())
        print("VM", spark._jvm.java.lang.System.getProperty("java.vm.info"))
    """, {cds.ENV_SWITCH: "on"}, prelude=f"""
        from pathlib import Path
        import jobs.spark.cds
        jobs.spark.cds.archive_path = lambda: Path({str(bogus)!r})
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 5" in proc.stdout
    # nothing about the archive on the driver's output: a job's log stays clean
    assert "shared" not in proc.stdout.lower() and "cds" not in proc.stdout.lower()


def test_an_archive_from_another_class_path_is_ignored(tmp_path: Path) -> None:
    """The realistic mismatch: the archive was written for pyspark's jars, this driver's class
    path has one entry more; the JVM checks, runs without the archive, and says nothing."""
    archive = cds.ensure_archive()
    assert archive is not None
    extra = tmp_path / "extra-classes"
    extra.mkdir()
    log = tmp_path / "classes.log"
    proc = _driver(tmp_path, """
        print("ROWS", spark.range(5).count())
    """, {cds.ENV_SWITCH: "on", "JAVA_TOOL_OPTIONS": f"-Xlog:class+load=info:file={log}"},
        prelude=f"""
        import jobs.spark.session as s
        s.BASE_CONF["spark.driver.extraClassPath"] = {str(extra)!r}
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 5" in proc.stdout
    assert "shared" not in proc.stdout.lower() and "cds" not in proc.stdout.lower()
