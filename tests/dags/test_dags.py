"""The DAG files under real Airflow: they load, and dag.test() runs them against a real
catalog (the job processes are fake jobs, not Spark)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dags_support import DAGS

from jobs.catalog import Catalog

DEFN = """\
name: scores
key: team
event_time: et
window: {type: tumbling, size: 1m}
aggregations:
  - {name: total, fn: sum, of: score}
sink: {kind: catalog}
"""


def _dagbag():  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def test_dag_files_load_and_are_thin(airflow_db: Path) -> None:
    bag = _dagbag()
    assert bag.import_errors == {}
    assert {"tidemark_supervisor", "tidemark_migration"} <= set(bag.dag_ids)
    sup = bag.get_dag("tidemark_supervisor")
    assert sup.max_active_runs == 1 and sup.catchup is False
    mig = bag.get_dag("tidemark_migration")
    assert [t.task_id for t in mig.topological_sort()] == [
        "plan", "start_replay", "wait_caught_up", "cut_over", "retire_old"
    ]
    # event-driven: the migration DAG is scheduled on an asset watched by the outbox trigger
    from jobs.lifecycle.outbox_trigger import OutboxTrigger

    (asset,) = mig.timetable.asset_condition.objects  # type: ignore[attr-defined]
    (watcher,) = asset.watchers
    assert isinstance(watcher.trigger, OutboxTrigger)
    # thin: parsing a DAG file imports neither Spark nor the catalog (Airflow's own ORM is fine)
    import subprocess
    import sys

    code = (
        "import runpy, sys; "
        f"runpy.run_path({str(DAGS / 'tidemark_migration.py')!r}); "
        f"runpy.run_path({str(DAGS / 'tidemark_supervisor.py')!r}); "
        "bad = [m for m in ('pyspark', 'jobs.catalog', 'jobs.spark') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_supervisor_dag_starts_a_desired_job_once(airflow_db: Path, tidemark_env: str) -> None:
    with Catalog(tidemark_env) as cat:
        cat.create_job(DEFN, "alice")
        cat.set_desired_state("scores", "running", "alice")
    dag = _dagbag().get_dag("tidemark_supervisor")
    dr = dag.test()
    assert dr.state == "success"
    with Catalog(tidemark_env) as cat:
        (run,) = cat.active_runs("scores")
        assert run.pid and run.log_path
    dr = dag.test()  # idempotent: a second run starts nothing
    assert dr.state == "success"
    with Catalog(tidemark_env) as cat:
        assert [r.id for r in cat.active_runs("scores")] == [run.id]
        assert any(e.action == "start" and e.actor == "airflow:supervisor" for e in cat.audit(job="scores"))


def test_supervisor_dag_fails_visibly_when_a_job_cannot_be_launched(
    airflow_db: Path, tidemark_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDEMARK_JOB_COMMAND", '["/nonexistent/python", "{job}"]')
    with Catalog(tidemark_env) as cat:
        cat.create_job(DEFN, "alice")
        cat.set_desired_state("scores", "running", "alice")
    dr = _dagbag().get_dag("tidemark_supervisor").test()
    assert dr.state == "failed"
    with Catalog(tidemark_env) as cat:
        (run,) = cat.runs("scores")
        assert run.status == "failed" and "cannot launch" in (run.exit_reason or "")


def test_migration_dag_switches_stores_when_triggered(
    airflow_db: Path, tidemark_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t0 = time.time_ns() // 1_000_000 - 60_000
    monkeypatch.setenv("FAKE_SOURCE_T0", str(t0))
    monkeypatch.setenv("FAKE_CHUNK_MS", "20000")
    monkeypatch.setenv("FAKE_HEARTBEAT_S", "0.1")
    bag = _dagbag()
    with Catalog(tidemark_env) as cat:
        cat.create_job(DEFN, "alice")
        cat.set_desired_state("scores", "running", "alice")
    assert bag.get_dag("tidemark_supervisor").test().state == "success"
    with Catalog(tidemark_env) as cat:
        cat.save_version("scores", DEFN.replace("size: 1m", "size: 2m"), "bob", base_version=1)
    # triggered from the UI/CLI: switch to version 2
    dr = bag.get_dag("tidemark_migration").test(run_conf={"job": "scores", "version": 2, "actor": "bob"})
    assert dr.state == "success"
    with Catalog(tidemark_env) as cat:
        (m,) = cat.migrations("scores")
        assert m.state == "done" and m.cutover_watermark is not None
        assert cat.job("scores").active_version == 2
        (run,) = cat.active_runs("scores")
        assert run.version == 2
