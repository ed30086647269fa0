"""Where a Python worker of the engine path spends its CPU, for the benchmark only.

Off unless ``TIDEMARK_ENGINE_PROFILE`` names a directory (``benchmarks/spark_throughput.py
--profile DIR`` sets it for its children; Spark's Python workers inherit the driver's
environment). Then every task of the stateful operator runs under ``cProfile`` from the
processor's ``init`` to its ``close`` (so pyspark's own Arrow and pandas conversions between
the calls are in it too) and times the processor's phases; ``close`` writes
``<dir>/task-<pid>-<batch>-<partition>.prof`` (pstats) and ``.json`` (phase seconds of CPU
and wall, the task's process CPU). Nothing here changes what the processor computes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PROFILE_ENV = "TIDEMARK_ENGINE_PROFILE"


class TaskProfile:
    """cProfile plus per-phase CPU / wall timers of one task (one partition, one batch)."""

    def __init__(self, directory: str) -> None:
        import cProfile

        self.directory = directory
        self.phases: dict[str, list[float]] = {}
        self.cpu0 = time.process_time()
        self.wall0 = time.perf_counter()
        self.profiler = cProfile.Profile(time.process_time)  # CPU, not wall (shared machine)
        self.profiler.enable()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        c, w = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            acc = self.phases.setdefault(name, [0.0, 0.0, 0.0])
            acc[0] += time.process_time() - c
            acc[1] += time.perf_counter() - w
            acc[2] += 1

    def write(self, batch: int, partition: int) -> None:
        self.profiler.disable()
        base = os.path.join(self.directory, f"task-{os.getpid()}-{batch}-{partition}")
        os.makedirs(self.directory, exist_ok=True)
        self.profiler.dump_stats(base + ".prof")
        report: dict[str, Any] = {
            "batch": batch, "partition": partition,
            "task_cpu_s": time.process_time() - self.cpu0,
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
    directory = os.environ.get(PROFILE_ENV)
    return TaskProfile(directory) if directory else None


@contextmanager
def phase(prof: TaskProfile | None, name: str) -> Iterator[None]:
    """Time ``name`` in ``prof`` (nothing when profiling is off)."""
    if prof is None:
        yield
    else:
        with prof.phase(name):
            yield
