"""The catalog, as the lifecycle code sees it.

One adapter over the catalog service (typed as :class:`jobs.catalog.ports.LifecycleService`:
the methods orchestration may call) that turns its records into the plain views of
:mod:`jobs.lifecycle.views` (epoch ms, the few fields decisions need) and names the handful of
writes orchestration makes. Keeping it narrow documents the contract between the two packages
and keeps :mod:`jobs.lifecycle.decide` free of the catalog's types.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobs.catalog.ports import LifecycleService
from jobs.catalog.records import (
    JobInfo,
    MigrationInfo,
    MigrationState,
    OutboxEvent,
    RunInfo,
    VersionInfo,
)
from jobs.lifecycle.views import JobView, MigrationView, RunView
from jobs.timeutil import datetime_to_ms

RESTART_REQUEST_ACTION = "restart_requested"
"""Audit action of ``Catalog.request_restart``: the supervisor honours a request newer than the
live run (state, not a queue: asking twice before the restart restarts once)."""


def job_view(info: JobInfo, restart_requested_at: int | None = None) -> JobView:
    return JobView(
        name=info.name,
        desired=info.desired_state,
        active_version=info.active_version,
        active_store=info.active_store,
        failed=info.status == "failed",
        failed_reason=info.failed_reason,
        restart_count=info.restart_count,
        deleted=info.status == "deleted" or info.deleted_at is not None,
        restart_requested_at=restart_requested_at,
    )


def run_view(info: RunInfo) -> RunView:
    return RunView(
        id=info.id,
        job=info.job,
        version=info.version,
        status=info.status,
        started_at=datetime_to_ms(info.started_at),
        store=info.store,
        pid=info.pid,
        host=info.host,
        log_path=info.log_path,
        ended_at=datetime_to_ms(info.ended_at) if info.ended_at else None,
        exit_reason=info.exit_reason,
        restart_count=info.restart_count,
        last_heartbeat=datetime_to_ms(info.last_heartbeat_at) if info.last_heartbeat_at else None,
    )


def migration_view(info: MigrationInfo) -> MigrationView:
    retried = [st.at for st in info.steps if st.state == "replaying"]
    since = max([info.created_at, *retried])
    return MigrationView(
        id=info.id,
        job=info.job,
        from_version=info.from_version,
        to_version=info.to_version,
        from_store=info.from_store,
        to_store=info.to_store,
        step=info.state,
        created_at=datetime_to_ms(since),
        cutover_watermark=info.cutover_watermark,
        error=info.error,
    )


class LifecycleCatalog:
    """Reads and writes of orchestration; ``actor`` is recorded on every write."""

    def __init__(self, catalog: LifecycleService, actor: str = "airflow:supervisor") -> None:
        self.catalog = catalog
        self.actor = actor

    # ---- reading ---------------------------------------------------------------------------
    def job_names(self) -> list[str]:
        # deleted jobs are left out: the catalog refuses to delete a job with a live run
        return sorted(j.name for j in self.catalog.jobs())

    def job(self, name: str) -> JobView:
        return job_view(self.catalog.job(name), self.restart_requested_at(name))

    def runs(self, job: str, limit: int = 50) -> list[RunView]:
        """Newest first; every live run is included whatever ``limit`` says."""
        recent = {r.id: r for r in self.catalog.runs(job, limit=limit)}
        for r in self.catalog.active_runs(job):
            recent.setdefault(r.id, r)
        return [run_view(r) for r in sorted(recent.values(), key=lambda r: r.id, reverse=True)]

    def run(self, run_id: int) -> RunView:
        return run_view(self.catalog.run(run_id))

    def migrations(self, job: str | None = None, *, limit: int = 20) -> list[MigrationView]:
        """Newest first: every unfinished one and the ``limit`` most recent."""
        recent = {m.id: m for m in self.catalog.migrations(job)[:limit]}
        for m in self.catalog.migrations(job, unfinished=True):
            recent.setdefault(m.id, m)
        return [migration_view(m) for m in sorted(recent.values(), key=lambda m: m.id, reverse=True)]

    def migration(self, migration_id: int) -> MigrationInfo:
        return self.catalog.migration(migration_id)

    def version(self, job: str, version: int) -> VersionInfo:
        return self.catalog.version(job, version)

    def store_of(self, job: str, version: int) -> str:
        return self.catalog.version(job, version).store_name

    def store_watermark(self, job: str, store: str) -> tuple[int | None, int | None, int]:
        """(latest reported watermark, watermark applied by the latest batch, batches) of
        ``store``.

        A batch reports the watermark the *next* batch will use (Spark's
        ``nextBatchWatermarkMs``); the windows it emitted were closed by the watermark the
        batch before it reported. None where there is no such batch."""
        points = self.catalog.progress(job, store=store, limit=2)
        if not points:
            return None, None, 0
        applied = points[-2].watermark if len(points) > 1 else None
        return points[-1].watermark, applied, points[-1].batch_id + 1

    def restart_requested_at(self, job: str) -> int | None:
        """When an operator last asked for a restart of ``job`` (None: never)."""
        events = self.catalog.audit(job=job, action=RESTART_REQUEST_ACTION, outcome="ok", limit=1)
        return datetime_to_ms(events[0].at) if events else None

    # ---- runs ------------------------------------------------------------------------------
    def record_launch(
        self, job: str, version: int, store: str, pid: int | None, host: str, log_path: str
    ) -> RunView:
        info = self.catalog.start_run(job, version, store, pid, host, log_path, actor=self.actor)
        return run_view(info)

    def end_run(self, run_id: int, status: Any, reason: str) -> RunView:
        """Idempotent: a run that has already ended keeps its first end."""
        return run_view(self.catalog.end_run(run_id, status, reason, actor=self.actor))

    # ---- jobs ------------------------------------------------------------------------------
    def record_restart(self, job: str, reason: str) -> None:
        self.catalog.record_restart(job, self.actor, reason=reason)

    def reset_restarts(self, job: str) -> None:
        self.catalog.reset_restarts(job, self.actor)

    def mark_failed(self, job: str, reason: str) -> None:
        self.catalog.mark_failed(job, reason, self.actor)

    def audit(
        self,
        action: str,
        *,
        job: str | None,
        version: int | None = None,
        message: str,
        outcome: str = "ok",
        data: dict[str, Any] | None = None,
    ) -> None:
        self.catalog.record_audit(
            self.actor, action, job=job, version=version, outcome=outcome, message=message, data=data
        )

    # ---- migrations ------------------------------------------------------------------------
    def create_migration(self, job: str, from_version: int, to_version: int) -> MigrationInfo:
        return self.catalog.create_migration(job, from_version, to_version, self.actor)

    def activate(self, job: str, version: int, actor: str, *, note: str) -> JobInfo:
        """Activate ``version`` as ``actor`` (an operator's roll back, not the port's actor)."""
        return self.catalog.activate(job, version, actor, note=note)

    def update_migration(
        self, migration_id: int, state: MigrationState, *, message: str, **fields: Any
    ) -> MigrationInfo:
        return self.catalog.update_migration(
            migration_id, state, self.actor, message=message, **fields
        )

    # ---- outbox ----------------------------------------------------------------------------
    def claim(self, consumer: str, *, limit: int, lease_ms: int) -> list[OutboxEvent]:
        return self.catalog.claim_outbox(consumer, limit=limit, lease_ms=lease_ms)

    def ack(self, consumer: str, ids: Sequence[int]) -> int:
        return self.catalog.ack_outbox(consumer, list(ids))
