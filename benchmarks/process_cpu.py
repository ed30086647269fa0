"""What a benchmark run cost, read from ``/proc`` (no profiler): CPU seconds and RSS of a
process tree, and the engine path's Python processes by role (the marks its functions leave,
``jobs/spark/engine_path/profiling.py``) with the operator's phase timers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, including reaped children) of ``pid`` and its descendants."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    out: list[int] = []
    stack = [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def stat_cpu(pid: int) -> tuple[int, float, float]:
    """(parent pid, own CPU s, CPU s of its reaped children) of ``pid`` from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[1]), (int(fields[11]) + int(fields[12])) / tck,
            (int(fields[13]) + int(fields[14])) / tck)


def python_cpu_by_role(jpid: int, marks: Path) -> dict[str, Any]:
    """CPU seconds of the JVM's Python processes by role, from /proc (no profiler): the
    daemons (children of the JVM: pyspark's fork servers), the workers they forked by the
    role marks they left (``jobs/spark/engine_path/profiling.py``: ``packing``, ``operator``,
    both when one reused worker ran both), and ``exited_workers`` (workers already reaped by
    their daemon: their role is not known). All processes start after the query does, so the
    totals are the run's."""
    roles: dict[int, set[str]] = {}
    for f in marks.glob("role-*"):
        _, pid, role = f.name.split("-", 2)
        roles.setdefault(int(pid), set()).add(role)
    out: dict[str, float] = {}
    workers: list[dict[str, Any]] = []
    daemons: list[dict[str, Any]] = []
    for p in tree(jpid):
        if p == jpid:
            continue
        try:
            ppid, own, reaped = stat_cpu(p)
        except (OSError, ValueError, IndexError):
            continue
        if ppid == jpid:
            out["daemon"] = out.get("daemon", 0.0) + own
            out["exited_workers"] = out.get("exited_workers", 0.0) + reaped
            daemons.append({"pid": p, "cpu_s": round(own, 2)})
            continue
        role = "+".join(sorted(roles.get(p, {"unmarked"})))
        out[role] = out.get(role, 0.0) + own + reaped
        workers.append({"pid": p, "daemon": ppid, "role": role, "cpu_s": round(own, 2)})
    result: dict[str, Any] = {k: round(v, 2) for k, v in sorted(out.items())}
    result["total"] = round(sum(out.values()), 2)
    result["daemons"] = daemons
    result["workers"] = workers
    return result


def operator_phases(marks: Path) -> dict[str, Any]:
    """The operator tasks' phase timers (``profiling.TaskProfile``), summed over the run:
    CPU seconds of the task's main thread per phase, ``task`` from ``init`` to ``close``."""
    phases: dict[str, float] = {}
    tasks = 0
    for f in marks.glob("task-*.json"):
        rep = json.loads(f.read_text())
        tasks += 1
        phases["task"] = phases.get("task", 0.0) + rep["task_cpu_s"]
        for name, v in rep["phases"].items():
            phases[name] = phases.get(name, 0.0) + v["cpu_s"]
    return {"tasks": tasks, **{k: round(v, 2) for k, v in sorted(phases.items())}}


def tree_rss(pid: int) -> int:
    """RSS bytes of ``pid`` and all its descendants."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total
