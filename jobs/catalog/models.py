"""ORM models of the catalog (SQLAlchemy 2 typed declarative).

These classes are private to :mod:`jobs.catalog`: the service turns rows into the dataclasses of
:mod:`jobs.catalog.records`. The schema is created only by the Alembic revisions in
``migrations/``; a test compares these models with the migrated schema, so a change here needs a
new revision.

Conventions: stream instants (watermarks, window bounds, event times, batch ids) are BIGINT epoch
ms; bookkeeping times are :class:`UTCDateTime`; enumerations are strings guarded by named CHECK
constraints (portable, and readable in a SQL shell). Window slots of late counts and panes carry
a text ``slot`` (``json([end, start, key])``, time first for index locality; see
:func:`jobs.catalog.base.slot_of`) because a unique constraint over nullable window bounds (the
global window) would not deduplicate on either backend. On PostgreSQL ``late_window_counts``
has ``fillfactor = 50`` (revision 0004, not expressible in the model): its rows are updated
every batch that counts their window again, and free room in the page lets PostgreSQL update
them in place (HOT, no new index entries).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jobs.catalog.types import UTCDateTime

SCHEMA_HEAD = "0004"
"""The Alembic revision these models correspond to (a test checks it is the migrations' head);
a change to the models comes with a new revision and a new value here."""

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
    }


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


DESIRED_STATES = ("running", "stopped")
COMPATIBILITIES = ("initial", "same_store", "new_store")
RUN_STATUSES = ("running", "succeeded", "stopped", "failed", "killed", "lost")
OUTCOMES = ("ok", "refused", "failed")
ROLES = ("viewer", "editor", "operator", "admin")
MIGRATION_STATES = (
    "planned",
    "replaying",
    "caught_up",
    "cut_over",
    "done",
    "failed",
    "rolled_back",
)
TIMINGS = ("EARLY", "ON_TIME", "LATE")


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (CheckConstraint(_in("desired_state", DESIRED_STATES), name="desired_state"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    desired_state: Mapped[str] = mapped_column(String(16), default="stopped")
    active_version: Mapped[int | None] = mapped_column(Integer)
    latest_version: Mapped[int] = mapped_column(Integer, default=0)
    failed_reason: Mapped[str | None] = mapped_column(Text)
    failed_at: Mapped[datetime | None]
    restart_count: Mapped[int] = mapped_column(Integer, default=0)
    last_restart_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(128))
    updated_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]


class DefinitionVersion(Base):
    """Immutable: the ORM refuses updates and deletes, and so do database triggers."""

    __tablename__ = "definition_versions"
    __table_args__ = (
        UniqueConstraint("job_id", "number"),
        CheckConstraint(_in("compatibility", COMPATIBILITIES), name="compatibility"),
        CheckConstraint("number >= 1", name="number_positive"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    number: Mapped[int] = mapped_column(Integer)
    spec_json: Mapped[str] = mapped_column(Text)
    spec_hash: Mapped[str] = mapped_column(String(64))
    store_name: Mapped[str] = mapped_column(String(200), index=True)
    author: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]
    note: Mapped[str] = mapped_column(Text, default="")
    compatibility: Mapped[str] = mapped_column(String(16))


class AuditEventRow(Base):
    """Append-only: the ORM refuses updates and deletes, and so do database triggers."""

    __tablename__ = "audit_events"
    __table_args__ = (
        CheckConstraint(_in("outcome", OUTCOMES), name="outcome"),
        Index(None, "job", "id"),
        Index(None, "actor", "id"),
        Index(None, "action", "id"),
        Index(None, "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime]
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    job: Mapped[str | None] = mapped_column(String(63))
    version: Mapped[int | None] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text, default="")
    diff: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class OutboxRow(Base):
    __tablename__ = "outbox"
    __table_args__ = (Index(None, "consumed_at", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime]
    kind: Mapped[str] = mapped_column(String(32))
    job: Mapped[str | None] = mapped_column(String(63))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claimed_until: Mapped[datetime | None]
    consumed_by: Mapped[str | None] = mapped_column(String(128))
    consumed_at: Mapped[datetime | None]


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
        Index(None, "job_id", "id"),
        Index(None, "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    version: Mapped[int] = mapped_column(Integer)
    store: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int | None] = mapped_column(Integer)
    host: Mapped[str] = mapped_column(String(255))
    log_path: Mapped[str | None] = mapped_column(Text)
    spark_app_id: Mapped[str | None] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16))
    exit_reason: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime]
    last_heartbeat_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]
    restart_count: Mapped[int] = mapped_column(Integer, default=0)


class BatchProgressRow(Base):
    __tablename__ = "batch_progress"
    __table_args__ = (UniqueConstraint("store", "batch_id"), Index(None, "job_id", "id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    store: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    recorded_at: Mapped[datetime]
    input_rows: Mapped[int] = mapped_column(BigInteger)
    rows_per_second: Mapped[float] = mapped_column(Float)
    duration_ms: Mapped[int] = mapped_column(BigInteger)
    watermark: Mapped[int | None] = mapped_column(BigInteger)
    state_rows: Mapped[int] = mapped_column(BigInteger)
    state_bytes: Mapped[int] = mapped_column(BigInteger)
    late_accepted: Mapped[int] = mapped_column(BigInteger)
    late_dropped: Mapped[int] = mapped_column(BigInteger)
    dead_letters: Mapped[int] = mapped_column(BigInteger)


class SnapshotRow(Base):
    __tablename__ = "snapshots"
    __table_args__ = (UniqueConstraint("store", "batch_id"), Index(None, "job_id", "id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    version: Mapped[int] = mapped_column(Integer)
    store: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    committed_at: Mapped[datetime]
    watermark: Mapped[int | None] = mapped_column(BigInteger)
    source_offsets: Mapped[Any] = mapped_column(JSON)
    state_rows: Mapped[int] = mapped_column(BigInteger)
    state_bytes: Mapped[int] = mapped_column(BigInteger)
    checkpoint_location: Mapped[str] = mapped_column(Text)


class LateWindowCount(Base):
    """Late totals per window, summed over batches (upserted per batch); ``slot`` is
    :func:`jobs.catalog.base.slot_of` of the window."""

    __tablename__ = "late_window_counts"
    __table_args__ = (UniqueConstraint("store", "slot"), Index(None, "job_id", "window_end"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    store: Mapped[str] = mapped_column(String(200))
    slot: Mapped[str] = mapped_column(String(1000))
    key_json: Mapped[str] = mapped_column(Text)
    window_start: Mapped[int | None] = mapped_column(BigInteger)
    window_end: Mapped[int | None] = mapped_column(BigInteger)
    accepted: Mapped[int] = mapped_column(BigInteger)
    dropped: Mapped[int] = mapped_column(BigInteger)
    last_at: Mapped[datetime]


class LateSampleRow(Base):
    __tablename__ = "late_samples"
    __table_args__ = (Index(None, "job_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    store: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    recorded_at: Mapped[datetime]
    key_json: Mapped[str] = mapped_column(Text)
    event_time: Mapped[int | None] = mapped_column(BigInteger)
    window_start: Mapped[int | None] = mapped_column(BigInteger)
    window_end: Mapped[int | None] = mapped_column(BigInteger)
    reason: Mapped[str] = mapped_column(String(32))
    record: Mapped[Any] = mapped_column(JSON)


class DeadLetterRow(Base):
    __tablename__ = "dead_letters"
    __table_args__ = (Index(None, "job_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    store: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    recorded_at: Mapped[datetime]
    reason: Mapped[str] = mapped_column(Text)
    record: Mapped[Any] = mapped_column(JSON)


class PaneBatch(Base):
    """One row per (store, batch_id) whose panes were written: the idempotency guard."""

    __tablename__ = "pane_batches"
    __table_args__ = (UniqueConstraint("store", "batch_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    version: Mapped[int] = mapped_column(Integer)
    store: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    pane_count: Mapped[int] = mapped_column(Integer)
    written_at: Mapped[datetime]


class PaneRow(Base):
    __tablename__ = "panes"
    __table_args__ = (
        UniqueConstraint("store", "batch_id", "seq"),
        CheckConstraint(_in("timing", TIMINGS), name="timing"),
        Index(None, "job_id", "batch_id", "seq"),
        Index(None, "job_id", "window_start"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    version: Mapped[int] = mapped_column(Integer)
    store: Mapped[str] = mapped_column(String(200))
    batch_id: Mapped[int] = mapped_column(BigInteger)
    seq: Mapped[int] = mapped_column(Integer)
    key_json: Mapped[str] = mapped_column(Text)
    window_start: Mapped[int | None] = mapped_column(BigInteger)
    window_end: Mapped[int | None] = mapped_column(BigInteger)
    timing: Mapped[str] = mapped_column(String(8))
    pane_index: Mapped[int] = mapped_column(Integer)
    is_first: Mapped[bool] = mapped_column(Boolean)
    is_last: Mapped[bool] = mapped_column(Boolean)
    retraction: Mapped[bool] = mapped_column(Boolean)
    values: Mapped[dict[str, Any]] = mapped_column(JSON)
    emitted_at: Mapped[int] = mapped_column(BigInteger)
    watermark: Mapped[int | None] = mapped_column(BigInteger)
    first_event_time: Mapped[int | None] = mapped_column(BigInteger)
    last_event_time: Mapped[int | None] = mapped_column(BigInteger)


class Migration(Base):
    __tablename__ = "migrations"
    __table_args__ = (
        CheckConstraint(_in("state", MIGRATION_STATES), name="state"),
        Index(None, "job_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    from_version: Mapped[int] = mapped_column(Integer)
    to_version: Mapped[int] = mapped_column(Integer)
    from_store: Mapped[str] = mapped_column(String(200))
    to_store: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(128))
    replayed_files: Mapped[int] = mapped_column(Integer, default=0)
    total_files: Mapped[int | None] = mapped_column(Integer)
    new_watermark: Mapped[int | None] = mapped_column(BigInteger)
    old_watermark: Mapped[int | None] = mapped_column(BigInteger)
    cutover_watermark: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)


class MigrationStepRow(Base):
    __tablename__ = "migration_steps"
    __table_args__ = (
        CheckConstraint(_in("state", MIGRATION_STATES), name="state"),
        Index(None, "migration_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    migration_id: Mapped[int] = mapped_column(ForeignKey("migrations.id"))
    at: Mapped[datetime]
    state: Mapped[str] = mapped_column(String(16))
    actor: Mapped[str] = mapped_column(String(128))
    message: Mapped[str] = mapped_column(Text, default="")
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class UserRow(Base):
    __tablename__ = "users"
    __table_args__ = (CheckConstraint(_in("role", ROLES), name="role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
