"""The engine path's CPU accounting for the Spark benchmark: role marks and phase timers left
by the workers (jobs/spark/engine_path/profiling.py) and the benchmark's split of the Python
processes' CPU by role (benchmarks/process_cpu.py, read by benchmarks/spark_throughput.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.spark.engine_path import profiling
from tests.spark.test_benchmark_pairing import _bench


def test_switch_off_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(profiling.PROFILE_ENV, raising=False)
    monkeypatch.setattr(profiling, "_marked", set())
    profiling.mark_role("packing")
    assert profiling.task_profile() is None
    assert list(tmp_path.iterdir()) == []


def test_task_timers_without_cprofile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(profiling.PROFILE_ENV, str(tmp_path))
    monkeypatch.setattr(profiling, "_marked", set())
    prof = profiling.task_profile()
    assert prof is not None and prof.profiler is None
    with profiling.phase(prof, "ingest"):
        sum(range(200_000))
    with profiling.phase(prof, "ingest"):
        pass
    prof.write(3, 1)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[0].startswith("role-") and names[0].endswith("-operator")
    report = json.loads((tmp_path / names[1]).read_text())
    assert names[1].endswith("-3-1.json") and not list(tmp_path.glob("*.prof"))
    assert report["phases"]["ingest"]["calls"] == 2
    assert 0 < report["phases"]["ingest"]["cpu_s"] <= report["task_cpu_s"]
    phases = _bench().operator_phases(tmp_path)
    assert phases["tasks"] == 1 and phases["ingest"] == round(
        report["phases"]["ingest"]["cpu_s"], 2)


def test_cprofile_prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(profiling.PROFILE_ENV, profiling.CPROFILE_PREFIX + str(tmp_path))
    prof = profiling.task_profile()
    assert prof is not None and prof.profiler is not None
    prof.write(0, 0)
    assert len(list(tmp_path.glob("*.prof"))) == 1


def test_cpu_split_by_role(tmp_path: Path) -> None:
    """This process stands for the JVM: its child is a daemon, the daemon's children workers,
    one of them marked."""
    daemon = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    workers: list[int] = []
    try:
        bench = _bench()  # the benchmark's own import of the /proc accounting
        cpu = sys.modules["process_cpu"]
        assert bench.python_cpu_by_role is cpu.python_cpu_by_role
        for _ in range(100):
            workers = [p for p in cpu.tree(daemon.pid) if p != daemon.pid]
            if len(workers) == 2:
                break
            time.sleep(0.05)
        assert len(workers) == 2
        (tmp_path / f"role-{workers[0]}-operator").touch()
        split = bench.python_cpu_by_role(os.getpid(), tmp_path)
        assert {"daemon", "exited_workers", "operator", "unmarked"} <= set(split)
        assert {(w["pid"], w["role"]) for w in split["workers"]} >= {
            (workers[0], "operator"), (workers[1], "unmarked")}
    finally:
        for p in workers:
            os.kill(p, 9)
        daemon.kill()
        daemon.wait()
