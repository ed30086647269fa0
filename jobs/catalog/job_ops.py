"""Jobs and their immutable definition versions (create, edit, activate, start/stop, ...).

Optimistic locking: an edit names the version it was based on; if a newer version exists the
edit is refused with both numbers, so nobody silently overwrites a colleague's change. The job
row is locked (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's write sessions hold the database
write lock from BEGIN) and ``(job_id, number)`` is unique, so two concurrent edits based on the
same version cannot both win.

Activation decides how a change reaches the running job: a version with the same store restarts
in place; a version with another store whose store has already run (a roll back) resumes that
store's checkpoint; a version with a *new* store is not activated at once but gets a planned
migration -- the migration DAG replays into the new store and the cut-over step switches the
active version (see :mod:`jobs.catalog.migration_ops`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from jobs.catalog import convert, specs
from jobs.catalog.base import CatalogBase
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import (
    BatchProgressRow,
    DefinitionVersion,
    Job,
    Migration,
    Run,
    SnapshotRow,
)
from jobs.catalog.records import (
    DesiredState,
    JobInfo,
    JobOverview,
    SaveResult,
    VersionInfo,
)

DefinitionInput = str | Mapping[str, Any]
ActivationMode = Literal["auto", "immediate", "migrate"]


class JobOps(CatalogBase):
    # ------------------------------------------------------------ helpers

    def _version_row(self, session: Session, job: Job, number: int) -> DefinitionVersion:
        row = session.scalars(
            select(DefinitionVersion).where(
                DefinitionVersion.job_id == job.id, DefinitionVersion.number == number
            )
        ).one_or_none()
        if row is None:
            raise CatalogError(
                f"job {job.name!r} has no version {number} (latest is {job.latest_version})",
                code="not_found",
            )
        return row

    def _job_info(self, session: Session, row: Job) -> JobInfo:
        store = None
        if row.active_version is not None:
            store = self._version_row(session, row, row.active_version).store_name
        live = session.scalar(
            select(func.count()).select_from(Run).where(Run.job_id == row.id, Run.status == "running")
        )
        return convert.job_info(row, active_store=store, has_live_run=bool(live))

    # ------------------------------------------------------------ create / edit

    def create_job(self, definition: DefinitionInput, actor: str, note: str = "") -> VersionInfo:
        """Create a job from a definition: version 1, active, desired state ``stopped``.

        Raises ``CatalogError(code="invalid")`` with the field errors if the definition does not
        validate (nothing is saved), ``code="exists"`` if the job name is taken (also by a
        deleted job: names are never reused, their history stays readable).
        """
        try:
            spec = specs.prepare(definition)
            with self._write() as session:
                existing = session.scalars(select(Job).where(Job.name == spec.name)).one_or_none()
                if existing is not None:
                    deleted = " (deleted; names are not reused)" if existing.deleted_at else ""
                    raise CatalogError(f"job {spec.name!r} already exists{deleted}", code="exists")
                now = self._now()
                job = Job(
                    name=spec.name,
                    desired_state="stopped",
                    active_version=1,
                    latest_version=1,
                    restart_count=0,
                    created_at=now,
                    created_by=actor,
                    updated_at=now,
                )
                session.add(job)
                session.flush()
                version = DefinitionVersion(
                    job_id=job.id,
                    number=1,
                    spec_json=spec.canonical,
                    spec_hash=spec.hash,
                    store_name=spec.store,
                    author=actor,
                    created_at=now,
                    note=note,
                    compatibility="initial",
                )
                session.add(version)
                self._audit(
                    session, actor, "create", job=spec.name, version=1,
                    message=note or f"created job {spec.name!r}",
                    data={"store": spec.store, "spec_hash": spec.hash},
                )
                self._outbox(session, "job_created", spec.name, {"version": 1, "store": spec.store})
                session.flush()
                return convert.version_info(version, spec.name)
        except IntegrityError as exc:
            raise CatalogError(f"job {_name_of(definition)!r} already exists", code="exists") from exc
        except CatalogError as exc:
            self._audit_refusal(actor, "create", exc, job=_name_of(definition))
            raise

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

        No-op (``created=False``, nothing written) when the canonical spec equals the latest
        version's -- whatever ``base_version`` says, so a retried save is harmless. Raises
        ``CatalogError(code="conflict")`` naming both versions when ``base_version`` is not the
        latest, ``code="invalid"`` for an invalid definition or one whose ``name`` is not
        ``job``. Saving does not activate (see :meth:`activate`).
        """
        try:
            spec = specs.prepare(definition)
            if spec.name != job:
                raise CatalogError(
                    f"name: the definition is named {spec.name!r} but edits job {job!r}",
                    code="invalid",
                    errors=[("name", f"must stay {job!r} (a job cannot be renamed)")],
                )
            with self._write() as session:
                row = self._live_job_row(session, job, lock=True)
                latest = self._version_row(session, row, row.latest_version)
                if latest.spec_hash == spec.hash:
                    return SaveResult(convert.version_info(latest, job), created=False, kind="unchanged")
                if base_version != latest.number:
                    if not 1 <= base_version < latest.number:
                        raise CatalogError(
                            f"job {job!r}: edit based on version {base_version}, which does not "
                            f"exist (latest is version {latest.number})",
                            code="invalid",
                        )
                    raise CatalogError(
                        f"job {job!r}: edit based on version {base_version} but version "
                        f"{latest.number} exists (saved by {latest.author} at "
                        f"{latest.created_at:%Y-%m-%d %H:%M:%S}Z); reload version "
                        f"{latest.number} and apply the change again",
                        code="conflict",
                    )
                kind, changes = specs.diff(specs.load_stored(latest.spec_json), spec.definition)
                if kind == "unchanged":  # canonical text differs only in form
                    kind = "same_store" if spec.store == latest.store_name else "new_store"
                number = latest.number + 1
                now = self._now()
                version = DefinitionVersion(
                    job_id=row.id,
                    number=number,
                    spec_json=spec.canonical,
                    spec_hash=spec.hash,
                    store_name=spec.store,
                    author=actor,
                    created_at=now,
                    note=note,
                    compatibility=kind,
                )
                session.add(version)
                row.latest_version = number
                row.updated_at = now
                diff = specs.changes_json(changes)
                self._audit(
                    session, actor, "edit", job=job, version=number,
                    message=note or f"version {number} ({kind.replace('_', ' ')})", diff=diff,
                    data={"base_version": base_version, "store": spec.store, "compatibility": kind},
                )
                self._outbox(
                    session, "version_saved", job,
                    {"version": number, "store": spec.store, "compatibility": kind},
                )
                session.flush()
                return SaveResult(
                    convert.version_info(version, job), created=True, kind=kind, changes=changes
                )
        except IntegrityError as exc:
            err = CatalogError(
                f"job {job!r}: edit based on version {base_version} lost a race with a concurrent "
                "edit; reload the latest version and apply the change again",
                code="conflict",
            )
            self._audit_refusal(actor, "edit", err, job=job, data={"base_version": base_version})
            raise err from exc
        except CatalogError as exc:
            self._audit_refusal(actor, "edit", exc, job=job, data={"base_version": base_version})
            raise

    # ------------------------------------------------------------ activate

    def activate(
        self,
        job: str,
        version: int,
        actor: str,
        *,
        note: str = "",
        mode: ActivationMode = "auto",
    ) -> JobInfo:
        """Make ``version`` the one the job runs (also how a roll back is done).

        ``auto``: switch at once when the store is the same as the active version's (restart in
        place) or when the version's store has committed batches before (a roll back resumes
        its checkpoint); otherwise plan a migration (the active version switches at cut-over)
        and return the job unchanged. ``immediate`` always switches; ``migrate`` always plans a
        migration (refused for the same store). Writes ``version_activated`` (with
        ``same_store``, ``from_store``, ``to_store``, ``rollback``) or ``migration_requested`` to
        the outbox. The audit action is ``rollback`` for an older version, else ``activate``.
        """
        action = "activate"
        try:
            with self._write() as session:
                row = self._live_job_row(session, job, lock=True)
                target = self._version_row(session, row, version)
                if row.active_version == version:
                    return self._job_info(session, row)
                current = (
                    self._version_row(session, row, row.active_version)
                    if row.active_version is not None
                    else None
                )
                rollback = current is not None and version < current.number
                action = "rollback" if rollback else "activate"
                same_store = current is not None and current.store_name == target.store_name
                store_has_run = bool(
                    session.scalar(
                        select(func.count())
                        .select_from(SnapshotRow)
                        .where(SnapshotRow.store == target.store_name)
                    )
                )
                if mode == "migrate" and same_store:
                    raise CatalogError(
                        f"job {job!r}: version {version} keeps store {target.store_name}; "
                        "nothing to migrate (it restarts in place)",
                        code="invalid",
                    )
                migrate = current is not None and (
                    mode == "migrate" or (mode == "auto" and not same_store and not store_has_run)
                )
                changes: tuple[specs.Change, ...] = ()
                if current is not None:
                    _, changes = specs.diff(
                        specs.load_stored(current.spec_json), specs.load_stored(target.spec_json)
                    )
                diff = specs.changes_json(changes)
                if migrate:
                    assert current is not None
                    self._plan_migration(session, row, current, target, actor, note=note)
                    return self._job_info(session, row)
                row.active_version = version
                row.updated_at = self._now()
                payload = {
                    "from_version": current.number if current else None,
                    "to_version": version,
                    "same_store": same_store,
                    "from_store": current.store_name if current else None,
                    "to_store": target.store_name,
                    "rollback": rollback,
                }
                how = "restart in place" if same_store else "resume store checkpoint"
                self._audit(
                    session, actor, action, job=job, version=version,
                    message=note or f"version {version} active ({how})", diff=diff, data=payload,
                )
                self._outbox(session, "version_activated", job, payload)
                session.flush()
                return self._job_info(session, row)
        except CatalogError as exc:
            self._audit_refusal(actor, action, exc, job=job, version=version)
            raise

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
        """Plan a migration from ``current`` to ``target`` (implemented by
        :class:`jobs.catalog.migration_ops.MigrationOps`, which the Catalog puts first)."""
        raise NotImplementedError

    # ------------------------------------------------------------ desired state and health

    def set_desired_state(
        self, job: str, state: DesiredState, actor: str, *, reason: str = ""
    ) -> JobInfo:
        """Start (``running``) or stop (``stopped``) a job. Starting a ``failed`` job clears the
        failure and resets the restart counter (an operator decided to try again). Asking for
        the state the job is already in changes nothing and records nothing."""
        action = "start" if state == "running" else "stop"
        try:
            if state not in ("running", "stopped"):
                raise CatalogError(
                    f"state: must be 'running' or 'stopped', not {state!r}", code="invalid"
                )
            with self._write() as session:
                row = self._live_job_row(session, job, lock=True)
                retry = state == "running" and row.failed_reason is not None
                if row.desired_state == state and not retry:
                    return self._job_info(session, row)
                if state == "running" and row.active_version is None:
                    raise CatalogError(f"job {job!r} has no active version to run", code="state")
                row.desired_state = state
                row.updated_at = self._now()
                data: dict[str, Any] = {"state": state}
                if retry:
                    data["cleared_failure"] = row.failed_reason
                    row.failed_reason = None
                    row.failed_at = None
                    row.restart_count = 0
                self._audit(
                    session, actor, action, job=job, version=row.active_version,
                    message=reason or f"desired state {state}", data=data,
                )
                self._outbox(session, "desired_state", job, {"state": state})
                session.flush()
                return self._job_info(session, row)
        except CatalogError as exc:
            self._audit_refusal(actor, action, exc, job=job)
            raise

    def request_restart(self, job: str, actor: str, *, reason: str = "") -> JobInfo:
        """Ask the orchestration to restart the job's run (audit ``restart_requested``, outbox
        ``restart_requested``). Refused for a stopped job (start it instead)."""
        try:
            with self._write() as session:
                row = self._live_job_row(session, job)
                if row.desired_state != "running":
                    raise CatalogError(
                        f"job {job!r} is stopped; start it instead of restarting", code="state"
                    )
                self._audit(
                    session, actor, "restart_requested", job=job, version=row.active_version,
                    message=reason or "restart requested",
                )
                self._outbox(session, "restart_requested", job, {"reason": reason})
                return self._job_info(session, row)
        except CatalogError as exc:
            self._audit_refusal(actor, "restart_requested", exc, job=job)
            raise

    def record_restart(self, job: str, actor: str, *, reason: str = "") -> JobInfo:
        """The supervisor restarted a dead run: bump the restart counter (crash-loop input)."""
        with self._write() as session:
            row = self._job_row(session, job, lock=True)
            row.restart_count += 1
            row.last_restart_at = self._now()
            row.updated_at = row.last_restart_at
            self._audit(
                session, actor, "restart", job=job, version=row.active_version,
                message=reason or f"restart #{row.restart_count}",
                data={"restart_count": row.restart_count},
            )
            session.flush()
            return self._job_info(session, row)

    def reset_restarts(self, job: str, actor: str) -> JobInfo:
        """The run has been healthy long enough: reset the restart counter (audited only when
        it was not already 0)."""
        with self._write() as session:
            row = self._job_row(session, job, lock=True)
            if row.restart_count:
                previous = row.restart_count
                row.restart_count = 0
                row.updated_at = self._now()
                self._audit(
                    session, actor, "restart_reset", job=job, version=row.active_version,
                    message=f"healthy again after {previous} restart(s)",
                    data={"previous": previous},
                )
            return self._job_info(session, row)

    def mark_failed(self, job: str, reason: str, actor: str) -> JobInfo:
        """Crash-loop limit reached: status ``failed`` with ``reason``; the supervisor stops
        restarting it until an operator starts it again (:meth:`set_desired_state`)."""
        with self._write() as session:
            row = self._job_row(session, job, lock=True)
            now = self._now()
            row.failed_reason = reason
            row.failed_at = now
            row.updated_at = now
            self._audit(
                session, actor, "fail", job=job, version=row.active_version, outcome="failed",
                message=reason, data={"restart_count": row.restart_count},
            )
            self._outbox(session, "job_failed", job, {"reason": reason})
            session.flush()
            return self._job_info(session, row)

    def delete_job(self, job: str, actor: str) -> JobInfo:
        """Soft delete: the job stops being listed and cannot be started or edited; versions,
        runs, results and the audit trail stay. Refused while it should run or a run is live."""
        try:
            with self._write() as session:
                row = self._live_job_row(session, job, lock=True)
                live = session.scalar(
                    select(func.count())
                    .select_from(Run)
                    .where(Run.job_id == row.id, Run.status == "running")
                )
                if row.desired_state == "running" or live:
                    raise CatalogError(f"job {job!r} is running; stop it first", code="state")
                now = self._now()
                row.deleted_at = now
                row.updated_at = now
                self._audit(session, actor, "delete", job=job, message=f"deleted job {job!r}")
                self._outbox(session, "job_deleted", job, {})
                session.flush()
                return self._job_info(session, row)
        except CatalogError as exc:
            self._audit_refusal(actor, "delete", exc, job=job)
            raise

    # ------------------------------------------------------------ queries

    def job(self, name: str) -> JobInfo:
        with self._read() as session:
            return self._job_info(session, self._job_row(session, name))

    def jobs(self, *, include_deleted: bool = False) -> list[JobInfo]:
        """Jobs by name."""
        with self._read() as session:
            stmt = select(Job).order_by(Job.name)
            if not include_deleted:
                stmt = stmt.where(Job.deleted_at.is_(None))
            return [self._job_info(session, row) for row in session.scalars(stmt)]

    def jobs_overview(self) -> list[JobOverview]:
        """Everything the jobs page shows, one entry per (non-deleted) job, by name. Late and
        dead-letter totals cover the active version's store."""
        now_ms = self.clock.now_ms()
        out: list[JobOverview] = []
        with self._read() as session:
            for row in session.scalars(
                select(Job).where(Job.deleted_at.is_(None)).order_by(Job.name)
            ):
                info = self._job_info(session, row)
                run = session.scalars(
                    select(Run)
                    .where(Run.job_id == row.id, Run.status == "running")
                    .order_by(Run.id.desc())
                    .limit(1)
                ).one_or_none()
                store = info.active_store
                last = session.scalars(
                    select(BatchProgressRow)
                    .where(BatchProgressRow.job_id == row.id, BatchProgressRow.store == store)
                    .order_by(BatchProgressRow.id.desc())
                    .limit(1)
                ).one_or_none()
                totals = session.execute(
                    select(
                        func.coalesce(func.sum(BatchProgressRow.late_accepted), 0),
                        func.coalesce(func.sum(BatchProgressRow.late_dropped), 0),
                        func.coalesce(func.sum(BatchProgressRow.dead_letters), 0),
                    ).where(BatchProgressRow.job_id == row.id, BatchProgressRow.store == store)
                ).one()
                watermark = last.watermark if last is not None else None
                out.append(
                    JobOverview(
                        job=info,
                        run=convert.run_info(run, row.name) if run is not None else None,
                        last_batch_id=last.batch_id if last is not None else None,
                        last_batch_at=last.recorded_at if last is not None else None,
                        rows_per_second=last.rows_per_second if last is not None else None,
                        watermark=watermark,
                        watermark_lag_ms=now_ms - watermark if watermark is not None else None,
                        late_accepted=int(totals[0]),
                        late_dropped=int(totals[1]),
                        dead_letters=int(totals[2]),
                    )
                )
        return out

    def version(self, job: str, number: int | None = None) -> VersionInfo:
        """Version ``number`` of ``job`` (the latest when None)."""
        with self._read() as session:
            row = self._job_row(session, job)
            return convert.version_info(
                self._version_row(session, row, number or row.latest_version), job
            )

    def active_version(self, job: str) -> VersionInfo:
        """The version the job should run (raises ``not_found`` if none is active)."""
        with self._read() as session:
            row = self._job_row(session, job)
            if row.active_version is None:
                raise CatalogError(f"job {job!r} has no active version", code="not_found")
            return convert.version_info(self._version_row(session, row, row.active_version), job)

    def versions(self, job: str) -> list[VersionInfo]:
        """Version history, oldest first."""
        with self._read() as session:
            row = self._job_row(session, job)
            rows = session.scalars(
                select(DefinitionVersion)
                .where(DefinitionVersion.job_id == row.id)
                .order_by(DefinitionVersion.number)
            )
            return [convert.version_info(v, job) for v in rows]

    def diff(self, job: str, old: int, new: int) -> SaveResult:
        """The diff from version ``old`` to ``new`` (``version`` is ``new``; ``created`` False;
        ``kind`` ``unchanged`` / ``same_store`` / ``new_store``)."""
        with self._read() as session:
            row = self._job_row(session, job)
            a = self._version_row(session, row, old)
            b = self._version_row(session, row, new)
        kind, changes = specs.diff(specs.load_stored(a.spec_json), specs.load_stored(b.spec_json))
        if kind == "unchanged" and a.spec_hash != b.spec_hash:
            kind = "same_store" if a.store_name == b.store_name else "new_store"
        return SaveResult(convert.version_info(b, job), created=False, kind=kind, changes=changes)


def _name_of(definition: DefinitionInput) -> str | None:
    """The job name a (possibly invalid) definition claims, for the audit of a refusal."""
    if isinstance(definition, Mapping):
        name = definition.get("name")
        return name if isinstance(name, str) else None
    for line in definition.splitlines():
        if line.startswith("name:"):  # top level only (aggregations have names too)
            return line[5:].split("#")[0].strip().strip("'\"") or None
    try:
        obj = json.loads(definition)
    except ValueError:
        return None
    return obj.get("name") if isinstance(obj, dict) and isinstance(obj.get("name"), str) else None
