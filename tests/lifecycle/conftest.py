"""Fixtures: a real SQLite catalog (migrated once, copied per test), a manual clock starting at
the real time (the fake jobs heartbeat on the real clock), and a supervisor that launches
``fake_job.py`` instead of Spark."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema
from jobs.config import Settings
from jobs.lifecycle.catalog_port import LifecycleCatalog
from jobs.lifecycle.migration import Migrator
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.process import ProcessControl
from jobs.lifecycle.reconcile import Launcher, Supervisor
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


@pytest.fixture(scope="session")
def catalog_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lifecycle-catalog") / "template.db"
    catalog_schema.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def db_url(catalog_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "catalog.db"
    shutil.copyfile(catalog_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(time.time_ns() // 1_000_000)


@pytest.fixture
def catalog(db_url: str, clock: ManualClock) -> Iterator[Catalog]:
    cat = Catalog(db_url, clock=clock)
    yield cat
    cat.close()


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


@pytest.fixture
def harness(catalog: Catalog, clock: ManualClock, db_url: str, tmp_path: Path) -> Iterator[Harness]:
    home = tmp_path / "home"
    settings = replace(Settings.from_env({"TIDEMARK_HOME": str(home)}), db_url=db_url)
    made: list[Supervisor] = []

    def make(mode: str = "run", policy: RestartPolicy = POLICY, actor: str = "airflow:supervisor",
             command: Callable[[str, int], list[str]] | None = None,
             env: dict[str, str] | None = None) -> Supervisor:
        launcher = Launcher(
            command=command or (lambda job, v: [sys.executable, FAKE, job, "--version", str(v)]),
            env={"FAKE_MODE": mode, **(env or {})},
        )
        sup = Supervisor(
            LifecycleCatalog(catalog, actor=actor), db_url=db_url, clock=clock, policy=policy,
            process=ProcessControl(), launcher=launcher, settings=settings,
        )
        made.append(sup)
        return sup

    yield Harness(catalog, clock, db_url, home, make)
    # never leave a job process behind
    pc = ProcessControl()
    for job in [j.name for j in catalog.jobs()]:
        for pid in pc.job_processes(job, db_url):
            pc.kill(pid, job, pc.host)


def wait_for(predicate: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
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
