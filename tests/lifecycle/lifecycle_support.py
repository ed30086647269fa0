"""Helpers of the lifecycle tests (a uniquely named module: test files import from here, never
from ``conftest``, which is ambiguous when several test directories are collected together)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jobs.catalog import Catalog
from jobs.lifecycle.migration import Migrator
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.reconcile import Supervisor
from jobs.timeutil import ManualClock

FAKE = str(Path(__file__).with_name("fake_job.py"))

POLICY = RestartPolicy(
    heartbeat_timeout_ms=60_000,
    backoff_base_ms=10_000,
    backoff_max_ms=40_000,
    crash_loop_limit=2,
    healthy_after_ms=300_000,
    stop_timeout_ms=3_000,
)


def definition(name: str = "scores", size: str = "1m", fn: str = "sum") -> str:
    return f"""\
name: {name}
key: team
event_time: et
window: {{type: tumbling, size: {size}}}
aggregations:
  - {{name: total, fn: {fn}, of: score}}
sink: {{kind: catalog}}
"""


def hopping_mean(name: str = "scores") -> str:
    """The new-store edit of :func:`definition`: hopping 2m/1m mean."""
    return f"""\
name: {name}
key: team
event_time: et
window: {{type: hopping, size: 2m, step: 1m}}
aggregations:
  - {{name: total, fn: mean, of: score}}
sink: {{kind: catalog}}
"""


@dataclass
class Harness:
    catalog: Catalog
    clock: ManualClock
    db_url: str
    home: Path
    make: Callable[..., Supervisor]

    def supervisor(self, mode: str = "run", **kw: object) -> Supervisor:
        return self.make(mode=mode, **kw)

    def migrator(self, mode: str = "run", **kw: object) -> Migrator:
        sup = self.make(mode=mode, actor="airflow:migration", **kw)
        return Migrator(sup, actor="airflow:migration")


def wait_for(predicate: Callable[[], object], timeout: float = 60.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def pid_alive(pid: int | None) -> bool:
    """Running and not a zombie (without reaping it: the supervisor reads its exit status)."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
