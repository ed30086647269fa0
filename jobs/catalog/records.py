"""Plain, frozen values the catalog service takes and returns.

Nothing outside :mod:`jobs.catalog` sees an ORM object: sessions close when a service call
returns, so handing out live rows would invite lazy-load errors and accidental writes. These
dataclasses are what the UI, the DAGs, the Spark job and the CLI code against.

Conventions: stream instants (watermarks, window bounds, event times) are ``int`` epoch ms;
bookkeeping times (created, started, heartbeat) are UTC-aware ``datetime``; keys and record
payloads are JSON values (a key is a JSON scalar, ``None`` is the null key).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

JsonValue = Any
"""A JSON-serialisable value (dict / list / str / int / float / bool / None)."""

DesiredState = Literal["running", "stopped"]
JobStatus = Literal["running", "starting", "stopping", "stopped", "failed", "deleted"]
Compatibility = Literal["initial", "same_store", "new_store"]
RunStatus = Literal["running", "succeeded", "stopped", "failed", "killed", "lost"]
Outcome = Literal["ok", "refused", "failed"]
Role = Literal["viewer", "editor", "operator", "admin"]
Action = Literal["read", "edit", "operate", "admin"]
MigrationState = Literal[
    "planned", "replaying", "caught_up", "cut_over", "done", "failed", "rolled_back"
]
Timing = Literal["EARLY", "ON_TIME", "LATE"]


# ---------------------------------------------------------------- jobs and versions


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One immutable definition version."""

    job: str
    number: int
    spec_json: str
    """Canonical JSON (``jobs.definition.canonical_json``): what the job runs."""
    spec_hash: str
    store_name: str
    author: str
    created_at: datetime
    note: str
    compatibility: Compatibility
    """Relation to the previous version: ``initial`` (v1), ``same_store`` or ``new_store``."""

    @property
    def spec(self) -> dict[str, JsonValue]:
        """The canonical spec as a dict (parsed on each access)."""
        result: dict[str, JsonValue] = json.loads(self.spec_json)
        return result


@dataclass(frozen=True, slots=True)
class SaveResult:
    """Outcome of :meth:`Catalog.save_version`.

    ``created`` is False for a no-op save (the canonical spec equals the latest version's);
    ``version`` is then that latest version. ``kind`` is the diff kind against the version the
    edit replaced (``unchanged`` for a no-op), ``changes`` the changed field paths as
    ``(path, old, new)`` triples.
    """

    version: VersionInfo
    created: bool
    kind: Literal["unchanged", "same_store", "new_store"]
    changes: tuple[tuple[str, JsonValue, JsonValue], ...] = ()


@dataclass(frozen=True, slots=True)
class JobInfo:
    name: str
    desired_state: DesiredState
    status: JobStatus
    """Derived: ``failed`` (crash-loop limit, see ``failed_reason``), ``running`` (a run is
    live), ``starting`` (desired running, no live run yet), ``stopping`` (desired stopped, a run
    still live), ``stopped``, ``deleted``."""
    active_version: int | None
    latest_version: int
    active_store: str | None
    failed_reason: str | None
    failed_at: datetime | None
    restart_count: int
    """Consecutive restarts since the last healthy start or operator action (crash-loop input)."""
    last_restart_at: datetime | None
    created_at: datetime
    created_by: str
    updated_at: datetime
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class JobOverview:
    """One line of the UI's jobs page."""

    job: JobInfo
    run: RunInfo | None
    """The live run, if any (else None)."""
    last_batch_id: int | None
    last_batch_at: datetime | None
    rows_per_second: float | None
    watermark: int | None
    watermark_lag_ms: int | None
    """now - watermark, from the injected clock; None before the first watermark."""
    late_accepted: int
    late_dropped: int
    dead_letters: int


# ---------------------------------------------------------------- audit and outbox


@dataclass(frozen=True, slots=True)
class AuditEvent:
    id: int
    at: datetime
    actor: str
    action: str
    """create, edit, activate, start, stop, restart, fail, migrate, migration_step, rollback,
    delete, run_start, run_end, user_add, user_update, ..."""
    job: str | None
    version: int | None
    outcome: Outcome
    message: str
    diff: list[dict[str, JsonValue]] | None
    """For edits/activations: ``[{"path":..., "old":..., "new":...}, ...]``."""
    data: dict[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OutboxEvent:
    """A definition/lifecycle change the orchestration reacts to.

    kinds: ``job_created``, ``version_saved``, ``version_activated`` (payload has
    ``from_version``, ``to_version``, ``same_store``, ``from_store``, ``to_store``),
    ``desired_state`` (``state``), ``restart_requested``, ``job_deleted``,
    ``migration_requested`` (``migration_id``).
    """

    id: int
    created_at: datetime
    kind: str
    job: str | None
    payload: dict[str, JsonValue]


# ---------------------------------------------------------------- runs and batches


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: int
    job: str
    version: int
    store: str
    pid: int | None
    host: str
    log_path: str | None
    spark_app_id: str | None
    status: RunStatus
    exit_reason: str | None
    started_at: datetime
    last_heartbeat_at: datetime
    ended_at: datetime | None
    restart_count: int
    """The job's restart counter when this run was launched (0 = first launch)."""


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """What the Spark job measured for one micro-batch."""

    batch_id: int
    input_rows: int
    rows_per_second: float
    duration_ms: int
    watermark: int | None
    state_rows: int
    state_bytes: int
    late_accepted: int = 0
    late_dropped: int = 0
    dead_letters: int = 0


@dataclass(frozen=True, slots=True)
class BatchSnapshot:
    """A recovery point: the committed micro-batch and where its state lives."""

    batch_id: int
    committed_at: datetime
    watermark: int | None
    source_offsets: JsonValue
    state_bytes: int
    checkpoint_location: str
    state_rows: int = 0


@dataclass(frozen=True, slots=True)
class LateCount:
    """Late records of one window in one micro-batch."""

    key: JsonValue
    window_start: int | None
    window_end: int | None
    accepted: int = 0
    dropped: int = 0


@dataclass(frozen=True, slots=True)
class LateSample:
    """One late record kept for the UI (the newest N per job are kept)."""

    key: JsonValue
    event_time: int | None
    window_start: int | None
    window_end: int | None
    reason: str
    """``expired`` / ``before_watermark`` (dropped) or ``accepted``."""
    record: JsonValue


@dataclass(frozen=True, slots=True)
class DeadLetterSample:
    reason: str
    record: JsonValue


@dataclass(frozen=True, slots=True)
class ProgressPoint:
    """A stored :class:`BatchProgress` with where/when it came from."""

    run_id: int
    job: str
    store: str
    recorded_at: datetime
    batch_id: int
    input_rows: int
    rows_per_second: float
    duration_ms: int
    watermark: int | None
    state_rows: int
    state_bytes: int
    late_accepted: int
    late_dropped: int
    dead_letters: int


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    run_id: int
    job: str
    version: int
    store: str
    batch_id: int
    committed_at: datetime
    watermark: int | None
    source_offsets: JsonValue
    state_rows: int
    state_bytes: int
    checkpoint_location: str


@dataclass(frozen=True, slots=True)
class WindowLateCount:
    """Late totals of one window (summed over all batches)."""

    job: str
    store: str
    key: JsonValue
    window_start: int | None
    window_end: int | None
    accepted: int
    dropped: int
    last_at: datetime


@dataclass(frozen=True, slots=True)
class LatePoint:
    """Late totals of one micro-batch (late data over time)."""

    recorded_at: datetime
    batch_id: int
    store: str
    accepted: int
    dropped: int


@dataclass(frozen=True, slots=True)
class StoredLateSample:
    id: int
    job: str
    store: str
    batch_id: int
    recorded_at: datetime
    sample: LateSample


@dataclass(frozen=True, slots=True)
class StoredDeadLetter:
    id: int
    job: str
    store: str
    batch_id: int
    recorded_at: datetime
    sample: DeadLetterSample


# ---------------------------------------------------------------- panes (catalog sink)


@dataclass(frozen=True, slots=True)
class PaneRecord:
    """One emitted pane, as the engine's ``Pane.to_json()`` describes it."""

    key: JsonValue
    window_start: int | None
    window_end: int | None
    timing: Timing
    pane_index: int
    is_first: bool
    is_last: bool
    retraction: bool
    values: dict[str, JsonValue]
    emitted_at: int
    watermark: int | None
    first_event_time: int | None = None
    last_event_time: int | None = None

    @classmethod
    def from_json(cls, obj: dict[str, JsonValue]) -> PaneRecord:
        """From the replay/engine JSON form (``{"type": "pane", ...}``)."""
        return cls(
            key=obj.get("key"),
            window_start=obj.get("window_start"),
            window_end=obj.get("window_end"),
            timing=obj["timing"],
            pane_index=int(obj["pane_index"]),
            is_first=bool(obj["is_first"]),
            is_last=bool(obj["is_last"]),
            retraction=bool(obj.get("retraction", False)),
            values=dict(obj.get("values") or {}),
            emitted_at=int(obj["emitted_at"]),
            watermark=obj.get("watermark"),
            first_event_time=obj.get("first_event_time"),
            last_event_time=obj.get("last_event_time"),
        )

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {
            "type": "pane",
            "key": self.key,
            "window_start": self.window_start,
            "window_end": self.window_end,
            "timing": self.timing,
            "pane_index": self.pane_index,
            "is_first": self.is_first,
            "is_last": self.is_last,
            "retraction": self.retraction,
            "values": self.values,
            "emitted_at": self.emitted_at,
            "watermark": self.watermark,
        }
        if self.first_event_time is not None or self.last_event_time is not None:
            out["first_event_time"] = self.first_event_time
            out["last_event_time"] = self.last_event_time
        return out


@dataclass(frozen=True, slots=True)
class StoredPane:
    job: str
    version: int
    store: str
    batch_id: int
    seq: int
    """Position of the pane within its batch (emission order)."""
    pane: PaneRecord


# ---------------------------------------------------------------- migrations


@dataclass(frozen=True, slots=True)
class MigrationStep:
    at: datetime
    state: MigrationState
    actor: str
    message: str
    data: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class MigrationInfo:
    """A store-changing version switch and its progress.

    Ownership: windows ending at or before ``cutover_watermark`` belong to ``from_version``,
    windows ending after it to ``to_version`` (see :meth:`owner_of`).
    """

    id: int
    job: str
    from_version: int
    to_version: int
    from_store: str
    to_store: str
    state: MigrationState
    created_at: datetime
    updated_at: datetime
    created_by: str
    replayed_files: int
    total_files: int | None
    new_watermark: int | None
    old_watermark: int | None
    cutover_watermark: int | None
    error: str | None
    steps: tuple[MigrationStep, ...] = ()

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "rolled_back")

    def owner_of(self, window_end: int | None) -> int:
        """The version whose results are authoritative for a window ending at ``window_end``."""
        if self.cutover_watermark is None or self.state in ("failed", "rolled_back"):
            return self.from_version
        if window_end is None:  # the global window only ever closes at end of input
            return self.to_version
        return self.from_version if window_end <= self.cutover_watermark else self.to_version


# ---------------------------------------------------------------- users


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: Role
    created_at: datetime
    disabled: bool = False
