"""The catalog as each caller sees it: one narrow, typed port per caller.

:class:`~jobs.catalog.Catalog` implements every port (mypy checks it, see the end of this
module); a caller is typed against its port, so the methods it may call are listed here, in
one place, and a change to any other method of the service cannot reach it. The lifecycle's
port is :mod:`jobs.lifecycle.catalog_port` (an adapter to its own views, built on
:class:`LifecycleService`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from jobs.catalog import auth
from jobs.catalog.job_ops import ActivationMode, DefinitionInput
from jobs.catalog.records import (
    Action,
    AuditEvent,
    BatchProgress,
    BatchSnapshot,
    DeadLetterSample,
    DesiredState,
    JobInfo,
    JobOverview,
    LateCount,
    LatePoint,
    LateSample,
    MigrationInfo,
    MigrationState,
    OutboxEvent,
    PaneRecord,
    ProgressPoint,
    Role,
    RunInfo,
    RunStatus,
    SaveResult,
    SnapshotInfo,
    StoredDeadLetter,
    StoredLateSample,
    StoredPane,
    User,
    VersionInfo,
    WindowLateCount,
)


class RuntimeCatalog(Protocol):
    """A job process (``jobs.run``, ``jobs.spark.bookkeeping``): its version, its run, and what
    every micro-batch records."""

    def version(self, job: str, number: int | None = None) -> VersionInfo:
        ...

    def active_version(self, job: str) -> VersionInfo:
        ...

    def active_runs(self, job: str | None = None) -> list[RunInfo]:
        ...

    def run(self, run_id: int) -> RunInfo:
        ...

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
        ...

    def set_spark_app_id(self, run_id: int, spark_app_id: str) -> RunInfo:
        ...

    def heartbeat(self, run_id: int) -> RunInfo:
        ...

    def snapshots(
        self, job: str, *, store: str | None = None, limit: int = 100
    ) -> list[SnapshotInfo]:
        ...

    def record_batch(
        self,
        run_id: int,
        progress: BatchProgress,
        snapshot: BatchSnapshot,
        late_counts: Sequence[LateCount],
        late_samples: Sequence[LateSample] = (),
        dead_letter_samples: Sequence[DeadLetterSample] = (),
    ) -> bool:
        ...

    def write_panes(
        self,
        store: str,
        batch_id: int,
        panes: Sequence[PaneRecord],
        *,
        version: int | None = None,
    ) -> bool:
        ...

    def end_run(
        self, run_id: int, status: RunStatus, exit_reason: str, *, actor: str = "system"
    ) -> RunInfo:
        ...

    def close(self) -> None:
        ...


class UICatalog(Protocol):
    """The Streamlit UI (``ui/``): reads for its pages, the changes a signed-in user makes,
    sign-in and users."""

    def activate(
        self,
        job: str,
        version: int,
        actor: str,
        *,
        note: str = "",
        mode: ActivationMode = "auto",
    ) -> JobInfo:
        ...

    def add_user(self, name: str, password: str, role: Role, actor: str) -> User:
        ...

    def audit(
        self,
        *,
        job: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 200,
    ) -> list[AuditEvent]:
        ...

    def create_job(self, definition: DefinitionInput, actor: str, note: str = "") -> VersionInfo:
        ...

    def dead_letters(self, job: str, *, limit: int = 100) -> list[StoredDeadLetter]:
        ...

    def diff(self, job: str, old: int, new: int) -> SaveResult:
        ...

    def ensure_admin(self, name: str, password: str) -> bool:
        ...

    def ensure_sso_user(self, name: str, role: Role, provider: str) -> User:
        ...

    def job(self, name: str) -> JobInfo:
        ...

    def jobs(self, *, include_deleted: bool = False) -> list[JobInfo]:
        ...

    def jobs_overview(self) -> list[JobOverview]:
        ...

    def late_counts(
        self,
        job: str,
        *,
        store: str | None = None,
        key: Any = ...,
        limit: int = 1000,
    ) -> list[WindowLateCount]:
        ...

    def late_over_time(
        self, job: str, *, store: str | None = None, limit: int = 1000
    ) -> list[LatePoint]:
        ...

    def late_samples(self, job: str, *, limit: int = 100) -> list[StoredLateSample]:
        ...

    def migrations(
        self, job: str | None = None, *, unfinished: bool = False
    ) -> list[MigrationInfo]:
        ...

    def panes(
        self,
        job: str,
        *,
        version: int | None = None,
        store: str | None = None,
        key: Any = ...,
        window_start: int | None = None,
        since_batch: int | None = None,
        limit: int = 10_000,
    ) -> list[StoredPane]:
        ...

    def progress(
        self,
        job: str,
        *,
        store: str | None = None,
        since: datetime | None = None,
        limit: int = 1000,
    ) -> list[ProgressPoint]:
        ...

    def record_audit(
        self,
        actor: str,
        action: str,
        *,
        job: str | None = None,
        version: int | None = None,
        outcome: str = "ok",
        message: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        ...

    def record_sign_in(self, name: str, client: str, method: str, reason: auth.SignInReason,
                       *, detail: str = "") -> None:
        ...

    def record_sign_out(self, name: str, client: str, why: str) -> None:
        ...

    def request_restart(self, job: str, actor: str, *, reason: str = "") -> JobInfo:
        ...

    def require(self, actor: str, action: Action) -> User:
        ...

    def runs(self, job: str, *, limit: int = 100) -> list[RunInfo]:
        ...

    def save_version(
        self,
        job: str,
        definition: DefinitionInput,
        actor: str,
        *,
        base_version: int,
        note: str = "",
    ) -> SaveResult:
        ...

    def set_desired_state(
        self, job: str, state: DesiredState, actor: str, *, reason: str = ""
    ) -> JobInfo:
        ...

    def set_password(self, name: str, password: str, actor: str) -> User:
        ...

    def set_role(self, name: str, role: Role, actor: str) -> User:
        ...

    def sign_in(
        self,
        name: str,
        password: str,
        client: str,
        *,
        policy: auth.SignInPolicy = auth.DEFAULT_SIGN_IN_POLICY,
    ) -> auth.SignInResult:
        ...

    def snapshots(
        self, job: str, *, store: str | None = None, limit: int = 100
    ) -> list[SnapshotInfo]:
        ...

    def user(self, name: str) -> User:
        ...

    def users(self) -> list[User]:
        ...

    def version(self, job: str, number: int | None = None) -> VersionInfo:
        ...

    def versions(self, job: str) -> list[VersionInfo]:
        ...


class LifecycleService(Protocol):
    """Orchestration (``jobs.lifecycle``: the supervisor, migrations, the outbox consumer),
    through :class:`jobs.lifecycle.catalog_port.LifecycleCatalog` and ``lifecycle.outbox``."""

    def jobs(self, *, include_deleted: bool = False) -> list[JobInfo]:
        ...

    def job(self, name: str) -> JobInfo:
        ...

    def runs(self, job: str, *, limit: int = 100) -> list[RunInfo]:
        ...

    def active_runs(self, job: str | None = None) -> list[RunInfo]:
        ...

    def run(self, run_id: int) -> RunInfo:
        ...

    def migrations(
        self, job: str | None = None, *, unfinished: bool = False
    ) -> list[MigrationInfo]:
        ...

    def migration(self, migration_id: int) -> MigrationInfo:
        ...

    def version(self, job: str, number: int | None = None) -> VersionInfo:
        ...

    def progress(
        self,
        job: str,
        *,
        store: str | None = None,
        since: datetime | None = None,
        limit: int = 1000,
    ) -> list[ProgressPoint]:
        ...

    def audit(
        self,
        *,
        job: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 200,
    ) -> list[AuditEvent]:
        ...

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
        ...

    def end_run(
        self, run_id: int, status: RunStatus, exit_reason: str, *, actor: str = "system"
    ) -> RunInfo:
        ...

    def record_restart(self, job: str, actor: str, *, reason: str = "") -> JobInfo:
        ...

    def reset_restarts(self, job: str, actor: str) -> JobInfo:
        ...

    def mark_failed(self, job: str, reason: str, actor: str) -> JobInfo:
        ...

    def record_audit(
        self,
        actor: str,
        action: str,
        *,
        job: str | None = None,
        version: int | None = None,
        outcome: str = "ok",
        message: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        ...

    def update_migration(
        self,
        migration_id: int,
        state: MigrationState,
        actor: str,
        *,
        message: str = "",
        replayed_files: int | None = None,
        total_files: int | None = None,
        new_watermark: int | None = None,
        old_watermark: int | None = None,
        cutover_watermark: int | None = None,
        error: str | None = None,
    ) -> MigrationInfo:
        ...

    def claim_outbox(
        self, consumer: str, *, limit: int = 100, lease_ms: int = 300_000
    ) -> list[OutboxEvent]:
        ...

    def ack_outbox(self, consumer: str, event_ids: Sequence[int]) -> int:
        ...

    def create_migration(
        self,
        job: str,
        from_version: int,
        to_version: int,
        actor: str,
        *,
        from_store: str | None = None,
        to_store: str | None = None,
    ) -> MigrationInfo:
        ...

    def activate(
        self,
        job: str,
        version: int,
        actor: str,
        *,
        note: str = "",
        mode: ActivationMode = "auto",
    ) -> JobInfo:
        ...


if TYPE_CHECKING:
    from jobs.catalog.service import Catalog

    def _implements(c: Catalog) -> tuple[RuntimeCatalog, UICatalog, LifecycleService]:
        """mypy: the service implements every port (a signature that drifts fails here)."""
        return c, c, c
