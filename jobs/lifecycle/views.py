"""What the lifecycle logic needs to know about jobs, runs and migrations.

Plain frozen dataclasses, filled from the catalog by :mod:`jobs.lifecycle.catalog_port`, so the
decisions in :mod:`jobs.lifecycle.decide` are pure functions of them (and testable without a
database, a process or Airflow). All instants are epoch ms; names of states are the catalog's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DesiredState = Literal["running", "stopped"]

CRASH_STATUSES = frozenset({"failed", "killed", "lost"})
"""Ended runs (catalog ``RunStatus``) that count toward the crash-loop limit: died on their own
or could not be launched (``failed``), were killed from outside (``killed``), or were killed by
the supervisor because their heartbeat went stale (``lost``). ``stopped`` / ``succeeded`` runs
ended on purpose and reset the count."""


@dataclass(frozen=True, slots=True)
class JobView:
    name: str
    desired: DesiredState
    active_version: int | None
    active_store: str | None = None
    failed: bool = False
    failed_reason: str | None = None
    restart_count: int = 0
    """Consecutive restarts since the last healthy run or operator start (the catalog's
    counter; an operator's start resets it)."""
    deleted: bool = False
    restart_requested_at: int | None = None
    """An operator's latest restart request: a serving run started before it is restarted."""

    @property
    def should_run(self) -> bool:
        return self.desired == "running" and not self.failed and not self.deleted


@dataclass(frozen=True, slots=True)
class RunView:
    id: int
    job: str
    version: int
    status: str
    started_at: int
    store: str = ""
    pid: int | None = None
    host: str | None = None
    log_path: str | None = None
    ended_at: int | None = None
    exit_reason: str | None = None
    restart_count: int = 0
    last_heartbeat: int | None = None

    @property
    def active(self) -> bool:
        return self.ended_at is None and self.status == "running"


MigrationKind = Literal["migrate", "rollback"]
MigrationStep = Literal[
    "planned", "replaying", "caught_up", "cut_over", "done", "failed", "rolled_back"
]
"""The catalog's ``MigrationState`` names."""
FINISHED_MIGRATION_STEPS = frozenset({"done", "rolled_back"})
"""As in the catalog: a ``failed`` migration is unfinished (it waits for a retry or a roll
back), and a job has at most one unfinished migration."""


@dataclass(frozen=True, slots=True)
class MigrationView:
    id: int
    job: str
    from_version: int
    to_version: int
    from_store: str
    to_store: str
    step: MigrationStep
    created_at: int
    """When the migration was planned, or last retried (crash counting of its target starts
    there)."""
    cutover_watermark: int | None = None
    error: str | None = None

    @property
    def unfinished(self) -> bool:
        return self.step not in FINISHED_MIGRATION_STEPS

    @property
    def before_cutover(self) -> bool:
        """The old version still serves; the new one (if replaying) runs beside it."""
        return self.step in {"planned", "replaying", "caught_up"}

    @property
    def target_runs(self) -> bool:
        """Should the target version be running now, besides the serving one?"""
        return self.step in {"replaying", "caught_up"}
