"""The real thing: local Airflow (api-server, scheduler, dag-processor, triggerer, LocalExecutor)
started by :func:`jobs.lifecycle.airflow_local.start_local_airflow`. A definition change in the
catalog reaches the migration DAG through the outbox watcher and starts exactly one DAG run,
which migrates the job (fake job processes, no Spark)."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import replace
from pathlib import Path

import pytest
from dags_support import FAKE

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema
from jobs.config import Settings
from jobs.lifecycle.airflow_local import start_local_airflow

pytestmark = pytest.mark.heavy

V1 = """\
name: scores
key: team
event_time: et
window: {type: tumbling, size: 1m}
aggregations:
  - {name: total, fn: sum, of: score}
sink: {kind: catalog}
"""
V2 = V1.replace("type: tumbling, size: 1m", "type: hopping, size: 2m, step: 1m").replace("fn: sum", "fn: mean")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(1.0)
    raise AssertionError(f"timed out waiting for {what}")


def test_outbox_event_starts_the_migration_dag_exactly_once(tmp_path: Path) -> None:
    import sys

    home = tmp_path / "home"
    settings = replace(Settings.from_env({"TIDEMARK_HOME": str(home)}), airflow_home=tmp_path / "airflow")
    home.mkdir(parents=True)
    catalog_schema.upgrade(settings.db_url)
    t0 = time.time_ns() // 1_000_000 - 60_000
    extra = {
        "TIDEMARK_JOB_COMMAND": json.dumps([sys.executable, str(FAKE), "{job}", "--version", "{version}"]),
        "FAKE_SOURCE_T0": str(t0), "FAKE_CHUNK_MS": "20000", "FAKE_HEARTBEAT_S": "0.2",
        "TIDEMARK_MIGRATION_POLL_S": "0.5", "TIDEMARK_STOP_TIMEOUT_MS": "5000",
    }
    try:
        with Catalog(settings.db_url) as cat, start_local_airflow(
            settings, port=_free_port(), extra_env=extra, timeout_s=300
        ) as af:
            cat.create_job(V1, "alice")
            cat.set_desired_state("scores", "running", "alice")
            af.cli("dags", "trigger", "tidemark_supervisor")  # on demand, not waiting for the minute
            _wait(lambda: bool(cat.active_runs("scores")), 240, "the supervisor to start v1")
            _wait(lambda: bool(cat.progress("scores", limit=1)), 60, "v1 to commit a batch")

            cat.save_version("scores", V2, "bob", base_version=1)
            cat.activate("scores", 2, "bob")  # new store: the catalog plans a migration (outbox)
            _wait(lambda: cat.migrations("scores")[0].state == "done", 300, "the migration")
            time.sleep(10)  # a second (wrong) run would have been created by now

            out = af.cli("dags", "list-runs", "tidemark_migration", "-o", "json")
            runs = json.loads(next(line for line in out.splitlines() if line.startswith("[")))
            assert len(runs) == 1, runs
            assert runs[0]["state"] == "success"
            assert runs[0]["run_id"].startswith("asset_triggered__")  # started by the outbox event
            assert cat.pending_outbox() == []
            assert cat.job("scores").active_version == 2
            (run,) = cat.active_runs("scores")
            assert run.version == 2
            cat.set_desired_state("scores", "stopped", "alice")
            af.cli("dags", "trigger", "tidemark_supervisor")
            _wait(lambda: not cat.active_runs("scores"), 120, "the supervisor to stop the job")
    finally:  # never leave a job process behind, even when an assertion failed
        from jobs.lifecycle.process import ProcessControl

        pc = ProcessControl()
        for pid in pc.job_processes("scores", settings.db_url):
            pc.kill(pid, "scores", pc.host)
