"""Where a Python worker of the engine path spends its CPU, for the benchmark only.

Off unless ``TIDEMARK_ENGINE_PROFILE`` names a directory (``benchmarks/spark_throughput.py``
sets it for its children; Spark's Python workers inherit the driver's environment). Then:

- every process that runs an engine-path function leaves a role mark,
  ``<dir>/role-<pid>-<role>`` holding its parent's pid (``packing``: the ``mapInArrow`` stage; ``operator``: the
  stateful processor), so the benchmark can split the workers' CPU (``/proc/<pid>/stat``) by
  role;
- every task of the stateful operator times the processor's phases with ``time.thread_time``
  (two clock reads a phase: cheap enough to leave on) and ``close`` writes
  ``<dir>/task-<pid>-<batch>-<partition>.json`` (phase CPU and wall seconds, the task's CPU
  from ``init`` to ``close``, the worker's CPU so far).

A value ``cprofile:<dir>`` also runs each task under ``cProfile`` (CPU clock) and dumps
``.prof`` next to the ``.json``: it names functions, but inflates per-call Python work several
times, so its totals are not the run's. Nothing here changes what the processor computes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PROFILE_ENV = "TIDEMARK_ENGINE_PROFILE"
CPROFILE_PREFIX = "cprofile:"

_marked: set[str] = set()


def profile_dir() -> tuple[str, bool] | None:
    """(directory, with cProfile) when the switch is on."""
    value = os.environ.get(PROFILE_ENV)
    if not value:
        return None
    if value.startswith(CPROFILE_PREFIX):
        return value[len(CPROFILE_PREFIX):], True
    return value, False


def mark_role(role: str) -> None:
    """Leave this process's role mark (once per process and role) when the switch is on."""
    if role in _marked:
        return
    _marked.add(role)
    where = profile_dir()
    if where is None:
        return
    os.makedirs(where[0], exist_ok=True)
    with open(os.path.join(where[0], f"role-{os.getpid()}-{role}"), "w") as fh:
        fh.write(str(os.getppid()))  # the daemon that forked this worker


class TaskProfile:
    """Per-phase CPU / wall timers of one task (one partition, one batch), optionally cProfile."""

    def __init__(self, directory: str, cprofile: bool) -> None:
        self.directory = directory
        self.phases: dict[str, list[float]] = {}
        self.cpu0 = time.thread_time()
        self.wall0 = time.perf_counter()
        self.profiler: Any = None
        if cprofile:
            import cProfile

            self.profiler = cProfile.Profile(time.process_time)  # CPU, not wall
            self.profiler.enable()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        c, w = time.thread_time(), time.perf_counter()
        try:
            yield
        finally:
            acc = self.phases.setdefault(name, [0.0, 0.0, 0.0])
            acc[0] += time.thread_time() - c
            acc[1] += time.perf_counter() - w
            acc[2] += 1

    def write(self, batch: int, partition: int) -> None:
        base = os.path.join(self.directory, f"task-{os.getpid()}-{batch}-{partition}")
        os.makedirs(self.directory, exist_ok=True)
        if self.profiler is not None:
            self.profiler.disable()
            self.profiler.dump_stats(base + ".prof")
        report: dict[str, Any] = {
            "batch": batch, "partition": partition,
            # the main thread's CPU from init to close: pyspark's conversions between the
            # processor's calls are in it, its reading before init is not
            "task_cpu_s": time.thread_time() - self.cpu0,
            "task_wall_s": time.perf_counter() - self.wall0,
            # the worker's CPU since it started: consecutive tasks of one (reused) worker
            # differ by the whole task, pyspark's reading before ``init`` included
            "worker_cpu_s": time.process_time(),
            "phases": {k: {"cpu_s": v[0], "wall_s": v[1], "calls": int(v[2])}
                       for k, v in self.phases.items()},
        }
        with open(base + ".json", "w") as fh:
            json.dump(report, fh)


def task_profile() -> TaskProfile | None:
    """A profile for the task starting now, when the switch is on."""
    where = profile_dir()
    if where is None:
        return None
    mark_role("operator")
    return TaskProfile(*where)


@contextmanager
def phase(prof: TaskProfile | None, name: str) -> Iterator[None]:
    """Time ``name`` in ``prof`` (nothing when profiling is off)."""
    if prof is None:
        yield
    else:
        with prof.phase(name):
            yield
