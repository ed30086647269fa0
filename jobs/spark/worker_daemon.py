"""The Python worker daemon Spark starts (``spark.python.daemon.module``): pyspark's own daemon,
importing the installed pyspark instead of Spark's ``pyspark.zip``.

Spark puts ``pyspark.zip`` first on every worker's path. The zip holds no byte code, so each
worker process compiled pyspark from source again (about 2 s of CPU per worker, measured in
docs/performance.md). The venv's pyspark is the same release, already byte-compiled by the
install; this daemon takes the zip off the path when that installed copy exists and carries the
same version, and keeps the zip otherwise (a cluster whose Python has no pyspark installed).
The workers the daemon forks inherit its path.
"""

from __future__ import annotations

import importlib.machinery
import sys
import zipfile
from pathlib import Path


def _version_text(root: Path) -> bytes | None:
    """``pyspark/version.py`` under ``root`` (a directory or a zip), or None."""
    try:
        if root.is_file():
            with zipfile.ZipFile(root) as zf:
                return zf.read("pyspark/version.py")
        return (root / "pyspark" / "version.py").read_bytes()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def installed_path(path: list[str]) -> list[str]:
    """``path`` without Spark's ``pyspark.zip`` when the rest of ``path`` holds a pyspark of the
    same version; ``path`` unchanged otherwise."""
    zips = [p for p in path if Path(p).name == "pyspark.zip"]
    if not zips:
        return path
    rest = [p for p in path if p not in zips]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return path
    installed = Path(next(iter(spec.submodule_search_locations))).parent
    if _version_text(installed) != _version_text(Path(zips[0])) or _version_text(installed) is None:
        return path
    return rest


if __name__ == "__main__":
    sys.path[:] = installed_path(sys.path)
    from pyspark import daemon

    daemon.manager()
