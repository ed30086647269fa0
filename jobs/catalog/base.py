"""Session handling and helpers shared by the service's parts.

Each public service method runs in exactly one transaction opened here: ``_read()`` for
queries, ``_write()`` for changes (on SQLite it takes the write lock at BEGIN, see
:mod:`jobs.catalog.db`). Audit and outbox rows are written by the same transaction as the
change they describe, so a change is never recorded without its audit event or vice versa.
A *refused* change (conflict, permission, invalid definition) is audited in a transaction of its
own after the refusal, with outcome ``refused``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from jobs.catalog.db import make_db_engine, make_sessionmakers
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import SCHEMA_HEAD, AuditEventRow, Job, OutboxRow
from jobs.config import Settings
from jobs.engine.records import key_json  # the one key text: non-ASCII kept, as Spark writes it
from jobs.timeutil import Clock, SystemClock

if TYPE_CHECKING:
    from jobs.catalog.batch_rows import BatchTarget
    from jobs.catalog.batch_write import BatchWriter

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def slot_of(key: Any, window_start: int | None, window_end: int | None, *, key_text: str | None = None) -> str:
    """``[end, start, key]`` as compact JSON: the identity of one window of one key.

    Time comes first so that the unique index over (store, slot) keeps the windows of one
    stretch of time together: the late windows of a micro-batch cluster in time, not in key,
    so each batch touches a few index pages instead of one per key (revision 0004; the
    format was ``[key, start, end]`` before)."""
    kt = key_json(key) if key_text is None else key_text
    return slot_text(kt, window_start, window_end)


def slot_text(key_text: str, window_start: int | None, window_end: int | None) -> str:
    """:func:`slot_of` for a key already in canonical JSON (the hot path)."""
    start = "null" if window_start is None else str(int(window_start))
    end = "null" if window_end is None else str(int(window_end))
    return f"[{end},{start},{key_text}]"


class CatalogBase:
    def __init__(
        self,
        url: str | None = None,
        *,
        clock: Clock | None = None,
        upgrade: bool = False,
        sample_limit: int = 200,
    ) -> None:
        self.url = url or Settings.from_env().db_url
        if self.url.startswith("sqlite:///") and not self.url.startswith("sqlite:///:memory:"):
            from pathlib import Path

            Path(self.url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
        self.clock: Clock = clock or SystemClock()
        self.sample_limit = sample_limit
        self._run_keys: dict[int, BatchTarget] = {}
        """run id -> (job id, store, version): immutable per run, cached for the hot path."""
        self._batch_writer_lock = threading.Lock()
        self._batch_writer: BatchWriter | None = None
        """Writes ``record_batch`` (created on first use; keeps one connection)."""
        if upgrade:
            from jobs.catalog import schema  # Alembic only when asked to upgrade

            schema.upgrade(self.url)
        self.engine = make_db_engine(self.url)
        self._read_sessions, self._write_sessions = make_sessionmakers(self.engine)
        self._check_schema()

    def _check_schema(self) -> None:
        """Refuse a database whose schema is not at :data:`SCHEMA_HEAD` (read directly from
        ``alembic_version``, so opening a catalog does not load Alembic)."""
        try:
            with self.engine.connect() as conn:
                has_table = inspect(conn).has_table("alembic_version")
                current = (
                    conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
                    if has_table
                    else None
                )
        except Exception as exc:  # unreachable server, bad URL: say where
            self.engine.dispose()
            raise CatalogError(
                f"cannot open catalog {self._safe_url()}: {exc}", code="schema"
            ) from exc
        if current != SCHEMA_HEAD:
            self.engine.dispose()
            raise CatalogError(
                f"catalog {self._safe_url()} is at schema revision {current or '(empty)'}, "
                f"expected {SCHEMA_HEAD}: run `tidemark db upgrade`",
                code="schema",
            )

    def _safe_url(self) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)

    def close(self) -> None:
        if self._batch_writer is not None:
            self._batch_writer.close()
            self._batch_writer = None
        self.engine.dispose()

    # ------------------------------------------------------------ sessions and time

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with self._read_sessions() as session, session.begin():
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        with self._write_sessions() as session, session.begin():
            yield session

    def _now(self) -> datetime:
        return _EPOCH + timedelta(milliseconds=self.clock.now_ms())

    # ------------------------------------------------------------ lookups

    def _job_row(self, session: Session, name: str, *, lock: bool = False) -> Job:
        stmt = select(Job).where(Job.name == name)
        if lock:
            stmt = stmt.with_for_update()
        row = session.scalars(stmt).one_or_none()
        if row is None:
            raise CatalogError(f"job {name!r} not found", code="not_found")
        return row

    def _live_job_row(self, session: Session, name: str, *, lock: bool = False) -> Job:
        row = self._job_row(session, name, lock=lock)
        if row.deleted_at is not None:
            raise CatalogError(f"job {name!r} is deleted", code="state")
        return row

    # ------------------------------------------------------------ audit and outbox writers

    def _audit(
        self,
        session: Session,
        actor: str,
        action: str,
        *,
        job: str | None = None,
        version: int | None = None,
        outcome: str = "ok",
        message: str = "",
        diff: list[dict[str, Any]] | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> AuditEventRow:
        if not actor:
            raise CatalogError("actor: every change needs an actor", code="invalid")
        row = AuditEventRow(
            at=self._now(),
            actor=actor,
            action=action,
            job=job,
            version=version,
            outcome=outcome,
            message=message,
            diff=diff,
            data=dict(data or {}),
        )
        session.add(row)
        session.flush()
        return row

    def _audit_refusal(
        self, actor: str, action: str, error: CatalogError, *, job: str | None = None,
        version: int | None = None, data: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a refused change in its own transaction (the change itself rolled back)."""
        payload = dict(data or {})
        payload["code"] = error.code
        if error.errors:
            payload["errors"] = [list(e) for e in error.errors]
        with self._write() as session:
            self._audit(
                session, actor or "(unknown)", action, job=job, version=version,
                outcome="refused", message=str(error), data=payload,
            )

    def _outbox(
        self, session: Session, kind: str, job: str | None, payload: Mapping[str, Any]
    ) -> None:
        session.add(OutboxRow(created_at=self._now(), kind=kind, job=job, payload=dict(payload)))
