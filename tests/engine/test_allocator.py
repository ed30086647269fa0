"""The engine processes' malloc settings: applied by ``tidemark replay`` and the engine worker
daemon, seen from glibc's own accounting (``mallinfo2``) in a fresh process, and left alone on
opt-out or when the operator set glibc's variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.engine import allocator

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(allocator._glibc() is None, reason="glibc only")

# A 48 MiB array: is it its own mmap while alive (hblkhd), and is it kept as free heap
# (fordblks) once freed? glibc's defaults: mapped, then returned to the OS.
_PROBE = """
import ctypes
import numpy as np

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
size = 48 << 20
a = np.ones(size, dtype=np.uint8)
mapped = libc.mallinfo2().hblkhd >= size
del a
kept = libc.mallinfo2().fordblks >= size
print("mapped" if mapped else "heap", "kept" if kept else "returned")
"""

_TUNED = "from jobs.engine.allocator import tune_malloc\nprint(tune_malloc())\n" + _PROBE


def _run(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items()
            if k != allocator.TUNING_ENV and not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    res = subprocess.run([sys.executable, "-c", code], env={**base, "PYTHONPATH": str(ROOT), **env},
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return " ".join(res.stdout.split())


def test_tuned_process_serves_large_arrays_from_the_heap_and_keeps_freed_memory() -> None:
    assert _run(_TUNED) == "True heap kept"
    assert _run(_PROBE) == "mapped returned"  # glibc's defaults, for contrast


@pytest.mark.parametrize("env", [
    {allocator.TUNING_ENV: "off"},
    {allocator.TUNING_ENV: " OFF "},
    {"MALLOC_TRIM_THRESHOLD_": str(1 << 20)},
    {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"},
])
def test_opt_out_or_the_operators_own_glibc_settings_leave_the_defaults(env: dict[str, str]) -> None:
    assert _run(_TUNED, **env) == "False mapped returned"


def test_tunables_other_than_mallocs_do_not_stop_the_settings() -> None:
    assert _run(_TUNED, GLIBC_TUNABLES="glibc.elision.enable=0") == "True heap kept"


def test_replay_cli_applies_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.cli import main

    calls: list[int] = []
    monkeypatch.setattr(allocator, "tune_malloc", lambda: calls.append(1) or True)
    events = tmp_path / "in.jsonl"
    events.write_text('{"team": "a", "score": 1, "et": 60000}\n')
    assert main(["replay", str(ROOT / "examples" / "team_scores.yaml"), "-i", str(events),
                 "-o", str(tmp_path / "out.jsonl")]) == 0
    assert calls == [1]


# The daemon's main block, with the kernels' warm-up stubbed and pyspark's daemon loop replaced
# by the probe: what a worker forked from it inherits.
_DAEMON = """
import runpy, sys, types
import pyspark.daemon

sys.modules["jobs.engine.kernels.__main__"] = types.SimpleNamespace(warm=lambda: None)
pyspark.daemon.manager = lambda: exec(PROBE, {})
runpy.run_module("jobs.spark.worker_daemon", run_name="__main__")
"""


@pytest.mark.parametrize(("preload", "expected"), [
    ("engine", "heap kept"), ("arrow", "mapped returned")])
def test_the_engine_worker_daemon_applies_the_settings_before_it_forks(
        preload: str, expected: str) -> None:
    code = f"PROBE = {_PROBE!r}\n" + _DAEMON
    assert _run(code, TIDEMARK_WORKER_PRELOAD=preload) == expected
