"""Migrations between state stores, recorded step by step so a failed DAG run can resume.

States and the transitions accepted (a same-state update only records progress)::

    planned -> replaying -> caught_up -> cut_over -> done
    caught_up -> replaying            (more input arrived before the cut-over)
    any unfinished -> failed          (error required)
    failed -> replaying               (retry)
    anything but rolled_back -> rolled_back

``cut_over`` needs a cut-over watermark and switches the job's active version to
``to_version`` in the same transaction; ``rolled_back`` switches it back to ``from_version``
if it had been switched. Windows ending at or before the cut-over watermark belong to
``from_version``, later ones to ``to_version`` (``MigrationInfo.owner_of``). A migration is
unfinished until ``done`` or ``rolled_back`` (a failed one waits for a retry or a roll back),
and a job has at most one unfinished migration.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from jobs.catalog import convert
from jobs.catalog.base import CatalogBase
from jobs.catalog.errors import CatalogError
from jobs.catalog.job_ops import JobOps
from jobs.catalog.models import (
    MIGRATION_STATES,
    DefinitionVersion,
    Job,
    Migration,
    MigrationStepRow,
)
from jobs.catalog.records import MigrationInfo, MigrationState

TRANSITIONS: dict[str, frozenset[str]] = {
    "planned": frozenset({"replaying", "failed", "rolled_back"}),
    "replaying": frozenset({"caught_up", "failed", "rolled_back"}),
    "caught_up": frozenset({"replaying", "cut_over", "failed", "rolled_back"}),
    "cut_over": frozenset({"done", "failed", "rolled_back"}),
    "done": frozenset({"rolled_back"}),
    "failed": frozenset({"replaying", "rolled_back"}),
    "rolled_back": frozenset(),
}
FINISHED = ("done", "rolled_back")


class MigrationOps(JobOps, CatalogBase):
    def _migration_info(self, session: Session, row: Migration) -> MigrationInfo:
        job = session.get(Job, row.job_id)
        assert job is not None
        steps = list(
            session.scalars(
                select(MigrationStepRow)
                .where(MigrationStepRow.migration_id == row.id)
                .order_by(MigrationStepRow.id)
            )
        )
        return convert.migration_info(row, job.name, steps)

    def _unfinished(self, session: Session, job_id: int) -> Migration | None:
        return session.scalars(
            select(Migration)
            .where(Migration.job_id == job_id, Migration.state.not_in(FINISHED))
            .order_by(Migration.id.desc())
            .limit(1)
        ).one_or_none()

    def _plan_migration(
        self,
        session: Session,
        job: Job,
        current: DefinitionVersion,
        target: DefinitionVersion,
        actor: str,
        *,
        note: str = "",
    ) -> Migration:
        existing = self._unfinished(session, job.id)
        if existing is not None:
            if (existing.from_version, existing.to_version) == (current.number, target.number):
                return existing
            raise CatalogError(
                f"job {job.name!r} already has unfinished migration #{existing.id} "
                f"(v{existing.from_version} -> v{existing.to_version}, {existing.state}); "
                "finish or roll it back first",
                code="state",
            )
        if current.store_name == target.store_name:
            raise CatalogError(
                f"versions {current.number} and {target.number} of {job.name!r} share store "
                f"{current.store_name}: no migration needed (restart in place)",
                code="invalid",
            )
        now = self._now()
        row = Migration(
            job_id=job.id,
            from_version=current.number,
            to_version=target.number,
            from_store=current.store_name,
            to_store=target.store_name,
            state="planned",
            created_at=now,
            updated_at=now,
            created_by=actor,
            replayed_files=0,
        )
        session.add(row)
        session.flush()
        message = note or f"migration #{row.id} planned: v{current.number} -> v{target.number}"
        session.add(
            MigrationStepRow(
                migration_id=row.id, at=now, state="planned", actor=actor, message=message, data={}
            )
        )
        payload = {
            "migration_id": row.id,
            "from_version": current.number,
            "to_version": target.number,
            "from_store": current.store_name,
            "to_store": target.store_name,
        }
        self._audit(
            session, actor, "migrate", job=job.name, version=target.number, message=message,
            data=payload,
        )
        self._outbox(session, "migration_requested", job.name, payload)
        session.flush()
        return row

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
        given they must match. Returns the existing one if the same migration is already
        unfinished; refused (``state``) while another migration of the job is unfinished.
        Writes a ``migration_requested`` outbox event and a ``migrate`` audit event."""
        try:
            with self._write() as session:
                row = self._live_job_row(session, job, lock=True)
                current = self._version_row(session, row, from_version)
                target = self._version_row(session, row, to_version)
                for given, actual, name in (
                    (from_store, current.store_name, "from_store"),
                    (to_store, target.store_name, "to_store"),
                ):
                    if given is not None and given != actual:
                        raise CatalogError(
                            f"{name}: version store is {actual}, not {given}", code="invalid"
                        )
                migration = self._plan_migration(session, row, current, target, actor)
                return self._migration_info(session, migration)
        except CatalogError as exc:
            self._audit_refusal(actor, "migrate", exc, job=job, version=to_version)
            raise

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
        """Record a step, or progress within the current state (same ``state``: counters only,
        no step and no audit event). Refused (``state``) for a transition not in the table
        above; each accepted step is a ``migration_step`` audit event (``rollback`` for
        ``rolled_back``, outcome ``failed`` for ``failed``)."""
        job_name: str | None = None
        try:
            if state not in MIGRATION_STATES:
                raise CatalogError(
                    f"state: must be one of {', '.join(MIGRATION_STATES)}, not {state!r}",
                    code="invalid",
                )
            with self._write() as session:
                row = session.get(Migration, migration_id, with_for_update=True)
                if row is None:
                    raise CatalogError(f"migration {migration_id} not found", code="not_found")
                job = session.get(Job, row.job_id, with_for_update=True)
                assert job is not None
                job_name = job.name
                same = state == row.state
                if not same and state not in TRANSITIONS[row.state]:
                    raise CatalogError(
                        f"migration #{migration_id} of {job.name!r} is {row.state}; it cannot "
                        f"go to {state}",
                        code="state",
                    )
                if state == "failed" and not (error or row.error):
                    raise CatalogError("error: a failed migration needs an error", code="invalid")
                for name, value in (
                    ("replayed_files", replayed_files),
                    ("total_files", total_files),
                    ("new_watermark", new_watermark),
                    ("old_watermark", old_watermark),
                    ("cutover_watermark", cutover_watermark),
                    ("error", error),
                ):
                    if value is not None:
                        setattr(row, name, value)
                if state == "cut_over" and row.cutover_watermark is None:
                    raise CatalogError(
                        "cutover_watermark: the cut-over needs the watermark that splits "
                        "window ownership between the versions",
                        code="invalid",
                    )
                now = self._now()
                row.updated_at = now
                if same:
                    session.flush()
                    return self._migration_info(session, row)
                previous = row.state
                row.state = state
                data: dict[str, Any] = {
                    "migration_id": row.id,
                    "from": previous,
                    "to": state,
                    "from_version": row.from_version,
                    "to_version": row.to_version,
                    "replayed_files": row.replayed_files,
                    "total_files": row.total_files,
                    "new_watermark": row.new_watermark,
                    "old_watermark": row.old_watermark,
                    "cutover_watermark": row.cutover_watermark,
                }
                if row.error:
                    data["error"] = row.error
                text = message or f"migration #{row.id}: {previous} -> {state}"
                if state == "cut_over":
                    self._switch(session, job, row, row.to_version, rollback=False)
                elif state == "rolled_back" and job.active_version == row.to_version:
                    self._switch(session, job, row, row.from_version, rollback=True)
                session.add(
                    MigrationStepRow(
                        migration_id=row.id, at=now, state=state, actor=actor, message=text,
                        data=data,
                    )
                )
                self._audit(
                    session,
                    actor,
                    "rollback" if state == "rolled_back" else "migration_step",
                    job=job.name,
                    version=row.to_version,
                    outcome="failed" if state == "failed" else "ok",
                    message=text,
                    data=data,
                )
                session.flush()
                return self._migration_info(session, row)
        except CatalogError as exc:
            self._audit_refusal(
                actor, "migration_step", exc, job=job_name,
                data={"migration_id": migration_id, "state": state},
            )
            raise

    def _switch(
        self, session: Session, job: Job, row: Migration, version: int, *, rollback: bool
    ) -> None:
        previous = job.active_version
        job.active_version = version
        job.updated_at = self._now()
        self._outbox(
            session,
            "version_activated",
            job.name,
            {
                "from_version": previous,
                "to_version": version,
                "same_store": False,
                "from_store": row.from_store if not rollback else row.to_store,
                "to_store": row.to_store if not rollback else row.from_store,
                "rollback": rollback,
                "migration_id": row.id,
                "cutover_watermark": row.cutover_watermark,
            },
        )

    def migration(self, migration_id: int) -> MigrationInfo:
        with self._read() as session:
            row = session.get(Migration, migration_id)
            if row is None:
                raise CatalogError(f"migration {migration_id} not found", code="not_found")
            return self._migration_info(session, row)

    def migrations(
        self, job: str | None = None, *, unfinished: bool = False
    ) -> list[MigrationInfo]:
        """Migrations, newest first; ``unfinished``: only those not done / rolled back."""
        with self._read() as session:
            stmt = select(Migration)
            if job is not None:
                stmt = stmt.where(Migration.job_id == self._job_row(session, job).id)
            if unfinished:
                stmt = stmt.where(Migration.state.not_in(FINISHED))
            rows = list(session.scalars(stmt.order_by(Migration.id.desc())))
            return [self._migration_info(session, r) for r in rows]
