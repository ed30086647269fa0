"""The audit timeline and the outbox of changes.

Audit events are only ever inserted (there is no update or delete method; the ORM and database
triggers refuse both). The outbox is consumed exactly once per event: claiming is a conditional
``UPDATE ... WHERE id = ? AND consumed_at IS NULL AND (unclaimed or lease expired)`` whose row
count says whether *this* consumer got the event. Two consumers racing for the same row are
serialised by the row lock (PostgreSQL re-checks the WHERE clause after the first commits) or by
SQLite's single writer, so the loser updates nothing and does not get the event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.orm import Session

from jobs.catalog import convert
from jobs.catalog.base import CatalogBase
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import OUTCOMES, AuditEventRow, OutboxRow
from jobs.catalog.records import AuditEvent, OutboxEvent


class AuditOps(CatalogBase):
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
        """Audit timeline, newest first, filtered by any combination of the arguments
        (``since`` inclusive, ``until`` exclusive)."""
        stmt = select(AuditEventRow)
        if job is not None:
            stmt = stmt.where(AuditEventRow.job == job)
        if actor is not None:
            stmt = stmt.where(AuditEventRow.actor == actor)
        if action is not None:
            stmt = stmt.where(AuditEventRow.action == action)
        if outcome is not None:
            stmt = stmt.where(AuditEventRow.outcome == outcome)
        if since is not None:
            stmt = stmt.where(AuditEventRow.at >= since)
        if until is not None:
            stmt = stmt.where(AuditEventRow.at < until)
        stmt = stmt.order_by(AuditEventRow.id.desc()).limit(limit)
        with self._read() as session:
            return [convert.audit_event(r) for r in session.scalars(stmt)]

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
        if outcome not in OUTCOMES:
            raise CatalogError(f"outcome: must be one of {', '.join(OUTCOMES)}", code="invalid")
        if not action:
            raise CatalogError("action: must not be empty", code="invalid")
        with self._write() as session:
            row = self._audit(
                session, actor, action, job=job, version=version, outcome=outcome,
                message=message, data=data,
            )
            return convert.audit_event(row)

    # ------------------------------------------------------------ outbox

    def _claimable(self, now: datetime) -> Any:
        return and_(
            OutboxRow.consumed_at.is_(None),
            or_(OutboxRow.claimed_until.is_(None), OutboxRow.claimed_until <= now),
        )

    def _take(
        self, consumer: str, limit: int, *, lease_ms: int | None
    ) -> list[OutboxEvent]:
        if not consumer:
            raise CatalogError("consumer: must not be empty", code="invalid")
        now = self._now()
        taken: list[OutboxEvent] = []
        with self._write() as session:
            tried: set[int] = set()
            while True:
                # a concurrent consumer may take every candidate we saw; look again (READ
                # COMMITTED sees its commit) so an empty answer really means "nothing pending"
                stmt = select(OutboxRow.id).where(self._claimable(now))
                if tried:
                    stmt = stmt.where(OutboxRow.id.not_in(tried))
                candidates = list(session.scalars(stmt.order_by(OutboxRow.id).limit(limit)))
                if not candidates:
                    break
                tried.update(candidates)
                taken.extend(self._claim_each(session, candidates, consumer, now, lease_ms))
                if taken:
                    break
        return taken

    def _claim_each(
        self,
        session: Session,
        candidates: list[int],
        consumer: str,
        now: datetime,
        lease_ms: int | None,
    ) -> list[OutboxEvent]:
        taken: list[OutboxEvent] = []
        values: dict[str, Any] = {"claimed_by": consumer}
        if lease_ms is None:
            values.update(consumed_at=now, consumed_by=consumer, claimed_until=now)
        else:
            values["claimed_until"] = now + timedelta(milliseconds=lease_ms)
        for event_id in candidates:
            result = session.execute(
                update(OutboxRow)
                .where(OutboxRow.id == event_id, self._claimable(now))
                .values(**values)
                .execution_options(synchronize_session=False)
            )
            assert isinstance(result, CursorResult)
            if result.rowcount == 1:
                row = session.get(OutboxRow, event_id, populate_existing=True)
                assert row is not None
                taken.append(convert.outbox_event(row))
        return taken

    def claim_outbox(
        self, consumer: str, *, limit: int = 100, lease_ms: int = 300_000
    ) -> list[OutboxEvent]:
        """Claim up to ``limit`` unconsumed events, oldest first. Each event is handed to one
        consumer at a time; call :meth:`ack_outbox` once it is handled. An unacked claim is
        handed out again after ``lease_ms`` (the consumer died): at-least-once handling."""
        if lease_ms <= 0:
            raise CatalogError("lease_ms: must be positive", code="invalid")
        return self._take(consumer, limit, lease_ms=lease_ms)

    def ack_outbox(self, consumer: str, event_ids: Sequence[int]) -> int:
        """Mark events claimed by ``consumer`` consumed; returns how many were acknowledged
        (an event whose lease expired and that another consumer claimed is not)."""
        if not event_ids:
            return 0
        now = self._now()
        with self._write() as session:
            result = session.execute(
                update(OutboxRow)
                .where(
                    OutboxRow.id.in_(list(event_ids)),
                    OutboxRow.consumed_at.is_(None),
                    OutboxRow.claimed_by == consumer,
                )
                .values(consumed_at=now, consumed_by=consumer)
                .execution_options(synchronize_session=False)
            )
            assert isinstance(result, CursorResult)
            return int(result.rowcount)

    def consume_outbox(self, consumer: str, *, limit: int = 100) -> list[OutboxEvent]:
        """Claim and acknowledge in one transaction: each event is returned to exactly one
        caller, ever (at most once per event even if the caller then crashes)."""
        return self._take(consumer, limit, lease_ms=None)

    def pending_outbox(self) -> list[OutboxEvent]:
        """Events not yet consumed (claimed or not), oldest first."""
        with self._read() as session:
            rows = session.scalars(
                select(OutboxRow).where(OutboxRow.consumed_at.is_(None)).order_by(OutboxRow.id)
            )
            return [convert.outbox_event(r) for r in rows]
