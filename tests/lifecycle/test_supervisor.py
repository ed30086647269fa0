"""The supervisor against a real catalog and real (fake-job) processes, no Airflow, no Spark."""

from __future__ import annotations

import os
import signal
import sys
import threading

from lifecycle_support import FAKE, POLICY, Harness, definition, pid_alive, wait_for

from jobs.lifecycle.process import ProcessControl


def _create_running(h: Harness, name: str = "scores") -> None:
    h.catalog.create_job(definition(name), "alice")
    h.catalog.set_desired_state(name, "running", "alice")


def _heartbeating(h: Harness, run_id: int) -> bool:
    run = h.catalog.run(run_id)
    return run.last_heartbeat_at > run.started_at


def test_supervisor_starts_a_stopped_but_desired_job_once(harness: Harness) -> None:
    h = harness
    h.catalog.create_job(definition(), "alice")
    sup = h.supervisor()
    assert sup.reconcile().outcomes == []  # desired stopped: nothing to do
    h.catalog.set_desired_state("scores", "running", "alice")

    report = sup.reconcile()
    assert [o.action for o in report.outcomes] == ["start"] and not report.errors
    (run,) = h.catalog.active_runs("scores")
    assert run.version == 1 and run.pid and run.host == sup.process.host
    assert run.log_path and os.path.exists(run.log_path)
    assert pid_alive(run.pid)
    # the job process found the run its launcher recorded and heartbeats on it
    wait_for(lambda: _heartbeating(h, run.id), what="heartbeat of the launched job")

    assert sup.reconcile().outcomes == []  # idempotent: the second pass starts nothing
    assert [r.id for r in h.catalog.active_runs("scores")] == [run.id]
    actions = [e.action for e in h.catalog.audit(job="scores")]
    assert "start" in actions and "run_start" in actions


def test_concurrent_reconciles_start_a_single_run(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sups = [h.supervisor() for _ in range(3)]
    errors: list[BaseException] = []

    def go(s) -> None:  # type: ignore[no-untyped-def]
        try:
            s.reconcile()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(s,)) for s in sups]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(h.catalog.active_runs("scores")) == 1
    assert len(ProcessControl().job_processes("scores", h.db_url)) == 1


def test_sigkilled_job_is_restarted_after_backoff(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor()
    sup.reconcile()
    (first,) = h.catalog.active_runs("scores")
    os.kill(first.pid, signal.SIGKILL)  # type: ignore[arg-type]
    wait_for(lambda: not pid_alive(first.pid), what="the job to die")

    report = sup.reconcile()
    assert [o.action for o in report.outcomes] == ["ended", "wait"]
    dead = h.catalog.run(first.id)
    assert dead.status == "killed" and "SIGKILL" in (dead.exit_reason or "")
    assert h.catalog.active_runs("scores") == []

    h.clock.advance(POLICY.backoff_base_ms)  # first restart waits backoff_base
    report = sup.reconcile()
    assert [o.action for o in report.outcomes] == ["restart"]
    (second,) = h.catalog.active_runs("scores")
    assert second.id != first.id and second.restart_count == 1 and pid_alive(second.pid)
    assert h.catalog.job("scores").restart_count == 1


def test_job_that_crashes_on_start_hits_the_crash_loop_limit(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor(mode="crash")
    for attempt in range(POLICY.crash_loop_limit + 1):
        if attempt:
            # the crash is noticed, and the restart waits for its backoff
            assert [o.action for o in sup.reconcile().outcomes] == ["ended", "wait"]
            h.clock.advance(POLICY.backoff_max_ms)
        report = sup.reconcile()
        assert [o.action for o in report.outcomes] == ["restart" if attempt else "start"], report.lines()
        (run,) = h.catalog.active_runs("scores")
        wait_for(lambda r=run: not pid_alive(r.pid), what="the crash")
    report = sup.reconcile()
    assert [o.action for o in report.outcomes] == ["ended", "fail"], report.lines()
    job = h.catalog.job("scores")
    assert job.status == "failed"
    reason = job.failed_reason or ""
    assert "crash loop" in reason and f"{POLICY.crash_loop_limit + 1} times" in reason
    assert "exit code 3" in reason and "boom" in reason  # the why: exit status and log line
    # a failed job is not restarted any more
    h.clock.advance(POLICY.backoff_max_ms)
    assert sup.reconcile().outcomes == []
    assert len(h.catalog.runs("scores")) == POLICY.crash_loop_limit + 1
    # an operator's start clears the failure and the counter: it is tried again
    h.catalog.set_desired_state("scores", "running", "alice")
    assert [o.action for o in sup.reconcile().outcomes][-1] in ("start", "restart")


def test_stale_heartbeat_is_killed_and_restarted(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor(mode="hang")
    sup.reconcile()
    (run,) = h.catalog.active_runs("scores")
    h.clock.advance(POLICY.heartbeat_timeout_ms + 1_000)
    report = sup.reconcile()
    assert [o.action for o in report.outcomes][0] == "kill"
    lost = h.catalog.run(run.id)
    assert lost.status == "lost" and "no heartbeat" in (lost.exit_reason or "")
    wait_for(lambda: not pid_alive(run.pid), what="the hung job to be killed")


def test_stop_is_graceful_and_escalates_to_sigkill(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor()
    sup.reconcile()
    (run,) = h.catalog.active_runs("scores")
    wait_for(lambda: _heartbeating(h, run.id), what="heartbeat")
    h.catalog.set_desired_state("scores", "stopped", "alice")
    report = sup.reconcile()
    assert [o.action for o in report.outcomes] == ["stop"]
    stopped = h.catalog.run(run.id)
    # the job recorded its own graceful end first; the supervisor's end was a no-op
    assert stopped.status == "stopped" and "SIGTERM" in (stopped.exit_reason or "")
    assert not pid_alive(run.pid)

    # a job that ignores SIGTERM is SIGKILLed after the stop timeout
    h.catalog.set_desired_state("scores", "running", "alice")
    stubborn = h.supervisor(mode="ignore_term")
    stubborn.reconcile()
    (run2,) = h.catalog.active_runs("scores")
    wait_for(lambda: _heartbeating(h, run2.id), what="heartbeat")
    h.catalog.set_desired_state("scores", "stopped", "alice")
    report = stubborn.reconcile()
    assert "SIGKILL" in report.outcomes[0].detail
    assert h.catalog.run(run2.id).status == "stopped" and not pid_alive(run2.pid)


def test_restart_request_restarts_once(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor()
    sup.reconcile()
    (first,) = h.catalog.active_runs("scores")
    wait_for(lambda: _heartbeating(h, first.id), what="heartbeat")
    h.clock.advance(1_000)
    h.catalog.request_restart("scores", "carol")
    h.clock.advance(1_000)
    assert [o.action for o in sup.reconcile().outcomes] == ["stop", "start"]
    (second,) = h.catalog.active_runs("scores")
    assert second.id != first.id
    assert sup.reconcile().outcomes == []


def test_same_store_edit_restarts_in_place(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor()
    sup.reconcile()
    (first,) = h.catalog.active_runs("scores")
    edit = definition().replace("key: team", "description: renamed\nkey: team")
    saved = h.catalog.save_version("scores", edit, "bob", base_version=1)
    assert saved.kind == "same_store"
    h.catalog.activate("scores", 2, "bob")
    assert [o.action for o in sup.reconcile().outcomes] == ["stop", "start"]
    (second,) = h.catalog.active_runs("scores")
    assert second.version == 2 and second.store == first.store


def test_unrecorded_job_process_is_killed(harness: Harness) -> None:
    h = harness
    _create_running(h)
    sup = h.supervisor()
    pc = ProcessControl()
    env = dict(os.environ, FAKE_MODE="nocatalog", TIDEMARK_DB_URL=h.db_url)
    orphan = pc.launch([sys.executable, FAKE, "scores"], job="scores", log_path=h.home / "o.log", env=env)
    report = sup.reconcile()
    assert [o.action for o in report.outcomes] == ["kill_orphan", "start"]
    wait_for(lambda: not pid_alive(orphan), what="the orphan to die")
