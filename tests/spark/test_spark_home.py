"""The driver JVM's Spark home: pyspark's installation without ``pyspark.zip``
(jobs/spark/spark_home.py), so the Python processes Spark starts on the driver import the
installed, byte-compiled pyspark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyspark
import pytest

from jobs.spark.spark_home import driver_spark_home

INSTALLED = Path(pyspark.__file__).parent.resolve()


def test_a_python_process_spark_starts_on_the_driver_imports_the_installed_pyspark(
        spark: Any) -> None:
    """The path the session's JVM gives the Python processes it starts (Spark's own
    ``PythonUtils.sparkPythonPath``, before the job's entries) resolves ``pyspark`` to the
    installed, compiled package, not to a zip compiled at every start."""
    jvm = spark.sparkContext._jvm
    home = Path(jvm.java.lang.System.getenv("SPARK_HOME"))
    assert home == driver_spark_home(sys.executable)
    spark_path = jvm.org.apache.spark.api.python.PythonUtils.sparkPythonPath().split(os.pathsep)
    zips = [p for p in spark_path if p.endswith(".zip")]
    assert zips and not any(Path(p).exists() for p in zips), spark_path
    out = subprocess.run(
        [sys.executable, "-c", "import pyspark, py4j; print(pyspark.__file__, py4j.__file__)"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(spark_path)},
        capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == pyspark.__file__
    assert Path(out[0]).resolve().parent == INSTALLED
    assert Path(out[1]).is_file(), out  # py4j from the installation too, not a zip member


def test_the_home_holds_pyspark_s_scripts_and_jars_but_no_python_zip() -> None:
    home = driver_spark_home(sys.executable)
    assert home is not None
    assert (home / "bin" / "spark-submit").resolve() == (INSTALLED / "bin" / "spark-submit")
    assert sorted(p.name for p in (home / "jars").iterdir()) == sorted(
        p.name for p in (INSTALLED / "jars").iterdir())
    assert not (home / "python" / "lib" / "pyspark.zip").exists()
    # no Python source: the home sits in the source tree's build directory, which mypy walks
    assert sorted(os.listdir(home)) == sorted(
        [*(n for n in ("bin", "jars", "sbin", "conf", "RELEASE") if (INSTALLED / n).exists()),
         "python"])
    assert (INSTALLED / "python" / "lib" / "pyspark.zip").is_file()  # nothing was removed


def test_a_stale_home_is_rebuilt(tmp_path: Path) -> None:
    """A home whose links lead elsewhere (a moved venv) is replaced, not trusted."""
    home = driver_spark_home(sys.executable)
    assert home is not None
    (home / "jars").unlink()
    (home / "jars").symlink_to(tmp_path)
    assert driver_spark_home(sys.executable) == home
    assert (home / "jars").resolve() == INSTALLED / "jars"


def test_a_users_spark_distribution_is_left_alone(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert driver_spark_home(sys.executable) is None
    monkeypatch.setenv("SPARK_HOME", str(INSTALLED))
    assert driver_spark_home(sys.executable) is not None


def test_another_interpreter_keeps_spark_s_zip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers run by an interpreter other than this one may have no pyspark installed."""
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert driver_spark_home("/usr/bin/python3") is None
