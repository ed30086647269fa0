"""Reconcile, the thinking half: what should happen to one job right now.

A pure function of the job, its runs, its migrations, what the process table says and the time:
no I/O, so every rule (staleness, backoff, crash loop, duplicates, restart in place, migration
side-by-side runs) is tested directly, and :mod:`jobs.lifecycle.reconcile` only carries the
actions out.

Which versions should run:
- the *serving* version, while the job should run (desired running, not failed, not deleted).
  It is the active version, except while a migration has not cut over yet (then the old
  version keeps serving), or while a live run uses another store than the active version and
  no migration exists yet (the activation's outbox event has not been handled: the old run
  keeps serving rather than the store being switched without a replay);
- the target version of a migration that is replaying into its new store (side by side).
Any other live run is stopped; a live run of another version with the *same* store as the
serving one is thereby replaced by the serving version: "restart in place".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.process import Liveness
from jobs.lifecycle.views import CRASH_STATUSES, JobView, MigrationView, RunView
from jobs.timeutil import ms_to_iso


@dataclass(frozen=True, slots=True)
class Start:
    job: str
    version: int
    reason: str
    restart: bool = False
    """A restart after a crash (the job's restart counter goes up), not a plain start."""
    reset_first: bool = False
    """The last run was healthy for long enough: reset the counter before this restart."""
    migration_id: int | None = None


@dataclass(frozen=True, slots=True)
class EndDead:
    """The run's process is gone: record its end (it could not record it itself)."""

    run: RunView
    reason: str


@dataclass(frozen=True, slots=True)
class KillStale:
    """Alive (or on another host) but silent: kill it, record it ``lost``."""

    run: RunView
    reason: str


@dataclass(frozen=True, slots=True)
class Stop:
    """Should not run: SIGTERM, then SIGKILL after the policy's timeout."""

    run: RunView
    reason: str


@dataclass(frozen=True, slots=True)
class Wait:
    """A restart is due but its backoff has not elapsed yet (or a migration is awaited)."""

    job: str
    version: int
    until: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class ResetRestarts:
    job: str
    reason: str


@dataclass(frozen=True, slots=True)
class CrashLoop:
    """Why a crash-loop limit was reached; the executor words it with the last run's exit
    reason *as recorded* (the planner saw that run before its end was written)."""

    version: int
    crashes: int
    last_run_id: int


@dataclass(frozen=True, slots=True)
class FailJob:
    job: str
    reason: str
    loop: CrashLoop | None = None


@dataclass(frozen=True, slots=True)
class FailMigration:
    migration_id: int
    job: str
    reason: str
    loop: CrashLoop | None = None


Action = Start | EndDead | KillStale | Stop | Wait | ResetRestarts | FailJob | FailMigration


def serving_version(
    job: JobView, runs: Iterable[RunView], migrations: Iterable[MigrationView]
) -> int | None:
    """The version whose results consumers read right now (see the module docstring).

    ``migrations`` are all recent migrations of the job, finished ones included: a live run on
    another store keeps serving only while no migration to the active version has cut over
    (none planned yet, or it failed), never after one has.
    """
    migrations = [m for m in migrations if m.job == job.name]
    for m in migrations:
        if m.before_cutover:
            return m.from_version
    switched = any(
        m.to_version == job.active_version and m.step in ("cut_over", "done") for m in migrations
    )
    if job.active_store is not None and not switched:
        runs = list(runs)
        on_active = [r for r in runs if r.active and r.store == job.active_store]
        elsewhere = [r for r in runs if r.active and r.store and r.store != job.active_store]
        if elsewhere and not on_active:
            return max(elsewhere, key=lambda r: (r.started_at, r.id)).version
    return job.active_version


def desired_versions(
    job: JobView, runs: Iterable[RunView], migrations: Iterable[MigrationView]
) -> dict[int, int | None]:
    """version -> id of the migration that wants it running (None: the serving version)."""
    runs = list(runs)
    migrations = [m for m in migrations if m.job == job.name]
    wanted: dict[int, int | None] = {}
    if not job.should_run:
        return wanted
    serving = serving_version(job, runs, migrations)
    if serving is not None:
        wanted[serving] = None
    for m in migrations:
        if m.target_runs and m.to_version not in wanted:
            wanted[m.to_version] = m.id
    return wanted


def consecutive_crashes(
    runs: Iterable[RunView], version: int, since: int | None, policy: RestartPolicy
) -> list[RunView]:
    """The unbroken series of crashed runs of ``version``, newest first.

    The series stops at a run that ended on purpose, at one that lived ``healthy_after_ms``
    (it was working, so this is a new problem), and at ``since``.
    """
    ended = sorted(
        (r for r in runs if r.version == version and r.ended_at is not None),
        key=lambda r: (r.started_at, r.id),
        reverse=True,
    )
    series: list[RunView] = []
    for r in ended:
        if since is not None and r.started_at < since:
            break
        assert r.ended_at is not None
        if r.status not in CRASH_STATUSES or r.ended_at - r.started_at >= policy.healthy_after_ms:
            break
        series.append(r)
    return series


def plan_job(
    job: JobView,
    runs: Iterable[RunView],
    migrations: Iterable[MigrationView],
    liveness: Mapping[int, Liveness],
    now: int,
    policy: RestartPolicy,
) -> list[Action]:
    """The actions that bring ``job`` to its desired state; [] when it is there already.

    ``migrations``: the job's recent migrations, finished ones included."""
    runs = list(runs)
    migrations = [m for m in migrations if m.job == job.name]
    wanted = desired_versions(job, runs, migrations)
    actions: list[Action] = []
    history: list[RunView] = [r for r in runs if not r.active]
    kept: dict[int, RunView] = {}

    # newest first, so that of two live runs of one version the newer one is kept
    for run in sorted((r for r in runs if r.active), key=lambda r: (r.started_at, r.id), reverse=True):
        state = liveness.get(run.id, "unknown")
        if state == "dead":
            reason = f"process {run.pid} on {run.host} is gone (crashed or was killed)"
            actions.append(EndDead(run, reason))
            history.append(replace(run, status="failed", ended_at=now, exit_reason=reason))
            continue
        last_sign = max(run.last_heartbeat or run.started_at, run.started_at)
        silent = now - last_sign
        if silent > policy.heartbeat_timeout_ms:
            reason = (
                f"no heartbeat for {silent // 1000}s (limit {policy.heartbeat_timeout_ms // 1000}s,"
                f" last sign of life {ms_to_iso(last_sign)})"
            )
            actions.append(KillStale(run, reason))
            history.append(replace(run, status="lost", ended_at=now, exit_reason=reason))
            continue
        stop_reason: str | None = None
        if run.version not in wanted:
            stop_reason = _why_not_wanted(job, run)
        elif run.version in kept:
            stop_reason = f"duplicate run of {job.name} v{run.version}"
        elif (
            wanted[run.version] is None
            and job.restart_requested_at is not None
            and run.started_at < job.restart_requested_at
        ):
            stop_reason = f"restart requested at {ms_to_iso(job.restart_requested_at)}"
        if stop_reason is not None:
            actions.append(Stop(run, stop_reason))
            history.append(replace(run, status="stopped", ended_at=now, exit_reason=stop_reason))
            continue
        kept[run.version] = run
        if (
            wanted[run.version] is None
            and job.restart_count > 0
            and now - run.started_at >= policy.healthy_after_ms
        ):
            actions.append(
                ResetRestarts(job.name, f"run {run.id} healthy for {(now - run.started_at) // 1000}s")
            )

    for version, migration_id in sorted(wanted.items()):
        if version in kept:
            continue
        if migration_id is None:
            actions.append(_start_serving(job, version, history, now, policy))
        else:
            m = next(m for m in migrations if m.id == migration_id)
            actions.append(_start_target(job, m, history, now, policy))
    return actions


def _start_serving(
    job: JobView, version: int, history: list[RunView], now: int, policy: RestartPolicy
) -> Action:
    last = _latest(history, version)
    if last is None or last.status not in CRASH_STATUSES or last.ended_at is None:
        return Start(job.name, version, "start: desired running, no live run")
    healthy = last.ended_at - last.started_at >= policy.healthy_after_ms
    restarts = 0 if healthy else job.restart_count
    crashes = restarts + 1
    if restarts >= policy.crash_loop_limit:
        return FailJob(
            job.name, _crash_loop_reason(job.name, version, crashes, last),
            CrashLoop(version, crashes, last.id),
        )
    until = last.ended_at + policy.backoff_ms(crashes)
    if now < until:
        return Wait(job.name, version, until, f"backoff after {crashes} crash(es)")
    return Start(
        job.name,
        version,
        f"restart {restarts + 1} after: {last.exit_reason or last.status}",
        restart=True,
        reset_first=healthy and job.restart_count > 0,
    )


def _start_target(
    job: JobView, m: MigrationView, history: list[RunView], now: int, policy: RestartPolicy
) -> Action:
    crashes = consecutive_crashes(history, m.to_version, m.created_at, policy)
    if not crashes:
        return Start(job.name, m.to_version, f"start for migration {m.id}", migration_id=m.id)
    last = crashes[0]
    assert last.ended_at is not None
    if len(crashes) > policy.crash_loop_limit:
        return FailMigration(
            m.id, job.name, _crash_loop_reason(job.name, m.to_version, len(crashes), last),
            CrashLoop(m.to_version, len(crashes), last.id),
        )
    until = last.ended_at + policy.backoff_ms(len(crashes))
    if now < until:
        return Wait(job.name, m.to_version, until, f"backoff after {len(crashes)} crash(es)")
    return Start(
        job.name,
        m.to_version,
        f"restart {len(crashes)} for migration {m.id} after: {last.exit_reason or last.status}",
        restart=True,
        migration_id=m.id,
    )


def _latest(history: list[RunView], version: int) -> RunView | None:
    mine = [r for r in history if r.version == version]
    return max(mine, key=lambda r: (r.started_at, r.id)) if mine else None


def _why_not_wanted(job: JobView, run: RunView) -> str:
    if job.deleted:
        return f"job {job.name} is deleted"
    if job.failed:
        return f"job {job.name} is marked failed"
    if job.desired == "stopped":
        return f"job {job.name} is desired stopped"
    return f"v{run.version} is not the serving version (restart in place on the same store)"


def _crash_loop_reason(job: str, version: int, crashes: int, last: RunView) -> str:
    return crash_loop_reason(job, version, crashes, last.exit_reason or last.status, last.log_path)


def crash_loop_reason(
    job: str, version: int, crashes: int, last_exit: str, log_path: str | None
) -> str:
    """What an operator reads on a failed job: how often, how it died last, where to look."""
    return (
        f"crash loop: {job} v{version} crashed {crashes} times in a row (limit reached);"
        f" last: {last_exit}" + (f"; log {log_path}" if log_path else "")
    )
