"""Runs with heartbeats, job status, restart counters and the crash-loop failure."""

from __future__ import annotations

import pytest
from catalog_defs import team_scores

from jobs.catalog import Catalog, CatalogError
from jobs.timeutil import ManualClock, ms_to_datetime


@pytest.fixture
def store(catalog: Catalog) -> str:
    return catalog.create_job(team_scores(), "alice").store_name


def test_run_lifecycle_and_status(catalog: Catalog, clock: ManualClock, store: str) -> None:
    catalog.set_desired_state("team_scores", "running", "alice")
    assert catalog.job("team_scores").status == "starting"

    run = catalog.start_run(
        "team_scores", 1, store, 4242, "host-a", "/logs/run.log", actor="airflow:supervisor"
    )
    assert (run.status, run.pid, run.host, run.restart_count) == ("running", 4242, "host-a", 0)
    assert run.started_at == run.last_heartbeat_at == ms_to_datetime(clock.now_ms())
    assert catalog.job("team_scores").status == "running"
    assert [r.id for r in catalog.active_runs()] == [run.id]

    clock.advance(5000)
    catalog.set_spark_app_id(run.id, "local-123")
    beat = catalog.heartbeat(run.id)
    assert beat.last_heartbeat_at == ms_to_datetime(clock.now_ms())
    assert beat.spark_app_id == "local-123"

    catalog.set_desired_state("team_scores", "stopped", "alice")
    assert catalog.job("team_scores").status == "stopping"
    clock.advance(1000)
    ended = catalog.end_run(run.id, "stopped", "SIGTERM after batch 7")
    assert (ended.status, ended.exit_reason) == ("stopped", "SIGTERM after batch 7")
    assert ended.ended_at == ms_to_datetime(clock.now_ms())
    assert catalog.job("team_scores").status == "stopped"
    assert catalog.active_runs() == []

    # ending again keeps the first end; heartbeats of an ended run are refused
    again = catalog.end_run(run.id, "failed", "late observer")
    assert (again.status, again.exit_reason) == ("stopped", "SIGTERM after batch 7")
    with pytest.raises(CatalogError) as err:
        catalog.heartbeat(run.id)
    assert err.value.code == "state"

    actions = [e.action for e in catalog.audit(job="team_scores")]
    assert actions.count("run_start") == 1 and actions.count("run_end") == 1


def test_runs_are_listed_newest_first(catalog: Catalog, store: str) -> None:
    ids = []
    for i in range(3):
        run = catalog.start_run("team_scores", 1, store, 100 + i, "h", None)
        catalog.end_run(run.id, "failed", f"crash {i}")
        ids.append(run.id)
    assert [r.id for r in catalog.runs("team_scores")] == ids[::-1]
    assert [r.id for r in catalog.runs("team_scores", limit=2)] == ids[:0:-1]
    assert catalog.audit(action="run_end")[0].outcome == "failed"


def test_start_run_checks_version_and_store(catalog: Catalog, store: str) -> None:
    with pytest.raises(CatalogError) as err:
        catalog.start_run("team_scores", 1, "some_other_store", 1, "h", None)
    assert err.value.code == "invalid"
    with pytest.raises(CatalogError) as err:
        catalog.start_run("team_scores", 9, store, 1, "h", None)
    assert err.value.code == "not_found"
    with pytest.raises(CatalogError) as err:
        catalog.end_run(12345, "failed", "x")
    assert err.value.code == "not_found"


def test_restart_counter_crash_loop_and_operator_retry(
    catalog: Catalog, clock: ManualClock, store: str
) -> None:
    catalog.set_desired_state("team_scores", "running", "alice")
    for _ in range(3):
        clock.advance(1000)
        catalog.record_restart("team_scores", "airflow:supervisor", reason="process died")
    job = catalog.job("team_scores")
    assert job.restart_count == 3
    assert job.last_restart_at == ms_to_datetime(clock.now_ms())
    run = catalog.start_run("team_scores", 1, store, 1, "h", None)
    assert run.restart_count == 3

    failed = catalog.mark_failed("team_scores", "crash loop: 3 restarts in 10m", "airflow:supervisor")
    assert (failed.status, failed.failed_reason) == ("failed", "crash loop: 3 restarts in 10m")
    assert catalog.audit(action="fail")[0].outcome == "failed"

    # the operator starts it again: failure cleared, counter reset
    retried = catalog.set_desired_state("team_scores", "running", "olga")
    assert (retried.failed_reason, retried.restart_count) == (None, 0)
    assert catalog.audit(action="start")[0].data["cleared_failure"].startswith("crash loop")

    catalog.record_restart("team_scores", "airflow:supervisor")
    catalog.reset_restarts("team_scores", "airflow:supervisor")
    assert catalog.job("team_scores").restart_count == 0
    catalog.reset_restarts("team_scores", "airflow:supervisor")  # nothing to reset: not audited
    assert len(catalog.audit(action="restart_reset")) == 1


def test_delete_is_soft_and_refused_while_running(catalog: Catalog, store: str) -> None:
    catalog.set_desired_state("team_scores", "running", "alice")
    with pytest.raises(CatalogError) as err:
        catalog.delete_job("team_scores", "alice")
    assert err.value.code == "state"
    catalog.set_desired_state("team_scores", "stopped", "alice")
    deleted = catalog.delete_job("team_scores", "alice")
    assert deleted.status == "deleted"
    assert catalog.jobs() == []
    assert [j.name for j in catalog.jobs(include_deleted=True)] == ["team_scores"]
    assert [v.number for v in catalog.versions("team_scores")] == [1]  # history stays
    with pytest.raises(CatalogError):
        catalog.set_desired_state("team_scores", "running", "alice")
    with pytest.raises(CatalogError) as err:
        catalog.create_job(team_scores(), "alice")
    assert err.value.code == "exists"
