"""Which pyspark the workers import: the installed copy when it is Spark's own release."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pyspark
import pytest

from jobs.spark.worker_daemon import installed_path, preload

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


def test_the_importers_of_the_removed_zip_are_forgotten(tmp_path: Path) -> None:
    import zipimport

    from jobs.spark.worker_daemon import forget_importers

    other = _zip(tmp_path, b"")
    kept = object()
    cache: dict[str, object] = {other: zipimport.zipimporter(other),
                                other + "/pyspark": zipimport.zipimporter(other + "/pyspark"),
                                INSTALLED: kept, other + "x": kept}
    forget_importers(cache, [other])
    assert cache == {INSTALLED: kept, other + "x": kept}


_FORKED = """
import os, sys
from jobs.spark import worker_daemon
if sys.argv[1] == "preload":
    assert worker_daemon.preload()
pid = os.fork()
if pid == 0:
    numba_loaded = "numba" in sys.modules
    from numba.core.registry import CPUDispatcher
    loaded = [name for name, mod in list(sys.modules.items()) if name.startswith("jobs.engine")
              for obj in vars(mod).values()
              if isinstance(obj, CPUDispatcher) and obj.signatures]
    print(numba_loaded, len(loaded))
    os._exit(0)
os.waitpid(pid, 0)
"""


def _forked_child(mode: str) -> str:
    import os
    import subprocess

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    return subprocess.run([sys.executable, "-c", _FORKED, mode], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_a_worker_forked_after_the_preload_finds_numba_and_the_kernels_loaded() -> None:
    numba_loaded, kernels = _forked_child("preload").split()
    assert numba_loaded == "True" and int(kernels) > 0
    assert _forked_child("none") == "False 0"


_KERNEL_MODULES = """
import sys
from jobs.spark import worker_daemon
assert worker_daemon.preload(sys.argv[1].split(",") if sys.argv[1] != "all" else None)
from numba.core.registry import CPUDispatcher
print(" ".join(sorted({name for name, mod in list(sys.modules.items())
                       if name.startswith("jobs.engine") for obj in vars(mod).values()
                       if isinstance(obj, CPUDispatcher) and obj.signatures})))
"""


def _kernel_modules(windows: str) -> set[str]:
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return set(subprocess.run([sys.executable, "-c", _KERNEL_MODULES, windows], env=env,
                              check=True, capture_output=True, text=True).stdout.split())


def test_a_preload_for_fixed_windows_loads_their_kernels_and_not_the_session_ones() -> None:
    fixed = _kernel_modules("tumbling")
    assert fixed and not any(".session" in m for m in fixed)
    assert any(".session" in m for m in _kernel_modules("all"))


def test_the_preload_value_names_what_the_daemon_loads() -> None:
    from jobs.spark.worker_daemon import preload_windows

    assert preload_windows("engine") is True
    assert preload_windows("engine:hopping") == ["hopping"]
    assert preload_windows("engine:session,sliding") == ["session", "sliding"]
    assert preload_windows("engine:") is True
    assert preload_windows("arrow") is False
    assert preload_windows(None) is False


def test_a_failed_preload_is_reported_and_does_not_raise(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import jobs.engine.kernels.__main__ as kernels_main

    def broken() -> int:
        raise RuntimeError("no cache")

    monkeypatch.setattr(kernels_main, "warm", broken)
    assert preload() is False
    assert "engine pre-load failed" in capsys.readouterr().err


class _Context:
    """What ``engine_preload`` reads of a SparkContext: the environment pyspark copies into
    every Python function it wraps."""

    def __init__(self, environment: dict[str, str]) -> None:
        self.environment = environment


def test_only_functions_built_for_the_engine_path_carry_the_preload() -> None:
    from jobs.spark.session import BASE_CONF
    from jobs.spark.worker_daemon import PRELOAD_ENV, engine_preload

    assert not any(PRELOAD_ENV in k for k in BASE_CONF)
    sc = _Context({"PYTHONPATH": "/p"})
    with engine_preload(sc):
        assert sc.environment == {"PYTHONPATH": "/p", PRELOAD_ENV: "engine"}
    assert sc.environment == {"PYTHONPATH": "/p"}


def test_a_preload_setting_of_the_session_is_kept() -> None:
    from jobs.spark.worker_daemon import PRELOAD_ENV, engine_preload

    sc = _Context({PRELOAD_ENV: "off"})
    with engine_preload(sc):
        assert sc.environment[PRELOAD_ENV] == "off"
    assert sc.environment == {PRELOAD_ENV: "off"}


def test_the_arrow_preload_imports_arrow_and_pandas_but_not_the_engine() -> None:
    import os
    import subprocess

    code = ("import sys, threading\n"
            "from jobs.spark.worker_daemon import preload_arrow\n"
            "preload_arrow()\n"
            "print(threading.active_count(), *(m in sys.modules for m in "
            "('pyarrow', 'pandas', 'pyspark.worker', 'numba')))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["1", "True", "True", "True", "False"]


def test_the_packing_stage_carries_the_arrow_preload() -> None:
    from jobs.spark.worker_daemon import PRELOAD_ENV, engine_preload

    sc = _Context({})
    with engine_preload(sc, "arrow"):
        assert sc.environment == {PRELOAD_ENV: "arrow"}
    assert sc.environment == {}


_FROZEN = """
import gc, os, sys, weakref
from jobs.spark import worker_daemon
assert worker_daemon.preload()
class Node: pass
cycle = Node(); cycle.me = cycle; dropped = weakref.ref(cycle); del cycle
walked = len(gc.get_objects())
worker_daemon.freeze_loaded()
from jobs.engine.kernels import __main__ as kernels
pid = os.fork()
if pid == 0:  # what pyspark's reused worker walks in its gc.collect() after each task
    ids = {id(o) for o in gc.get_objects()}
    print(walked, len(ids), id(kernels.warm) in ids, id(worker_daemon.preload) in ids,
          dropped() is None)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_worker_does_not_walk_the_preloaded_objects_in_a_collection() -> None:
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    before, after, *flags = subprocess.run(
        [sys.executable, "-c", _FROZEN], env=env, check=True, capture_output=True,
        text=True).stdout.split()
    assert int(after) * 100 < int(before)
    # the loaded functions are frozen; the garbage cycle left before the freeze was collected
    assert flags == ["False", "False", "True"]
