"""Fixtures: a real SQLite catalog (migrated once, copied per test), a manual clock starting at
the real time (the fake jobs heartbeat on the real clock), and a supervisor that launches
``fake_job.py`` instead of Spark."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from lifecycle_support import FAKE, POLICY, Harness

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema
from jobs.config import Settings
from jobs.lifecycle.catalog_port import LifecycleCatalog
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.process import ProcessControl
from jobs.lifecycle.reconcile import Launcher, Supervisor
from jobs.timeutil import ManualClock


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


