"""The catalog service: the only code in tidemark that opens ORM sessions.

Every public method is one short transaction and returns plain dataclasses from
:mod:`jobs.catalog.records`. Mutating methods take an ``actor`` (a user name, or a system name
such as ``airflow:supervisor`` / ``spark:<run id>``) and write an append-only audit event in the
same transaction; definition and lifecycle changes also write an outbox event that the
orchestration consumes exactly once.

Permission checks are explicit (:meth:`Catalog.require`): the UI and the CLI call it before a
user-initiated change; internal callers (DAGs, the Spark job) are trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

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
from jobs.timeutil import Clock

DefinitionInput = str | Mapping[str, Any]
"""YAML/JSON text or an already-parsed mapping; validated by ``jobs.definition``."""


class Catalog:
    """Typed access to the catalog database.

    ``Catalog(url)`` opens (and pools) connections to ``url`` (default
    ``Settings.from_env().db_url``). The schema must be at the Alembic head revision
    (``tidemark db upgrade``); pass ``upgrade=True`` to bring it there first. SQLite runs in WAL
    mode with a busy timeout and foreign keys on, so the UI, the Spark job and the DAGs can share
    one file.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        clock: Clock | None = None,
        upgrade: bool = False,
        sample_limit: int = 200,
    ) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Dispose of the connection pool."""
        raise NotImplementedError

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ jobs and versions

    def create_job(self, definition: DefinitionInput, actor: str, note: str = "") -> VersionInfo:
        """Create a job from a definition: version 1, active, desired state ``stopped``.

        Raises ``CatalogError(code="invalid")`` with the field errors if the definition does not
        validate (nothing is saved), ``code="exists"`` if the job name is taken.
        """
        raise NotImplementedError

    def save_version(
        self,
        job: str,
        definition: DefinitionInput,
        actor: str,
        *,
        base_version: int,
        note: str = "",
    ) -> SaveResult:
        """Save an edit of ``job`` made on top of version ``base_version``.

        No-op (``created=False``) when the canonical spec equals the latest version's. Raises
        ``CatalogError(code="conflict")`` naming both versions when ``base_version`` is not the
        latest ("edit based on version 3 but version 4 exists ..."), ``code="invalid"`` for an
        invalid definition or a definition whose ``name`` is not ``job``. Does not activate.
        """
        raise NotImplementedError

    def activate(self, job: str, version: int, actor: str, *, note: str = "") -> JobInfo:
        """Make ``version`` the active one (also used for roll back to an earlier version).

        Writes a ``version_activated`` outbox event with ``same_store`` so the orchestration
        restarts in place or plans a migration. The audit action is ``rollback`` when
        ``version`` is older than the currently active one, else ``activate``.
        """
        raise NotImplementedError

    def set_desired_state(
        self, job: str, state: DesiredState, actor: str, *, reason: str = ""
    ) -> JobInfo:
        """Start (``running``) or stop (``stopped``) a job. Starting clears a ``failed`` status
        and resets the restart counter (an operator decided to try again)."""
        raise NotImplementedError

    def request_restart(self, job: str, actor: str, *, reason: str = "") -> JobInfo:
        """Ask the orchestration to restart the job's run (outbox ``restart_requested``)."""
        raise NotImplementedError

    def record_restart(self, job: str, actor: str, *, reason: str = "") -> JobInfo:
        """The supervisor restarted a dead run: bump the restart counter (crash-loop input)."""
        raise NotImplementedError

    def reset_restarts(self, job: str, actor: str) -> JobInfo:
        """The run has been healthy long enough: reset the restart counter."""
        raise NotImplementedError

    def mark_failed(self, job: str, reason: str, actor: str) -> JobInfo:
        """Crash-loop limit reached: status ``failed`` with ``reason``; the supervisor stops
        restarting it until an operator starts it again."""
        raise NotImplementedError

    def delete_job(self, job: str, actor: str) -> JobInfo:
        """Soft delete: the job stops being listed and cannot be started; its versions, runs
        and audit trail stay (history is never destroyed)."""
        raise NotImplementedError

    def job(self, name: str) -> JobInfo:
        raise NotImplementedError

    def jobs(self, *, include_deleted: bool = False) -> list[JobInfo]:
        raise NotImplementedError

    def jobs_overview(self) -> list[JobOverview]:
        """Everything the jobs page shows, one entry per (non-deleted) job, by name."""
        raise NotImplementedError

    def version(self, job: str, number: int | None = None) -> VersionInfo:
        """Version ``number`` of ``job`` (the latest when None)."""
        raise NotImplementedError

    def active_version(self, job: str) -> VersionInfo:
        """The version the job should run (raises ``not_found`` if none is active)."""
        raise NotImplementedError

    def versions(self, job: str) -> list[VersionInfo]:
        """Version history, oldest first."""
        raise NotImplementedError

    def diff(self, job: str, old: int, new: int) -> SaveResult:
        """The diff between two versions (``version`` is ``new``; ``created`` is False)."""
        raise NotImplementedError

    # ------------------------------------------------------------ audit

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
        """Audit timeline, newest first, filtered by any combination of the arguments."""
        raise NotImplementedError

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
        """Append an audit event for an action performed outside the catalog (e.g. the
        lifecycle killed a process). There is no way to update or delete one."""
        raise NotImplementedError

    # ------------------------------------------------------------ outbox

    def claim_outbox(
        self, consumer: str, *, limit: int = 100, lease_ms: int = 300_000
    ) -> list[OutboxEvent]:
        """Claim up to ``limit`` unconsumed events, oldest first. Each event is handed to one
        consumer at a time; call :meth:`ack_outbox` once it is handled. An unacked claim is
        handed out again after ``lease_ms`` (the consumer died)."""
        raise NotImplementedError

    def ack_outbox(self, consumer: str, event_ids: Sequence[int]) -> int:
        """Mark claimed events consumed; returns how many were acknowledged by ``consumer``."""
        raise NotImplementedError

    def consume_outbox(self, consumer: str, *, limit: int = 100) -> list[OutboxEvent]:
        """Claim and acknowledge in one transaction: each event is returned to exactly one
        caller, ever (at most once per event even if the caller then crashes)."""
        raise NotImplementedError

    def pending_outbox(self) -> list[OutboxEvent]:
        """Events not yet consumed (claimed or not), oldest first."""
        raise NotImplementedError

    # ------------------------------------------------------------ runs

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
        """Record a launch (status ``running``, heartbeat = now)."""
        raise NotImplementedError

    def set_spark_app_id(self, run_id: int, spark_app_id: str) -> RunInfo:
        raise NotImplementedError

    def heartbeat(self, run_id: int) -> RunInfo:
        """Refresh the run's heartbeat. Raises ``state`` if the run has already ended."""
        raise NotImplementedError

    def end_run(
        self, run_id: int, status: RunStatus, exit_reason: str, *, actor: str = "system"
    ) -> RunInfo:
        """Record how a run ended. Ending an ended run again is a no-op (returns it)."""
        raise NotImplementedError

    def run(self, run_id: int) -> RunInfo:
        raise NotImplementedError

    def active_runs(self, job: str | None = None) -> list[RunInfo]:
        """Runs with status ``running`` (whatever their heartbeat age)."""
        raise NotImplementedError

    def runs(self, job: str, *, limit: int = 100) -> list[RunInfo]:
        """Runs of ``job``, newest first."""
        raise NotImplementedError

    # ------------------------------------------------------------ per micro-batch bookkeeping

    def record_batch(
        self,
        run_id: int,
        progress: BatchProgress,
        snapshot: BatchSnapshot,
        late_counts: Sequence[LateCount],
        late_samples: Sequence[LateSample] = (),
        dead_letter_samples: Sequence[DeadLetterSample] = (),
    ) -> bool:
        """Record one committed micro-batch in ONE transaction; also refreshes the heartbeat.

        Idempotent per (store, batch_id): a batch replayed after a crash returns False and
        changes nothing (late counts are not counted twice). Keeps only the newest
        ``sample_limit`` late and dead-letter samples per job.
        """
        raise NotImplementedError

    def progress(
        self,
        job: str,
        *,
        store: str | None = None,
        since: datetime | None = None,
        limit: int = 1000,
    ) -> list[ProgressPoint]:
        """Progress over time, oldest first (the newest ``limit`` batches)."""
        raise NotImplementedError

    def snapshots(self, job: str, *, store: str | None = None, limit: int = 100) -> list[SnapshotInfo]:
        """Recovery points, newest first."""
        raise NotImplementedError

    def snapshot(self, store: str, batch_id: int) -> SnapshotInfo:
        raise NotImplementedError

    def late_counts(
        self,
        job: str,
        *,
        store: str | None = None,
        key: Any = ...,
        limit: int = 1000,
    ) -> list[WindowLateCount]:
        """Late totals per window (newest windows first); ``key`` filters one key (``None``
        is the null key; leave it out for all keys)."""
        raise NotImplementedError

    def late_over_time(
        self, job: str, *, store: str | None = None, limit: int = 1000
    ) -> list[LatePoint]:
        """Late accepted/dropped per micro-batch, oldest first."""
        raise NotImplementedError

    def late_samples(self, job: str, *, limit: int = 100) -> list[StoredLateSample]:
        """Most recent late records, newest first."""
        raise NotImplementedError

    def dead_letters(self, job: str, *, limit: int = 100) -> list[StoredDeadLetter]:
        """Most recent dead letters, newest first."""
        raise NotImplementedError

    # ------------------------------------------------------------ panes (catalog sink)

    def write_panes(
        self,
        store: str,
        batch_id: int,
        panes: Sequence[PaneRecord],
        *,
        version: int | None = None,
    ) -> bool:
        """Write the panes of one micro-batch, idempotent per (store, batch_id): False (and
        nothing written) if that batch was already written. ``version`` defaults to the job's
        active version when it uses ``store``, else the newest version that does."""
        raise NotImplementedError

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
        """Panes in emission order (batch_id, seq), filtered."""
        raise NotImplementedError

    # ------------------------------------------------------------ migrations

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
        """Plan a migration (state ``planned``). Stores default to the versions' stores; if
        given they must match. Refused (``state``) while another migration of the job is
        unfinished. Writes a ``migration_requested`` outbox event and a ``migrate`` audit."""
        raise NotImplementedError

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
        """Record a step (or progress within the same state). Only forward transitions
        (planned -> replaying -> caught_up -> cut_over -> done; any unfinished -> failed;
        cut_over/done/failed -> rolled_back) are accepted; each step is an audit event."""
        raise NotImplementedError

    def migration(self, migration_id: int) -> MigrationInfo:
        raise NotImplementedError

    def migrations(self, job: str | None = None, *, unfinished: bool = False) -> list[MigrationInfo]:
        """Migrations, newest first."""
        raise NotImplementedError

    # ------------------------------------------------------------ users and roles

    def add_user(self, name: str, password: str, role: Role, actor: str) -> User:
        raise NotImplementedError

    def set_password(self, name: str, password: str, actor: str) -> User:
        raise NotImplementedError

    def set_role(self, name: str, role: Role, actor: str) -> User:
        raise NotImplementedError

    def users(self) -> list[User]:
        raise NotImplementedError

    def user(self, name: str) -> User:
        raise NotImplementedError

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if the password matches (scrypt, constant-time compare), else None."""
        raise NotImplementedError

    def ensure_admin(self, name: str, password: str) -> bool:
        """First run: create admin ``name`` if the catalog has no admin; True if created."""
        raise NotImplementedError

    def require(self, actor: str, action: Action) -> User:
        """Raise ``CatalogError(code="forbidden")`` unless ``actor`` is an enabled user whose
        role allows ``action`` (viewer: read; editor: + edit; operator: + operate; admin: all)."""
        raise NotImplementedError
