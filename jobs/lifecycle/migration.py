"""Migration to a new state store, and roll back, as resumable steps.

A change that needs a new store cannot reuse the checkpoint (Spark would silently mix state
shapes), so the new version is built beside the old one:

    planned --start_replay--> replaying --(new caught up)--> caught_up --cut_over--> cut_over
            --retire_old--> done

- ``start_replay``: the new version starts on its own store's checkpoint. A store never seen
  before has no checkpoint, so the run replays all retained input from the beginning; a store
  that has one (roll back, or a definition shaped like an earlier one) resumes it and catches up
  on what it missed. The old version keeps serving meanwhile.
- caught up: the new run's input position has reached the old run's (positions are watermark
  plus the version's bounded delay, i.e. the max event time seen, so versions with different
  delays compare fairly).
- ``cut_over``: the catalog records the cutover watermark: the watermark the old version's latest
  batch applied (the one its previous batch reported) minus its allowed lateness, the horizon up
  to which the old version has emitted every window it will ever emit (it is stopped right
  after). Erring low is always safe: the new version has every window, from the start. Windows ending at or before it are owned by the old version, later ones by the new
  one (``MigrationInfo.owner_of``). The new version becomes the active one.
- ``retire_old``: the old run is stopped gracefully; its checkpoint and results are kept, so it
  can be rolled back to.

Every transition is one catalog update (which writes the audit event), checked against the
recorded state first, under the job's lock: running a step twice, or re-running a DAG that
failed half way, continues where the migration stands instead of repeating or skipping a step.
A job that is not running has nothing serving: its migration cuts over at once and the new
version replays when the job is started.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.catalog import CatalogError
from jobs.catalog.records import MigrationInfo, VersionInfo
from jobs.definition.model import INFINITE
from jobs.lifecycle.catalog_port import LifecycleCatalog
from jobs.lifecycle.decide import serving_version
from jobs.lifecycle.errors import LifecycleError
from jobs.lifecycle.reconcile import Supervisor
from jobs.storage.location import join

NO_WINDOWS = -(2**62)
"""Cutover watermark when the old version never committed a watermark: it owns no window."""


@dataclass(frozen=True, slots=True)
class Position:
    """How far a store has read: its latest watermark and the event time that implies, and the
    watermark its latest batch applied (everything that closed has been emitted)."""

    watermark: int | None
    batches: int
    event_time: int | None
    applied: int | None = None


@dataclass(frozen=True, slots=True)
class ActivationResult:
    """What handling one activation did: a migration to drive, or a restart in place."""

    job: str
    version: int
    migration_id: int | None
    action: str
    """``migrate``, ``rollback``, ``restart_in_place``, ``stale`` (a later activation exists)."""
    detail: str


def input_position(watermark: int, spec: dict[str, Any]) -> int:
    """How far in event time a store has read, from its watermark: a bounded watermark trails
    the max event time seen by the delay, so two versions with different delays that read the
    same input report different watermarks but the same position."""
    wm_spec = spec.get("watermark") or {}
    delay = int(wm_spec.get("delay", 0) or 0)
    if wm_spec.get("strategy", "bounded") == "bounded" and 0 <= delay < INFINITE:
        return watermark + delay
    return watermark


class Migrator:
    def __init__(self, supervisor: Supervisor, actor: str = "airflow:migration") -> None:
        self.supervisor = supervisor
        self.catalog: LifecycleCatalog = supervisor.catalog
        self.actor = actor

    # ---- planning ----------------------------------------------------------------------------
    def handle_activation(
        self, job: str, version: int, *, from_version: int | None = None, reason: str = ""
    ) -> ActivationResult:
        """React to ``version`` of ``job`` having been activated (outbox ``version_activated``
        or a manual trigger): plan a migration if the serving version uses another store,
        restart in place otherwise. Idempotent: an open migration to ``version`` is reused.

        ``from_version`` (the outbox payload's) is the version the change replaces; it matters
        when nothing runs, so the switch of stores is still recorded with a cutover."""
        with self.supervisor.job_lock(job):
            jv = self.catalog.job(job)
            if jv.active_version != version:
                detail = f"v{version} is no longer active (v{jv.active_version} is): nothing to do"
                self._audit("migrate", job, version, detail, outcome="refused")
                return ActivationResult(job, version, None, "stale", detail)
            migrations = self.catalog.migrations(job)
            for m in migrations:
                if m.unfinished and m.to_version == version:
                    return ActivationResult(job, version, m.id, "migrate", f"migration {m.id} already unfinished")
            runs = self.catalog.runs(job)
            serving = serving_version(jv, runs, migrations)
            if not any(r.active for r in runs) and from_version is not None:
                serving = from_version
            to_store = self.catalog.store_of(job, version)
            from_store = self.catalog.store_of(job, serving) if serving is not None else None
            for m in migrations:  # a newer activation supersedes an unfinished migration
                if m.unfinished:
                    self.catalog.update_migration(
                        m.id, "rolled_back", message=f"superseded by the activation of v{version}"
                    )
            if serving is None or from_store == to_store:
                detail = f"v{version} keeps store {to_store}: restart in place ({reason or 'activation'})"
                self._audit("restart", job, version, detail)
                self.supervisor.reconcile_job(job)
                return ActivationResult(job, version, None, "restart_in_place", detail)
            kind = "rollback" if version < serving else "migrate"
            info = self.catalog.create_migration(job, serving, version)
            detail = f"migration {info.id}: v{serving} ({from_store}) -> v{version} ({to_store})"
            return ActivationResult(job, version, info.id, kind, detail)

    # ---- steps -------------------------------------------------------------------------------
    def start_replay(self, migration_id: int, *, retry_failed: bool = False) -> MigrationInfo:
        """planned -> replaying (start the new version); with ``retry_failed``, a failed
        migration that had not cut over is retried the same way."""
        startable = {"planned", "failed"} if retry_failed else {"planned"}
        m = self.catalog.migration(migration_id)
        if m.state not in startable or (m.state == "failed" and m.cutover_watermark is not None):
            return m
        with self.supervisor.job_lock(m.job):
            m = self.catalog.migration(migration_id)
            if m.state not in startable:
                return m
            refused, partial = self._retention_guard(m)
            if refused is not None:
                return refused
            if not self.catalog.job(m.job).should_run:
                return self._cut_over_locked(
                    m, "the job is not running: nothing serves, cut over at once" + partial)
            m = self._step(
                m, "replaying",
                f"start v{m.to_version} on store {m.to_store} beside v{m.from_version}{partial}")
        self.supervisor.reconcile_job(m.job)  # starts the target run
        return self.catalog.migration(migration_id)

    def position(self, job: str, version: int, store: str) -> Position:
        wm, applied, batches = self.catalog.store_watermark(job, store)
        if wm is None:
            return Position(None, batches, None, applied)
        return Position(wm, batches, input_position(wm, self._version(job, version).spec), applied)

    def check_caught_up(self, migration_id: int) -> MigrationInfo:
        """Record both positions; move to ``caught_up`` once the new one has reached the old."""
        m = self.catalog.migration(migration_id)
        if m.state != "replaying":
            return m
        new = self.position(m.job, m.to_version, m.to_store)
        old = self.position(m.job, m.from_version, m.from_store)
        caught = new.batches > 0 and (
            old.event_time is None or (new.event_time is not None and new.event_time >= old.event_time)
        )
        with self.supervisor.job_lock(m.job):
            m = self.catalog.migration(migration_id)
            if m.state != "replaying":
                return m
            if caught:
                return self._step(
                    m, "caught_up",
                    f"v{m.to_version} reached event time {new.event_time} (v{m.from_version}: {old.event_time})",
                    new_watermark=new.watermark, old_watermark=old.watermark,
                )
            if (new.watermark, old.watermark) != (m.new_watermark, m.old_watermark):
                return self.catalog.update_migration(
                    m.id, "replaying", message="replay progress",
                    new_watermark=new.watermark, old_watermark=old.watermark,
                )
            return m

    def cut_over(self, migration_id: int) -> MigrationInfo:
        m = self.catalog.migration(migration_id)
        if m.state != "caught_up":
            return m
        with self.supervisor.job_lock(m.job):
            m = self.catalog.migration(migration_id)
            if m.state != "caught_up":
                return m
            return self._cut_over_locked(m, "new version caught up")

    def retire_old(self, migration_id: int) -> MigrationInfo:
        """Stop the old version's run (its checkpoint stays for roll back) and finish."""
        m = self.catalog.migration(migration_id)
        if m.state != "cut_over":
            return m
        for run in self.catalog.runs(m.job):
            if run.active and run.version == m.from_version and run.store == m.from_store:
                with self.supervisor.job_lock(m.job):
                    self.supervisor.stop_run(run, f"retired by migration {m.id} (checkpoint kept)")
        with self.supervisor.job_lock(m.job):
            m = self.catalog.migration(migration_id)
            if m.state != "cut_over":
                return m
            return self._step(m, "done", f"v{m.from_version} retired; its checkpoint {m.from_store} is kept")

    def advance(self, migration_id: int) -> MigrationInfo:
        """One non-blocking step from wherever the migration stands."""
        m = self.catalog.migration(migration_id)
        steps: dict[str, Callable[[int], MigrationInfo]] = {
            "planned": self.start_replay,
            "replaying": self.check_caught_up,
            "caught_up": self.cut_over,
            "cut_over": self.retire_old,
        }
        step = steps.get(m.state)
        return step(migration_id) if step else m

    def drive(
        self,
        migration_id: int,
        *,
        timeout_s: float = 3600.0,
        poll_s: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        reconcile: bool = True,
        progress: Callable[[MigrationInfo], None] | None = None,
    ) -> MigrationInfo:
        """Advance until finished (done/failed); keeps the new run alive meanwhile.
        ``progress`` sees the migration after every step (the CLI prints it)."""
        deadline = time.monotonic() + timeout_s
        while True:
            before = self.catalog.migration(migration_id)
            m = self.advance(migration_id)
            if progress is not None:
                progress(m)
            if m.finished:
                return m
            if m.state == before.state:
                if time.monotonic() >= deadline:
                    raise LifecycleError(
                        f"migration {migration_id} of {m.job}: still {m.state} after {timeout_s:.0f}s"
                    )
                if reconcile:
                    self.supervisor.reconcile_job(m.job)
                sleep(poll_s)

    # ---- internals ---------------------------------------------------------------------------
    def _retention_guard(self, m: MigrationInfo) -> tuple[MigrationInfo | None, str]:
        """Before a new store rebuilds from Kafka (jobs/lifecycle/retention_gate.py): the
        migration refused (failed) when retention deleted input the old store consumed and no
        user accepted a partial rebuild; else ("", or the complete-from note for the step)."""
        from jobs.kafka.errors import KafkaSetupError
        from jobs.lifecycle import retention_gate as gate

        if m.from_store == m.to_store:
            return None, ""
        spec = self._version(m.job, m.to_version).spec
        settings = self.supervisor.settings
        try:
            verdict = gate.check_rebuild(settings, m.from_store, spec)
        except KafkaSetupError as exc:
            return self._refuse(m, f"{gate.REFUSAL} {exc}", {"migration_id": m.id}), ""
        if verdict is None or verdict.complete:
            if verdict is not None:
                self.catalog.audit(gate.GUARD_ACTION, job=m.job, version=m.to_version,
                                   message=f"migration {m.id}: {verdict.message()}",
                                   data=gate.acceptance_data(verdict, migration_id=m.id))
            return None, ""
        events = self.catalog.catalog.audit(job=m.job, action=gate.ACCEPT_ACTION, limit=50)
        accepted = gate.acceptance(events, migration_id=m.id, to_version=m.to_version,
                                   from_store=m.from_store, to_store=m.to_store)
        data = gate.acceptance_data(verdict, migration_id=m.id)
        if accepted is None:
            why = (f"{gate.REFUSAL} migration {m.id} refused: {verdict.message()} (tidemark "
                   f"migrate --resume "
                   f"{m.id} --accept-partial-rebuild, or the Migrations page)")
            return self._refuse(m, why, data), ""
        note = (f"; partial rebuild accepted by {accepted.actor}: results complete "
                f"{gate.describe(verdict.complete_from)}")
        sink = spec.get("sink") or {}
        base = sink.get("path") or join(settings.results_root, m.job)
        where = gate.write_complete_from(join(base, m.to_store), verdict, m.id)
        self.catalog.audit(gate.GUARD_ACTION, job=m.job, version=m.to_version,
                           message=f"migration {m.id}{note} (recorded in {where})",
                           data={**data, "accepted_by": accepted.actor, "recorded_in": where})
        return None, note

    def _refuse(self, m: MigrationInfo, why: str, data: dict[str, Any]) -> MigrationInfo:
        from jobs.lifecycle.retention_gate import GUARD_ACTION

        self.catalog.audit(GUARD_ACTION, job=m.job, version=m.to_version, message=why,
                           outcome="refused", data=data)
        return self.catalog.update_migration(m.id, "failed", message=why, error=why)

    def _cut_over_locked(self, m: MigrationInfo, why: str) -> MigrationInfo:
        old = self.position(m.job, m.from_version, m.from_store)
        lateness = int(self._version(m.job, m.from_version).spec.get("allowed_lateness", 0) or 0)
        if old.applied is None:
            cutover = NO_WINDOWS
        elif lateness >= INFINITE:
            cutover = old.applied
        else:
            cutover = old.applied - lateness
        # the catalog switches the active version in the same transaction as the cut_over step
        if m.state in ("planned", "failed"):  # failed: a retry (start_replay(retry_failed))
            m = self._step(m, "replaying", why)
            m = self._step(m, "caught_up", why)
        return self._step(
            m, "cut_over",
            f"{why}; cutover watermark {cutover}: windows ending at or before it are owned by"
            f" v{m.from_version}, later ones by v{m.to_version}",
            cutover_watermark=cutover, old_watermark=old.watermark,
        )

    def _step(self, m: MigrationInfo, state: str, message: str, **fields: int | None) -> MigrationInfo:
        try:
            return self.catalog.update_migration(m.id, state, message=message, **fields)  # type: ignore[arg-type]
        except CatalogError as exc:
            current = self.catalog.migration(m.id)
            if current.state == state:  # someone else did this step: fine
                return current
            raise LifecycleError(f"migration {m.id} of {m.job}: cannot go {m.state} -> {state}: {exc}") from exc

    def _version(self, job: str, version: int) -> VersionInfo:
        return self.catalog.version(job, version)

    def _audit(self, action: str, job: str, version: int, message: str, outcome: str = "ok") -> None:
        self.catalog.audit(action, job=job, version=version, message=message, outcome=outcome)


def rollback(migrator: Migrator, job: str, version: int, *, actor: str, note: str = "") -> ActivationResult:
    """Re-activate an earlier version: it resumes from its own checkpoint and catches up.

    The catalog records the activation (audited as ``rollback``). Its store has run before, so
    the catalog switches at once and the switch follows the path of any immediate activation:
    the earlier version runs beside the current one on its own checkpoint until it has caught
    up, then takes over (a migration of kind roll back); with the same store it is a restart in
    place. Never-run stores make the catalog plan an ordinary migration instead.
    """
    before = migrator.catalog.job(job).active_version
    migrator.catalog.activate(job, version, actor, note=note or "roll back")
    pending = [m for m in migrator.catalog.migrations(job) if m.unfinished and m.to_version == version]
    if pending:  # the catalog planned a migration itself
        return ActivationResult(job, version, pending[0].id, "rollback", f"migration {pending[0].id}")
    return migrator.handle_activation(job, version, from_version=before, reason=f"roll back by {actor}")
