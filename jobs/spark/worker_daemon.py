"""The Python worker daemon Spark starts (``spark.python.daemon.module``): pyspark's own daemon,
importing the installed pyspark instead of Spark's ``pyspark.zip``.

Spark puts ``pyspark.zip`` first on every worker's path. The zip holds no byte code, so each
worker process compiled pyspark from source again (about 2 s of CPU per worker, measured in
docs/performance.md). The venv's pyspark is the same release, already byte-compiled by the
install; this daemon takes the zip off the path when that installed copy exists and carries the
same version, and keeps the zip otherwise (a cluster whose Python has no pyspark installed).
The workers the daemon forks inherit its path. The zip's importer, which Python cached while
it looked for this module, is dropped as well (:func:`forget_importers`): pyspark's worker calls
``importlib.invalidate_caches()`` at the start of every task, which makes every cached zip
importer read its archive's directory again (~6 ms a task for ``pyspark.zip``, measured with
py-spy in docs/performance.md).

With ``TIDEMARK_WORKER_PRELOAD=engine`` in its environment (set by :func:`engine_preload` on
the engine path's stateful operator only) the daemon also imports numba and loads every cached engine kernel
(``jobs.engine.kernels.__main__.warm``) once, before it forks; ``engine:<window type>`` (what
the engine path sets: its definition's window) loads only the kernels of that window's engines
(0.4 against 0.9-1.2 s of CPU for fixed windows): each worker's first engine task
otherwise spent 3.6-3.9 s of CPU importing numba and loading the kernels from numba's cache
(docs/performance.md). numba without ``parallel=True`` starts no thread, so the fork pyspark
does after this is safe: after the pre-load the process runs one Python thread (checked by
:func:`preload`) and two native ones, numpy's OpenBLAS worker and pyarrow's jemalloc background
thread, both of which any pyspark worker starts anyway and both libraries reset at fork
(``pthread_atfork``). Spark keeps one daemon per (interpreter, environment) of a Python
function, so the engine path's functions get a pre-loading daemon and every other Python task
of the session (a native path's Python gate, a test's UDF) one that loads nothing. The engine path's
packing stage (``mapInArrow``) runs in a daemon of its own too (Spark starts one for it and one
for the stateful operator even with equal environments); it carries
``TIDEMARK_WORKER_PRELOAD=arrow``: that daemon imports pyarrow, pandas and pyspark's worker
(:func:`preload_arrow`), not the engine its workers never run. A failed
pre-load is logged once; workers then load the kernels on first use.

Before it forks, the daemon moves every object it holds into the GC's permanent generation
(:func:`freeze_loaded`): a reused pyspark worker runs a full ``gc.collect()`` after every task
(``pyspark/daemon.py``), and with numba and the kernels loaded that collection walked ~160k
objects, 0.05-0.09 s of CPU per task (docs/performance.md). Frozen objects are never walked
and are still freed by reference counting; what they are is modules, functions and types that
live as long as the process anyway. The engine daemon also imports the processor's modules and
pyspark's worker, so that the objects those imports create are frozen too.
"""

from __future__ import annotations

import gc
import importlib.machinery
import os
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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


def forget_importers(cache: dict[str, Any], removed: list[str]) -> None:
    """Drop from ``cache`` (``sys.path_importer_cache``) the importers of the ``removed`` path
    entries and of the directories inside them: nothing imports through them any more, and
    each would re-read its zip's directory on every ``importlib.invalidate_caches()``."""
    for entry in list(cache):
        if any(entry == r or entry.startswith(r + os.sep) for r in removed):
            del cache[entry]


PRELOAD_ENV = "TIDEMARK_WORKER_PRELOAD"
"""The environment variable naming what the daemon loads before it forks (``engine``)."""


@contextmanager
def engine_preload(sc: Any, what: str = "engine") -> Iterator[None]:
    """Python functions built inside the block carry ``TIDEMARK_WORKER_PRELOAD=<what>`` in
    their environment (pyspark copies ``sc.environment`` into each function it wraps); the
    session's environment is restored afterwards. A value the session already has (a user's
    ``spark.executorEnv.TIDEMARK_WORKER_PRELOAD``, e.g. ``off``) is kept."""
    env = sc.environment
    had = PRELOAD_ENV in env
    env.setdefault(PRELOAD_ENV, what)
    try:
        yield
    finally:
        if not had:
            env.pop(PRELOAD_ENV, None)


def preload(windows: list[str] | None = None) -> bool:
    """Load numba and the engine kernels (every one, or those of ``windows``' engines) into
    this process (about 2 s of CPU from numba's cache), and the modules an operator worker imports (the processor, pyspark's worker, pandas,
    pyarrow); True when done and no Python thread other than the main one runs afterwards (so
    forking stays safe). Never raises: a failure is
    reported on stderr once and the workers load the kernels on first use."""
    try:
        from jobs.engine.kernels.__main__ import warm

        if windows is None:
            warm()
        else:
            warm(windows)
        preload_arrow()
        import jobs.spark.engine_path.processor  # noqa: F401
        import jobs.spark.sinks  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - the workers still load on first use
        print(f"tidemark worker daemon: engine pre-load failed ({exc!r}); workers load the "
              "kernels on first use", file=sys.stderr)
        return False
    if threading.active_count() != 1:
        print(f"tidemark worker daemon: {threading.active_count()} Python threads after the "
              "engine pre-load", file=sys.stderr)
        return False
    return True


def preload_arrow() -> None:
    """Import what a ``mapInArrow`` worker imports (pyarrow, pandas, pyspark's Arrow
    serializers) once, before the daemon forks: the packing stage's workers need no engine.
    The engine pre-load imports the same libraries, so the fork is as safe as after it."""
    import pandas  # noqa: F401
    import pyarrow.compute  # noqa: F401
    import pyspark.sql.pandas.serializers  # noqa: F401
    import pyspark.worker  # noqa: F401


def preload_windows(value: str | None) -> list[str] | bool:
    """What a ``TIDEMARK_WORKER_PRELOAD`` value asks of the engine pre-load: ``True`` for
    every kernel (``engine``), the window types of ``engine:<type>[,<type>...]``, ``False``
    for no engine pre-load."""
    if value == "engine":
        return True
    if value is not None and value.startswith("engine:"):
        return [w for w in value[len("engine:"):].split(",") if w] or True
    return False


def freeze_loaded() -> None:
    """Collect the garbage the imports left, then move every object still tracked into the
    GC's permanent generation: the full collection a reused worker runs after each task then
    walks only what that worker created itself."""
    gc.collect()
    gc.freeze()


if __name__ == "__main__":
    kept = installed_path(sys.path)
    forget_importers(sys.path_importer_cache, [p for p in sys.path if p not in kept])
    sys.path[:] = kept
    engine = preload_windows(os.environ.get(PRELOAD_ENV))
    if engine is not False:
        from jobs.engine.allocator import tune_malloc

        tune_malloc()  # before the fork: every worker inherits the settings
        preload(None if engine is True else engine)
    elif os.environ.get(PRELOAD_ENV) == "arrow":
        preload_arrow()
    from pyspark import daemon

    freeze_loaded()
    daemon.manager()
