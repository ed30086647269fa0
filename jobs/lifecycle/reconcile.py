"""Reconcile, the acting half: carry out :func:`jobs.lifecycle.decide.plan_job` for every job.

One pass per job, under a per-job file lock, so two reconciles (the minute schedule and an
on-demand run, or the supervisor and the migration DAG) never both start a run: the second
waits, re-reads the catalog and finds the first one's run alive. Before planning, processes that
were launched for the job but never recorded (the launcher died between ``Popen`` and the
catalog write) are killed, so "recorded in the catalog" and "running" stay the same thing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jobs.catalog import CatalogError
from jobs.config import Settings
from jobs.lifecycle.catalog_port import LifecycleCatalog
from jobs.lifecycle.decide import (
    Action,
    CrashLoop,
    EndDead,
    FailJob,
    FailMigration,
    KillStale,
    ResetRestarts,
    Start,
    Stop,
    Wait,
    crash_loop_reason,
    plan_job,
)
from jobs.lifecycle.errors import LifecycleError
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.process import (
    CATALOG_ENV,
    LAUNCHED_ENV,
    VERSION_ENV,
    Liveness,
    ProcessControl,
    tail,
)
from jobs.lifecycle.views import RunView
from jobs.logsetup import LogSetupError, Rotation, rotate_job_logs
from jobs.timeutil import Clock, SystemClock

CommandFactory = Callable[[str, int], Sequence[str]]

PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding the ``jobs`` package (put on a launched job's PYTHONPATH)."""


def default_command(job: str, version: int) -> list[str]:
    """``python -m jobs.run JOB --version N`` with this interpreter."""
    return [sys.executable, "-m", "jobs.run", job, "--version", str(version)]


@dataclass
class Launcher:
    """How a job process is started: the command (configurable, so tests launch a tiny fake
    job instead of Spark), where logs go, extra environment."""

    command: CommandFactory = default_command
    log_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one action did, for DAG logs, the CLI and tests."""

    job: str
    action: str
    detail: str
    run_id: int | None = None
    version: int | None = None


@dataclass
class ReconcileReport:
    outcomes: list[Outcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def of(self, action: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.action == action]

    def lines(self) -> list[str]:
        return [f"{o.job}: {o.action} {o.detail}" for o in self.outcomes] + [
            f"ERROR {e}" for e in self.errors
        ]


class Supervisor:
    """Reconciles desired and actual runs; also the place that starts and stops job processes
    for the migration and roll-back code."""

    def __init__(
        self,
        catalog: LifecycleCatalog,
        *,
        db_url: str,
        clock: Clock | None = None,
        policy: RestartPolicy | None = None,
        process: ProcessControl | None = None,
        launcher: Launcher | None = None,
        settings: Settings | None = None,
        log_rotation: Rotation | None = None,
    ) -> None:
        self.catalog = catalog
        self.db_url = db_url
        self.clock: Clock = clock or SystemClock()
        self.policy = policy or RestartPolicy.from_env()
        self.process = process or ProcessControl()
        self.launcher = launcher or Launcher()
        self.settings = settings or Settings.from_env()
        self.lock_dir = self.settings.home / "locks"
        self.log_dir = self.launcher.log_dir or (self.settings.home / "logs")
        self.log_rotation = log_rotation or Rotation.from_env()

    # ---- public ----------------------------------------------------------------------------
    def reconcile(self, jobs: Sequence[str] | None = None) -> ReconcileReport:
        """One pass over ``jobs`` (all jobs by default); errors of one job do not stop the
        others, they are reported (and raised by the DAG task afterwards)."""
        report = ReconcileReport()
        try:
            for path in rotate_job_logs(self.log_dir, self.log_rotation):
                report.outcomes.append(Outcome(path.parent.name, "rotate-log", str(path)))
        except (LogSetupError, OSError) as exc:  # a log that cannot rotate stops no job
            report.errors.append(f"logs: {exc}")
        names = list(jobs) if jobs is not None else self.catalog.job_names()
        for name in names:
            try:
                report.outcomes.extend(self.reconcile_job(name))
            except (CatalogError, LifecycleError, OSError) as exc:
                report.errors.append(f"{name}: {exc}")
        return report

    def reconcile_job(self, name: str) -> list[Outcome]:
        with self.job_lock(name):
            outcomes = self._sweep_orphans(name)
            job = self.catalog.job(name)
            runs = self.catalog.runs(name)
            migrations = self.catalog.migrations(name)
            liveness = {r.id: self._liveness(r) for r in runs if r.active}
            now = self.clock.now_ms()
            for action in plan_job(job, runs, migrations, liveness, now, self.policy):
                outcomes.append(self._do(action))
            return outcomes

    @contextlib.contextmanager
    def job_lock(self, name: str) -> Iterator[None]:
        """Exclusive per (catalog, job) on this host; blocks until the holder is done."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        tag = hashlib.sha256(self.db_url.encode()).hexdigest()[:12]
        path = self.lock_dir / f"{tag}-{name}.lock"
        with open(path, "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def stop_run(self, run: RunView, reason: str, *, action: str = "stop") -> Outcome:
        outcome = self.process.stop(run.pid, run.job, run.host, self.policy.stop_timeout_ms)
        if outcome == "unknown":
            raise LifecycleError(
                f"run {run.id} of {run.job} is on host {run.host}, not {self.process.host}:"
                " it can only be stopped there"
            )
        how = {
            "terminated": "stopped gracefully (SIGTERM)",
            "killed": f"did not stop within {self.policy.stop_timeout_ms // 1000}s: SIGKILL",
            "not_running": "was not running any more",
        }[outcome]
        self.catalog.end_run(run.id, "stopped", f"{reason}; {how}")
        self.catalog.audit(
            action, job=run.job, version=run.version, message=f"run {run.id}: {reason}; {how}",
            data={"run_id": run.id, "pid": run.pid, "outcome": outcome},
        )
        return Outcome(run.job, "stop", f"run {run.id} v{run.version}: {reason}; {how}", run.id, run.version)

    # ---- actions ---------------------------------------------------------------------------
    def _do(self, action: Action) -> Outcome:
        if isinstance(action, Start):
            return self._start(action)
        if isinstance(action, Stop):
            return self.stop_run(action.run, action.reason)
        if isinstance(action, EndDead):
            return self._end_dead(action.run, action.reason)
        if isinstance(action, KillStale):
            r = action.run
            self.process.kill(r.pid, r.job, r.host)
            self.catalog.end_run(r.id, "lost", f"{action.reason}; killed")
            self.catalog.audit(
                "kill", job=r.job, version=r.version, outcome="failed",
                message=f"run {r.id}: {action.reason}; killed", data={"run_id": r.id, "pid": r.pid},
            )
            return Outcome(r.job, "kill", f"run {r.id}: {action.reason}", r.id, r.version)
        if isinstance(action, Wait):
            until = f" until {action.until}" if action.until is not None else ""
            return Outcome(action.job, "wait", f"v{action.version}: {action.reason}{until}", None, action.version)
        if isinstance(action, ResetRestarts):
            self.catalog.reset_restarts(action.job)
            return Outcome(action.job, "reset_restarts", action.reason)
        if isinstance(action, FailJob):
            reason = self._crash_loop_reason(action.job, action.reason, action.loop)
            self.catalog.mark_failed(action.job, reason)
            return Outcome(action.job, "fail", reason)
        if isinstance(action, FailMigration):
            reason = self._crash_loop_reason(action.job, action.reason, action.loop)
            self.catalog.update_migration(action.migration_id, "failed", message=reason, error=reason)
            return Outcome(action.job, "fail_migration", f"migration {action.migration_id}: {reason}")
        raise LifecycleError(f"unknown action {action!r}")  # pragma: no cover

    def _start(self, action: Start) -> Outcome:
        job, version = action.job, action.version
        store = self.catalog.store_of(job, version)
        if action.restart:
            if action.reset_first:
                self.catalog.reset_restarts(job)
            if action.migration_id is None:
                self.catalog.record_restart(job, action.reason)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        log_path = self.log_dir / job / f"{job}-v{version}-{stamp}-{os.getpid()}.log"
        env = dict(os.environ)
        env.update(self.launcher.env)
        env.update({VERSION_ENV: str(version), LAUNCHED_ENV: "1", CATALOG_ENV: self.db_url})
        # the job imports `jobs` from this very source tree, whatever its working directory
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if PROJECT_ROOT not in paths:
            env["PYTHONPATH"] = os.pathsep.join([PROJECT_ROOT, *paths])
        argv = list(self.launcher.command(job, version))
        try:
            pid = self.process.launch(argv, job=job, log_path=log_path, env=env, cwd=self.launcher.cwd)
        except LifecycleError as exc:
            run = self.catalog.record_launch(job, version, store, None, self.process.host, str(log_path))
            self.catalog.end_run(run.id, "failed", str(exc))
            raise
        try:
            run = self.catalog.record_launch(job, version, store, pid, self.process.host, str(log_path))
        except BaseException:
            self.process.kill(pid, job, self.process.host)  # never leave an unrecorded process
            raise
        verb = "restart" if action.restart else "start"
        self.catalog.audit(
            verb, job=job, version=version,
            message=f"run {run.id} pid {pid} on {self.process.host}: {action.reason}",
            data={"run_id": run.id, "pid": pid, "log": str(log_path), "migration_id": action.migration_id},
        )
        return Outcome(job, verb, f"run {run.id} v{version} pid {pid}: {action.reason}", run.id, version)

    def _end_dead(self, run: RunView, reason: str) -> Outcome:
        info = self.process.exit_info(run.pid)
        status = "failed"
        if info is not None:
            reason = f"process {run.pid} ended: {info.describe()}"
            if info.signal is not None:
                status = "killed"
            elif info.code == 0:
                status = "succeeded"
        last = tail(run.log_path, lines=1)
        if last:
            reason = f"{reason}; last log line: {last.strip()[:300]}"
        ended = self.catalog.end_run(run.id, status, reason)
        # the job may have recorded its own end just before dying: keep its words
        said = ended.exit_reason or reason
        self.catalog.audit(
            "run_died", job=run.job, version=run.version, outcome="failed",
            message=f"run {run.id}: {said}", data={"run_id": run.id, "pid": run.pid},
        )
        return Outcome(run.job, "ended", f"run {run.id}: {said}", run.id, run.version)

    def _crash_loop_reason(self, job: str, fallback: str, loop: CrashLoop | None) -> str:
        if loop is None:
            return fallback
        last = self.catalog.run(loop.last_run_id)
        return crash_loop_reason(
            job, loop.version, loop.crashes, last.exit_reason or last.status, last.log_path
        )

    def _liveness(self, run: RunView) -> Liveness:
        return self.process.liveness(run.pid, run.job, run.host)

    def _sweep_orphans(self, name: str) -> list[Outcome]:
        known = {
            r.pid for r in self.catalog.runs(name) if r.active and r.host == self.process.host
        }
        out = []
        for pid in self.process.job_processes(name, self.db_url):
            if pid in known or pid == os.getpid():
                continue
            self.process.kill(pid, name, self.process.host)
            self.catalog.audit(
                "kill", job=name, outcome="failed",
                message=f"process {pid} runs {name} but no live run records it: killed",
                data={"pid": pid},
            )
            out.append(Outcome(name, "kill_orphan", f"pid {pid}"))
        return out
