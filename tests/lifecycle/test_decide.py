"""The reconcile planner: rules checked on plain views (no catalog, no processes)."""

from __future__ import annotations

from jobs.lifecycle.decide import (
    EndDead,
    FailJob,
    FailMigration,
    KillStale,
    ResetRestarts,
    Start,
    Stop,
    Wait,
    plan_job,
)
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.views import JobView, MigrationView, RunView

POLICY = RestartPolicy(
    heartbeat_timeout_ms=60_000,
    backoff_base_ms=10_000,
    backoff_max_ms=80_000,
    crash_loop_limit=3,
    healthy_after_ms=300_000,
    stop_timeout_ms=1_000,
)
T0 = 1_700_000_000_000


def job(**kw: object) -> JobView:
    base: dict[str, object] = dict(
        name="j", desired="running", active_version=1, active_store="s1"
    )
    base.update(kw)
    return JobView(**base)  # type: ignore[arg-type]


def run(id: int, version: int = 1, *, store: str = "s1", started: int = T0, ended: int | None = None,
        status: str = "running", hb: int | None = None) -> RunView:
    return RunView(id=id, job="j", version=version, status=status, started_at=started, store=store,
                   pid=1000 + id, host="h", ended_at=ended, last_heartbeat=hb, log_path="/tmp/x.log")


def test_backoff_doubles_and_caps() -> None:
    assert [POLICY.backoff_ms(n) for n in range(6)] == [0, 10_000, 20_000, 40_000, 80_000, 80_000]


def test_desired_running_without_run_starts_once() -> None:
    actions = plan_job(job(), [], [], {}, T0, POLICY)
    assert actions == [Start("j", 1, "start: desired running, no live run")]


def test_live_fresh_run_needs_nothing() -> None:
    r = run(1, hb=T0 + 50_000)
    assert plan_job(job(), [r], [], {1: "alive"}, T0 + 60_000, POLICY) == []


def test_stopped_job_stops_live_run_and_starts_nothing() -> None:
    r = run(1, hb=T0)
    actions = plan_job(job(desired="stopped"), [r], [], {1: "alive"}, T0 + 1000, POLICY)
    assert [type(a) for a in actions] == [Stop]
    assert "desired stopped" in actions[0].reason  # type: ignore[union-attr]


def test_dead_process_is_ended_then_restarted_after_backoff() -> None:
    r = run(1, started=T0, hb=T0 + 5_000)
    now = T0 + 10_000
    actions = plan_job(job(), [r], [], {1: "dead"}, now, POLICY)
    # lived 10 s < healthy_after: first crash -> backoff 10 s from its end (= now)
    assert [type(a) for a in actions] == [EndDead, Wait]
    assert actions[1].until == now + 10_000  # type: ignore[union-attr]
    ended = run(1, started=T0, ended=now, status="failed")
    later = plan_job(job(), [ended], [], {}, now + 10_000, POLICY)
    assert len(later) == 1 and isinstance(later[0], Start) and later[0].restart


def test_long_lived_run_that_dies_resets_the_count_and_restarts_at_once() -> None:
    r = run(1, started=T0, hb=T0 + 400_000)
    actions = plan_job(job(restart_count=2), [r], [], {1: "dead"}, T0 + 400_500, POLICY)
    assert [type(a) for a in actions] == [EndDead, Wait]  # backoff(1) after a healthy run
    ended = run(1, started=T0, ended=T0 + 400_500, status="failed")
    later = plan_job(job(restart_count=2), [ended], [], {}, T0 + 411_000, POLICY)
    assert isinstance(later[0], Start) and later[0].reset_first and later[0].restart


def test_crash_loop_limit_marks_job_failed_with_reason() -> None:
    # three restarts already happened and the fourth run died quickly too
    r = run(4, started=T0, ended=T0 + 500, status="failed")
    actions = plan_job(job(restart_count=3), [r], [], {}, T0 + 10**9, POLICY)
    assert len(actions) == 1 and isinstance(actions[0], FailJob)
    assert "crash loop" in actions[0].reason and "4 times" in actions[0].reason
    assert "/tmp/x.log" in actions[0].reason


def test_failed_job_is_left_alone() -> None:
    r = run(4, started=T0, ended=T0 + 500, status="failed")
    assert plan_job(job(failed=True), [r], [], {}, T0 + 10**9, POLICY) == []


def test_stale_heartbeat_kills_and_counts_as_crash() -> None:
    r = run(1, started=T0, hb=T0 + 1_000)
    actions = plan_job(job(), [r], [], {1: "alive"}, T0 + 62_000, POLICY)
    assert [type(a) for a in actions] == [KillStale, Wait]
    assert "no heartbeat for 61s" in actions[0].reason  # type: ignore[union-attr]


def test_remote_run_is_judged_by_heartbeat_only() -> None:
    r = run(1, started=T0, hb=T0 + 30_000)
    assert plan_job(job(), [r], [], {1: "unknown"}, T0 + 60_000, POLICY) == []


def test_duplicate_live_runs_keep_the_newest() -> None:
    old, new = run(1, started=T0, hb=T0 + 5), run(2, started=T0 + 1, hb=T0 + 5)
    actions = plan_job(job(), [old, new], [], {1: "alive", 2: "alive"}, T0 + 10, POLICY)
    assert len(actions) == 1 and isinstance(actions[0], Stop) and actions[0].run.id == 1


def test_same_store_edit_restarts_in_place() -> None:
    r = run(1, version=1, store="s1", hb=T0)
    actions = plan_job(job(active_version=2, active_store="s1"), [r], [], {1: "alive"}, T0 + 5, POLICY)
    assert [type(a) for a in actions] == [Stop, Start]
    assert actions[1].version == 2 and not actions[1].restart  # type: ignore[union-attr]


def test_new_store_activation_keeps_old_run_until_a_migration_exists() -> None:
    r = run(1, version=1, store="s1", hb=T0)
    j = job(active_version=2, active_store="s2")
    assert plan_job(j, [r], [], {1: "alive"}, T0 + 5, POLICY) == []


def migration(step: str, **kw: object) -> MigrationView:
    base: dict[str, object] = dict(id=7, job="j", from_version=1, to_version=2, from_store="s1",
                                   to_store="s2", step=step, created_at=T0)
    base.update(kw)
    return MigrationView(**base)  # type: ignore[arg-type]


def test_replaying_migration_runs_old_and_new_side_by_side() -> None:
    r = run(1, version=1, store="s1", hb=T0)
    j = job(active_version=2, active_store="s2")
    actions = plan_job(j, [r], [migration("replaying")], {1: "alive"}, T0 + 5, POLICY)
    assert actions == [Start("j", 2, "start for migration 7", migration_id=7)]


def test_after_cutover_the_old_run_is_stopped() -> None:
    old, new = run(1, version=1, store="s1", hb=T0), run(2, version=2, store="s2", hb=T0)
    j = job(active_version=2, active_store="s2")
    actions = plan_job(j, [old, new], [migration("cut_over")], {1: "alive", 2: "alive"}, T0 + 5, POLICY)
    assert [type(a) for a in actions] == [Stop] and actions[0].run.id == 1  # type: ignore[union-attr]


def test_migration_target_crash_loop_fails_the_migration_not_the_job() -> None:
    old = run(1, version=1, store="s1", hb=T0 + 10_000)
    crashes = [run(10 + i, version=2, store="s2", started=T0 + i * 100, ended=T0 + i * 100 + 50,
                   status="failed") for i in range(4)]
    j = job(active_version=2, active_store="s2")
    actions = plan_job(j, [old, *crashes], [migration("replaying")], {1: "alive"}, T0 + 20_000, POLICY)
    assert [type(a) for a in actions] == [FailMigration]


def test_restart_request_restarts_the_serving_run_once() -> None:
    r = run(1, started=T0, hb=T0 + 100)
    j = job(restart_requested_at=T0 + 50)
    actions = plan_job(j, [r], [], {1: "alive"}, T0 + 100, POLICY)
    assert [type(a) for a in actions] == [Stop, Start]
    assert not actions[1].restart  # type: ignore[union-attr]
    newer = run(2, started=T0 + 101, hb=T0 + 150)
    stopped = run(1, started=T0, ended=T0 + 100, status="stopped")
    assert plan_job(j, [newer, stopped], [], {2: "alive"}, T0 + 200, POLICY) == []


def test_healthy_run_resets_restart_counter() -> None:
    r = run(1, started=T0, hb=T0 + 299_000)
    actions = plan_job(job(restart_count=2), [r], [], {1: "alive"}, T0 + 300_000, POLICY)
    assert [type(a) for a in actions] == [ResetRestarts]


def test_failed_migration_leaves_the_old_version_serving() -> None:
    old = run(1, version=1, store="s1", hb=T0)
    j = job(active_version=2, active_store="s2")
    assert plan_job(j, [old], [migration("failed")], {1: "alive"}, T0 + 5, POLICY) == []


def test_after_migration_done_a_dead_new_run_is_restarted_not_the_old_one() -> None:
    new = run(2, version=2, store="s2", started=T0, ended=T0 + 400_000, status="failed")
    j = job(active_version=2, active_store="s2")
    actions = plan_job(j, [new], [migration("done")], {}, T0 + 500_000, POLICY)
    assert len(actions) == 1 and isinstance(actions[0], Start) and actions[0].version == 2


def test_input_position_compares_versions_with_different_delays() -> None:
    from jobs.lifecycle.migration import input_position

    # both read up to event time 100 s: v1 (delay 10 s) reports wm 90 s, v2 (delay 0) 100 s
    assert input_position(90_000, {"watermark": {"strategy": "bounded", "delay": 10_000}}) == 100_000
    assert input_position(100_000, {"watermark": {"strategy": "bounded", "delay": 0}}) == 100_000
    # a source-driven watermark says nothing about the delay: compare watermarks as they are
    assert input_position(90_000, {"watermark": {"strategy": "source", "delay": 10_000}}) == 90_000
    # an infinite delay never closes windows: the watermark itself is all there is
    assert input_position(5, {"watermark": {"strategy": "bounded", "delay": 2**62}}) == 5
