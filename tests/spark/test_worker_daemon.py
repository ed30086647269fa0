"""Which pyspark the workers import: the installed copy when it is Spark's own release."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark

from jobs.spark.worker_daemon import installed_path

INSTALLED = str(Path(pyspark.__file__).parents[1])
SPARK_ZIP = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"


def _zip(tmp_path: Path, version_py: bytes) -> str:
    path = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pyspark/__init__.py", b"")
        zf.writestr("pyspark/version.py", version_py)
    return str(path)


def test_sparks_zip_leaves_the_path_when_the_installed_pyspark_is_the_same_release() -> None:
    assert SPARK_ZIP.exists()
    path = [str(SPARK_ZIP), "/elsewhere", INSTALLED]
    assert installed_path(path) == ["/elsewhere", INSTALLED]


def test_a_zip_of_another_release_or_no_installed_pyspark_keeps_the_zip(tmp_path: Path) -> None:
    other = _zip(tmp_path, b'__version__ = "0.0.1"\n')
    assert installed_path([other, INSTALLED]) == [other, INSTALLED]
    alone = str(SPARK_ZIP)
    assert installed_path([alone, str(tmp_path)]) == [alone, str(tmp_path)]
    assert installed_path([INSTALLED]) == [INSTALLED]
