"""The Spark home the driver JVM starts with: pyspark's own, seen without ``pyspark.zip``.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the path of every Python process it
starts. The zip holds no byte code, so each such process compiles the pyspark modules it
imports from source. The worker daemon takes the zip off its workers' path
(jobs/spark/worker_daemon.py), but Spark also starts Python processes of its own on the driver,
without the daemon: the engine path's stateful operator starts one at every query start to
check its state schema, and it spent ~0.7 s of CPU compiling pyspark (docs/performance.md).

When the driver JVM would run with pyspark's own installation as its Spark home and its
Python processes run this interpreter (so the installed, byte-compiled pyspark of the same
release is importable), the JVM is started with a home that links to pyspark's scripts, jars
and configuration, with an empty ``python/lib``: Spark's path entries for ``pyspark.zip`` and
py4j's zip then name files that do not exist, Python skips them, and pyspark and py4j come from the
installation. A Spark home set by the user (a Spark distribution) is left alone, and so are
the executors of a cluster, which start with their own home.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from jobs.spark.jvm import BUILD

ENV = "SPARK_HOME"

LINKED = ("bin", "jars", "sbin", "conf", "RELEASE")
"""What Spark's launcher and JVM read from a Spark home (scripts, jars, configuration). No
Python source is linked: the home lives in the source tree's build directory, where linked
modules would be found by tools that walk it (mypy)."""


def _same(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _py4j_zip_needed(lib: Path) -> bool:
    """Whether Spark's py4j zip must stay reachable: the installed py4j is missing or another
    release than the zip's (``py4j-<version>-src.zip``)."""
    try:
        import py4j.version
    except ImportError:
        return True
    return not (lib / f"py4j-{py4j.version.__version__}-src.zip").is_file()


def driver_spark_home(worker_python: str) -> Path | None:
    """The home to start the driver JVM with, or None to leave ``SPARK_HOME`` as it is.

    ``worker_python``: the interpreter Spark runs for Python processes
    (``spark.pyspark.python``)."""
    import pyspark

    installed = Path(pyspark.__file__).parent
    home = BUILD / f"spark-home-{pyspark.__version__}"
    current = os.environ.get(ENV)
    if current and not (_same(current, installed) or _same(current, home)):
        return None  # the user's Spark distribution
    if not _same(worker_python, sys.executable):
        return None  # another interpreter: its pyspark, if any, is unknown here
    lib = installed / "python" / "lib"
    if not (lib / "pyspark.zip").is_file():
        return None
    if _complete(home, installed, lib):
        return home
    return _create(home, installed, lib)


def _entries(installed: Path) -> list[str]:
    return [name for name in LINKED if (installed / name).exists()]


def _complete(home: Path, installed: Path, lib: Path) -> bool:
    """Whether ``home`` holds exactly the links to this installation's entries (a moved or
    upgraded venv leaves links to elsewhere)."""
    if not home.is_dir():
        return False
    if sorted(os.listdir(home)) != sorted([*_entries(installed), "python"]):
        return False
    for name in _entries(installed):
        link = home / name
        if not link.is_symlink() or os.readlink(link) != str(installed / name):
            return False
    py4j = home / "python" / "lib" / "py4j"
    return py4j.exists() == _py4j_zip_needed(lib)


def _create(home: Path, installed: Path, lib: Path) -> Path | None:
    """Build the home beside its final place and move it there in one rename. Drivers
    starting at once each build one and the first rename wins; a complete home is never
    removed (a JVM may be starting with it), a stale one is moved aside and deleted."""
    BUILD.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=".spark-home-", dir=BUILD))
    try:
        for name in _entries(installed):
            (staged / name).symlink_to(installed / name)
        (staged / "python" / "lib").mkdir(parents=True)
        if _py4j_zip_needed(lib):
            for z in lib.glob("py4j-*-src.zip"):
                (staged / "python" / "lib" / z.name).symlink_to(z)
            (staged / "python" / "lib" / "py4j").touch()  # marks that the zip was kept
        for _ in range(2):
            try:
                os.rename(staged, home)
                return home
            except OSError:
                if _complete(home, installed, lib):
                    return home  # another driver made it first
                aside = Path(tempfile.mkdtemp(prefix=".spark-home-stale-", dir=BUILD))
                os.rename(home, aside / "home")
                shutil.rmtree(aside, ignore_errors=True)  # links only: nothing they name
        return None
    except OSError:
        return None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
