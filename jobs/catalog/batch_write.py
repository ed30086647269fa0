"""The write half of ``record_batch``, at driver level: one transaction per micro-batch.

``record_batch`` runs after every committed micro-batch of every job, so its cost is paid all
the time. Going through the ORM session cost more than the database work (a parameter dict
per statement, statement coercion, result objects), so :class:`BatchWriter` writes the batch
with plain DB-API calls, applying the columns' own bind processors where a type needs
converting (UTC datetimes and JSON on SQLite). What a batch writes is ``batch_rows``; how,
per database, ``batch_sqlite`` (one ``BEGIN IMMEDIATE`` transaction, background WAL
checkpoints) and ``batch_postgres`` (one statement, one round trip).

Connections: the writer keeps ONE connection of the engine's pool checked out for batches
(no pool checkout and, on PostgreSQL, no pre-ping round trip per batch); a second thread
recording at the same time uses a pooled connection instead of waiting. A PostgreSQL
connection found broken is discarded and the batch retried once on a new one -- safe because
a batch is idempotent: if the lost attempt had committed, the retry returns False.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy.engine import Dialect, Engine

from jobs.catalog.batch_postgres import write_postgres
from jobs.catalog.batch_rows import BatchInput, Converters
from jobs.catalog.batch_sqlite import WRITER_AUTOCHECKPOINT_PAGES, Checkpointer, write_sqlite


class BatchWriter:
    """Writes batches for one :class:`~jobs.catalog.Catalog` (one engine)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect: Dialect = engine.dialect
        self.postgres = self.dialect.name == "postgresql"
        self.converters = Converters.for_dialect(self.dialect)
        self._lock = threading.Lock()
        self._held: Any = None  # the pool's connection proxy kept for batches
        self._checkpointer: Checkpointer | None = None
        database = engine.url.database
        if not self.postgres and database and database != ":memory:":
            from jobs.catalog.db import SQLITE_BUSY_TIMEOUT_MS

            self._checkpointer = Checkpointer(database, SQLITE_BUSY_TIMEOUT_MS)

    def write(self, b: BatchInput) -> bool:
        if not self._lock.acquire(blocking=False):
            return self._write_pooled(b)  # another thread is writing a batch: do not queue
        try:
            return self._write_held(b)
        finally:
            self._lock.release()

    def _write_held(self, b: BatchInput) -> bool:
        for attempt in (1, 2):
            if self._held is None:
                self._held = self._checkout()
            conn: Any = self._held.driver_connection
            try:
                done = self._write_on(conn, b)
            except Exception:
                if self.postgres and attempt == 1 and (conn.closed or conn.broken):
                    self._discard()  # server restarted, connection dropped: retry once
                    continue
                raise
            if self._checkpointer is not None:
                self._checkpointer.poke()
            return done
        raise AssertionError("unreachable")

    def _write_pooled(self, b: BatchInput) -> bool:
        raw = self.engine.raw_connection()
        try:
            conn: Any = raw.driver_connection
            if self.postgres:
                conn.autocommit = True
                try:
                    return self._write_on(conn, b)
                finally:
                    if not conn.closed:
                        conn.autocommit = False
            return self._write_on(conn, b)
        finally:
            raw.close()

    def _write_on(self, conn: Any, b: BatchInput) -> bool:
        if self.postgres:
            return write_postgres(conn, self.converters, b)
        return write_sqlite(conn, self.converters, b)

    def _checkout(self) -> Any:
        raw = self.engine.raw_connection()
        conn: Any = raw.driver_connection
        if self.postgres:
            conn.autocommit = True
        elif self._checkpointer is not None:
            conn.execute(f"PRAGMA wal_autocheckpoint = {WRITER_AUTOCHECKPOINT_PAGES}")
        return raw

    def _discard(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.invalidate()  # closed, never returned to the pool

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, None
            if held is not None:
                # back to the pool as the pool handed it out
                conn: Any = held.driver_connection
                if self.postgres and not conn.closed:
                    conn.autocommit = False
                elif not self.postgres:
                    conn.execute("PRAGMA wal_autocheckpoint = 1000")
                held.close()
        if self._checkpointer is not None:
            self._checkpointer.stop()
