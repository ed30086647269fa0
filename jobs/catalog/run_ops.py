"""Runs: one row per launch of a job version, with heartbeats.

Heartbeats, like per-batch progress, are telemetry of the run itself and are not audited; the
start and the end of a run are (``run_start``, ``run_end``; a run that ended badly has outcome
``failed``).
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from jobs.catalog import convert
from jobs.catalog.base import CatalogBase
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import RUN_STATUSES, DefinitionVersion, Job, Run
from jobs.catalog.records import RunInfo, RunStatus


class RunOps(CatalogBase):
    def _run_row(self, session: Session, run_id: int) -> tuple[Run, str]:
        row = session.get(Run, run_id)
        if row is None:
            raise CatalogError(f"run {run_id} not found", code="not_found")
        job = session.get(Job, row.job_id)
        assert job is not None
        return row, job.name

    def start_run(
        self,
        job: str,
        version: int,
        store: str,
        pid: int | None,
        host: str,
        log_path: str | None,
        spark_app_id: str | None = None,
        *,
        actor: str = "system",
    ) -> RunInfo:
        """Record a launch (status ``running``, heartbeat = now). ``store`` must be the
        version's store (a mismatch is a bug in the caller and is refused)."""
        with self._write() as session:
            job_row = self._live_job_row(session, job)
            expected = session.scalar(
                select(DefinitionVersion.store_name).where(
                    DefinitionVersion.job_id == job_row.id, DefinitionVersion.number == version
                )
            )
            if expected is None:
                raise CatalogError(f"job {job!r} has no version {version}", code="not_found")
            if expected != store:
                raise CatalogError(
                    f"store: version {version} of {job!r} uses store {expected}, not {store}",
                    code="invalid",
                )
            now = self._now()
            row = Run(
                job_id=job_row.id,
                version=version,
                store=store,
                pid=pid,
                host=host,
                log_path=log_path,
                spark_app_id=spark_app_id,
                status="running",
                started_at=now,
                last_heartbeat_at=now,
                restart_count=job_row.restart_count,
            )
            session.add(row)
            session.flush()
            self._audit(
                session, actor, "run_start", job=job, version=version,
                message=f"run {row.id} started on {host} (pid {pid})",
                data={"run_id": row.id, "store": store, "pid": pid, "host": host,
                      "log_path": log_path, "restart_count": row.restart_count},
            )
            return convert.run_info(row, job)

    def set_spark_app_id(self, run_id: int, spark_app_id: str) -> RunInfo:
        with self._write() as session:
            row, job = self._run_row(session, run_id)
            row.spark_app_id = spark_app_id
            return convert.run_info(row, job)

    def heartbeat(self, run_id: int) -> RunInfo:
        """Refresh the run's heartbeat. Raises ``state`` if the run has already ended (the
        caller should stop: the orchestration has given up on it)."""
        with self._write() as session:
            row, job = self._run_row(session, run_id)
            if row.status != "running":
                raise CatalogError(
                    f"run {run_id} of {job!r} has ended ({row.status}: {row.exit_reason})",
                    code="state",
                )
            row.last_heartbeat_at = self._now()
            return convert.run_info(row, job)

    def end_run(
        self, run_id: int, status: RunStatus, exit_reason: str, *, actor: str = "system"
    ) -> RunInfo:
        """Record how a run ended. Ending an ended run again is a no-op (returns it unchanged:
        the first observer of the end wins)."""
        if status not in RUN_STATUSES or status == "running":
            allowed = ", ".join(s for s in RUN_STATUSES if s != "running")
            raise CatalogError(f"status: must be one of {allowed}, not {status!r}", code="invalid")
        with self._write() as session:
            row, job = self._run_row(session, run_id)
            if row.status != "running":
                return convert.run_info(row, job)
            now = self._now()
            # conditional update: two observers ending the same run record one end only
            result = session.execute(
                update(Run)
                .where(Run.id == run_id, Run.status == "running")
                .values(status=status, exit_reason=exit_reason, ended_at=now)
                .execution_options(synchronize_session=False)
            )
            session.refresh(row)
            if getattr(result, "rowcount", 1) == 1:
                self._audit(
                    session, actor, "run_end", job=job, version=row.version,
                    outcome="ok" if status in ("succeeded", "stopped") else "failed",
                    message=f"run {run_id} {status}: {exit_reason}",
                    data={"run_id": run_id, "status": status, "exit_reason": exit_reason},
                )
            return convert.run_info(row, job)

    def run(self, run_id: int) -> RunInfo:
        with self._read() as session:
            row, job = self._run_row(session, run_id)
            return convert.run_info(row, job)

    def active_runs(self, job: str | None = None) -> list[RunInfo]:
        """Runs with status ``running`` (whatever their heartbeat age), oldest first."""
        stmt = select(Run, Job.name).join(Job, Job.id == Run.job_id).where(Run.status == "running")
        if job is not None:
            stmt = stmt.where(Job.name == job)
        with self._read() as session:
            return [convert.run_info(r, name) for r, name in session.execute(stmt.order_by(Run.id))]

    def runs(self, job: str, *, limit: int = 100) -> list[RunInfo]:
        """Runs of ``job``, newest first."""
        with self._read() as session:
            row = self._job_row(session, job)
            rows = session.scalars(
                select(Run).where(Run.job_id == row.id).order_by(Run.id.desc()).limit(limit)
            )
            return [convert.run_info(r, job) for r in rows]
