"""The write half of ``record_batch``, at driver level: one transaction per micro-batch.

``record_batch`` runs after every committed micro-batch of every job, so its cost is paid all
the time. Going through the ORM session cost more than the database work (a parameter dict
per statement, statement coercion, result objects), so :class:`BatchWriter` writes the batch
with plain DB-API calls, applying the columns' own bind processors where a type needs
converting (UTC datetimes and JSON on SQLite):

- **SQLite** (in-process, no round trips): ``BEGIN IMMEDIATE``; the progress row with
  ``ON CONFLICT (store, batch_id) DO NOTHING`` -- if nothing was inserted the batch is a replay,
  the transaction is rolled back and nothing else is written; the snapshot; the late counts
  as one ``executemany`` of ``INSERT ... ON CONFLICT (store, slot) DO UPDATE`` (adds to the
  per-window totals); the samples; every ``PRUNE_EVERY`` batches a prune to the newest N; the
  heartbeat; ``COMMIT``.
- **PostgreSQL**: the whole batch is ONE statement (data-modifying CTEs) in autocommit mode,
  i.e. one implicit transaction sent as one round trip (no separate BEGIN and COMMIT). Every
  CTE reads from the progress insert's ``RETURNING``, so when ``ON CONFLICT DO NOTHING`` finds
  the batch already recorded the statement writes nothing at all (the same idempotency,
  decided by the database). Per-row values travel as ``text[]`` / ``bigint[]`` literals
  unpacked by ``unnest`` (no JSON parsing; the only escaping is of ``"`` and ``\\``); values
  that are the same for every row (job, store, time) are passed once. The commit is
  synchronous (fsync), like every other catalog commit.

A prune inside the PostgreSQL statement does not see the samples inserted by the same
statement (one snapshot per statement), so it keeps the newest N *earlier* samples plus this
batch's: storage stays under ``sample_limit`` + ``PRUNE_EVERY`` batches of samples, as on SQLite.

Connections: the writer keeps ONE connection of the engine's pool checked out for batches
(no pool checkout and, on PostgreSQL, no pre-ping round trip per batch); a second thread
recording at the same time uses a pooled connection instead of waiting. A PostgreSQL
connection found broken is discarded and the batch retried once on a new one -- safe because
a batch is idempotent: if the lost attempt had committed, the retry returns False.

SQLite WAL checkpoints: a checkpoint copies the WAL into the database file and fsyncs both
(with ``synchronous=NORMAL`` commits themselves never fsync). Left to SQLite's automatic
checkpoint (every 1000 WAL pages), every ~20th batch paid for one inside its COMMIT. The batch
connection therefore checkpoints automatically only past :data:`WRITER_AUTOCHECKPOINT_PAGES`
(a safety net), and :class:`_Checkpointer` runs a PASSIVE checkpoint (never blocks writers or
readers) on its own connection in a background thread after batches, at most every
:data:`CHECKPOINT_INTERVAL_S`. Durability is unchanged: a commit is durable exactly when it
was before (WAL + NORMAL: on disk at the next checkpoint or WAL sync).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Dialect, Engine

from jobs.catalog.base import key_json
from jobs.catalog.records import (
    BatchProgress,
    BatchSnapshot,
    DeadLetterSample,
    LateCount,
    LateSample,
)

log = logging.getLogger(__name__)

PRUNE_EVERY = 8
"""Samples are pruned every 8th batch (fewer statements on the other batches); reads
return at most ``sample_limit`` rows, so callers always see exactly the newest N."""
WRITER_AUTOCHECKPOINT_PAGES = 4000
"""SQLite: the batch connection checkpoints by itself only when the WAL reaches this many
pages (16 MB): a safety net that also restarts the WAL if batches never leave a gap."""
CHECKPOINT_INTERVAL_S = 0.25
"""SQLite: at most one background checkpoint per this many seconds."""


@dataclass(frozen=True, slots=True)
class BatchTarget:
    """Who a batch belongs to (immutable per run, cached by the service)."""

    run_id: int
    job_id: int
    store: str
    version: int


@dataclass(frozen=True, slots=True)
class BatchInput:
    """One micro-batch as ``record_batch`` received it, plus when it was recorded."""

    target: BatchTarget
    now: datetime
    progress: BatchProgress
    snapshot: BatchSnapshot
    late_counts: Sequence[LateCount]
    late_samples: Sequence[LateSample]
    dead_letter_samples: Sequence[DeadLetterSample]
    sample_limit: int


def late_rows(late_counts: Sequence[LateCount]) -> list[list[Any]]:
    """``[slot, key_json, start, end, accepted, dropped]``, one row per window (counts of the
    same window summed): PostgreSQL refuses an upsert that touches a row twice, and one row
    per window is less work. ``slot`` is :func:`jobs.catalog.base.slot_of` (inlined: this loop
    runs for every late window of every batch)."""
    rows: dict[str, list[Any]] = {}
    texts: dict[tuple[type, Any], str] = {}  # 1, 1.0 and True are equal keys in a dict
    for c in late_counts:
        k = c.key
        kt = texts.get((k.__class__, k))
        if kt is None:
            kt = texts[(k.__class__, k)] = key_json(k)
        s = c.window_start
        e = c.window_end
        slot = f"[{'null' if e is None else int(e)},{'null' if s is None else int(s)},{kt}]"
        row = rows.get(slot)
        if row is None:
            rows[slot] = [slot, kt, s, e, c.accepted, c.dropped]
        else:
            row[4] += c.accepted
            row[5] += c.dropped
    return list(rows.values())


# ---------------------------------------------------------------- SQLite

_SQLITE_PROGRESS = (
    "INSERT INTO batch_progress (run_id, job_id, store, batch_id, recorded_at, input_rows, "
    "rows_per_second, duration_ms, watermark, state_rows, state_bytes, late_accepted, "
    "late_dropped, dead_letters) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (store, batch_id) DO NOTHING"
)
_SQLITE_SNAPSHOT = (
    "INSERT INTO snapshots (run_id, job_id, version, store, batch_id, committed_at, watermark, "
    "source_offsets, state_rows, state_bytes, checkpoint_location) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQLITE_LATE = (
    "INSERT INTO late_window_counts (job_id, store, slot, key_json, window_start, window_end, "
    "accepted, dropped, last_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (store, slot) DO UPDATE SET "
    "accepted = late_window_counts.accepted + excluded.accepted, "
    "dropped = late_window_counts.dropped + excluded.dropped, "
    "last_at = excluded.last_at"
)
_SQLITE_LATE_SAMPLE = (
    "INSERT INTO late_samples (job_id, store, batch_id, recorded_at, key_json, event_time, "
    "window_start, window_end, reason, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQLITE_DEAD_LETTER = (
    "INSERT INTO dead_letters (job_id, store, batch_id, recorded_at, reason, record) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_SQLITE_HEARTBEAT = (
    "UPDATE runs SET last_heartbeat_at = ? WHERE id = ? AND status = 'running'"
)


_SQLITE_PRUNE = {
    t: f"DELETE FROM {t} WHERE job_id = ?1 AND id <= ("
    f"SELECT id FROM {t} WHERE job_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)"
    for t in ("late_samples", "dead_letters")
}


def write_sqlite(dbapi_conn: Any, converters: Converters, b: BatchInput) -> bool:
    """Write one batch on a SQLite DB-API connection (driver in autocommit mode: we BEGIN)."""
    ts, js = converters.timestamp, converters.json
    now_v = ts(b.now)
    target, progress, snapshot = b.target, b.progress, b.snapshot
    job_id, store, batch_id = target.job_id, target.store, progress.batch_id
    cur = dbapi_conn.cursor()
    cur.execute("BEGIN IMMEDIATE")
    try:
        cur.execute(
            _SQLITE_PROGRESS,
            (
                target.run_id, job_id, store, batch_id, now_v, progress.input_rows,
                float(progress.rows_per_second), progress.duration_ms, progress.watermark,
                progress.state_rows, progress.state_bytes, progress.late_accepted,
                progress.late_dropped, progress.dead_letters,
            ),
        )
        if cur.rowcount != 1:  # a replayed batch: nothing else may change
            cur.execute("ROLLBACK")
            return False
        cur.execute(
            _SQLITE_SNAPSHOT,
            (
                target.run_id, job_id, target.version, store, batch_id,
                ts(snapshot.committed_at), snapshot.watermark, js(snapshot.source_offsets),
                snapshot.state_rows, snapshot.state_bytes, snapshot.checkpoint_location,
            ),
        )
        if b.late_counts:
            cur.executemany(
                _SQLITE_LATE,
                [(job_id, store, *row, now_v) for row in late_rows(b.late_counts)],
            )
        prune = batch_id % PRUNE_EVERY == 0
        if b.late_samples:
            cur.executemany(
                _SQLITE_LATE_SAMPLE,
                [
                    (
                        job_id, store, batch_id, now_v, key_json(s.key), s.event_time,
                        s.window_start, s.window_end, s.reason, js(s.record),
                    )
                    for s in b.late_samples
                ],
            )
            if prune:
                cur.execute(_SQLITE_PRUNE["late_samples"], (job_id, b.sample_limit))
        if b.dead_letter_samples:
            cur.executemany(
                _SQLITE_DEAD_LETTER,
                [
                    (job_id, store, batch_id, now_v, d.reason, js(d.record))
                    for d in b.dead_letter_samples
                ],
            )
            if prune:
                cur.execute(_SQLITE_PRUNE["dead_letters"], (job_id, b.sample_limit))
        cur.execute(_SQLITE_HEARTBEAT, (now_v, target.run_id))
        cur.execute("COMMIT")
        return True
    except BaseException:
        if dbapi_conn.in_transaction:
            cur.execute("ROLLBACK")
        raise
    finally:
        cur.close()


class _Checkpointer:
    """PASSIVE WAL checkpoints of one SQLite file in a daemon thread, on its own connection."""

    def __init__(self, path: str, busy_timeout_ms: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def poke(self) -> None:
        """A batch was committed: checkpoint soon (coalesced, rate-limited)."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._run, name="tidemark-sqlite-checkpoint", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            conn.execute("PRAGMA synchronous = NORMAL")
            while True:
                self._wake.wait()
                if self._stopping:
                    return
                self._wake.clear()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # e.g. busy: the next batch pokes again
                    log.debug("background checkpoint of %s failed: %s", self.path, exc)
                time.sleep(CHECKPOINT_INTERVAL_S)
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


# ---------------------------------------------------------------- PostgreSQL

PG_BATCH = """\
WITH p AS (
  INSERT INTO batch_progress (run_id, job_id, store, batch_id, recorded_at, input_rows,
    rows_per_second, duration_ms, watermark, state_rows, state_bytes, late_accepted,
    late_dropped, dead_letters)
  VALUES (%(run)s::integer, %(job)s::integer, %(store)s::text, %(batch)s::bigint,
    %(now)s::timestamptz, %(input_rows)s::bigint, %(rows_per_second)s::float8,
    %(duration_ms)s::bigint, %(watermark)s::bigint, %(state_rows)s::bigint,
    %(state_bytes)s::bigint, %(late_accepted)s::bigint, %(late_dropped)s::bigint,
    %(dead_letters)s::bigint)
  ON CONFLICT (store, batch_id) DO NOTHING
  RETURNING id
), s AS (
  INSERT INTO snapshots (run_id, job_id, version, store, batch_id, committed_at, watermark,
    source_offsets, state_rows, state_bytes, checkpoint_location)
  SELECT %(run)s::integer, %(job)s::integer, %(version)s::integer, %(store)s::text,
    %(batch)s::bigint, %(committed_at)s::timestamptz, %(s_watermark)s::bigint,
    %(source_offsets)s::json, %(s_state_rows)s::bigint, %(s_state_bytes)s::bigint,
    %(checkpoint)s::text
  FROM p
), l AS (
  INSERT INTO late_window_counts (job_id, store, slot, key_json, window_start, window_end,
    accepted, dropped, last_at)
  SELECT %(job)s::integer, %(store)s::text, x.slot, x.key_json, x.ws, x.we, x.a, x.d,
    %(now)s::timestamptz
  FROM p CROSS JOIN unnest(%(l_slot)s::text[], %(l_key)s::text[], %(l_ws)s::bigint[],
    %(l_we)s::bigint[], %(l_a)s::bigint[], %(l_d)s::bigint[]) AS x(slot, key_json, ws, we, a, d)
  ON CONFLICT (store, slot) DO UPDATE SET
    accepted = late_window_counts.accepted + excluded.accepted,
    dropped = late_window_counts.dropped + excluded.dropped,
    last_at = excluded.last_at
), ls AS (
  INSERT INTO late_samples (job_id, store, batch_id, recorded_at, key_json, event_time,
    window_start, window_end, reason, record)
  SELECT %(job)s::integer, %(store)s::text, %(batch)s::bigint, %(now)s::timestamptz, x.k,
    x.et, x.ws, x.we, x.reason, x.rec::json
  FROM p CROSS JOIN unnest(%(s_key)s::text[], %(s_et)s::bigint[], %(s_ws)s::bigint[],
    %(s_we)s::bigint[], %(s_reason)s::text[], %(s_rec)s::text[])
    WITH ORDINALITY AS x(k, et, ws, we, reason, rec, n)
  ORDER BY x.n
), dl AS (
  INSERT INTO dead_letters (job_id, store, batch_id, recorded_at, reason, record)
  SELECT %(job)s::integer, %(store)s::text, %(batch)s::bigint, %(now)s::timestamptz,
    x.reason, x.rec::json
  FROM p CROSS JOIN unnest(%(d_reason)s::text[], %(d_rec)s::text[])
    WITH ORDINALITY AS x(reason, rec, n)
  ORDER BY x.n
), lp AS (
  DELETE FROM late_samples
  WHERE %(prune_late)s::boolean AND job_id = %(job)s::integer AND EXISTS (SELECT FROM p)
    AND id <= (SELECT id FROM late_samples WHERE job_id = %(job)s::integer
               ORDER BY id DESC LIMIT 1 OFFSET %(limit)s::integer)
), dp AS (
  DELETE FROM dead_letters
  WHERE %(prune_dead)s::boolean AND job_id = %(job)s::integer AND EXISTS (SELECT FROM p)
    AND id <= (SELECT id FROM dead_letters WHERE job_id = %(job)s::integer
               ORDER BY id DESC LIMIT 1 OFFSET %(limit)s::integer)
), h AS (
  UPDATE runs SET last_heartbeat_at = %(now)s::timestamptz
  WHERE id = %(run)s::integer AND status = 'running' AND EXISTS (SELECT FROM p)
)
SELECT count(*) FROM p"""

def write_postgres(dbapi_conn: Any, converters: Converters, b: BatchInput) -> bool:
    """Write one batch on a psycopg connection in autocommit mode: one statement, one
    implicit transaction, one round trip."""
    with dbapi_conn.cursor() as cur:
        cur.execute(PG_BATCH, postgres_params(converters, b))
        row = cur.fetchone()
    return bool(row and row[0])


def postgres_params(converters: Converters, b: BatchInput) -> dict[str, Any]:
    """The parameters of :data:`PG_BATCH` for one batch."""
    js = converters.json
    target, progress, snapshot = b.target, b.progress, b.snapshot
    rows = late_rows(b.late_counts)
    batch_id = progress.batch_id
    prune = batch_id % PRUNE_EVERY == 0
    samples, dead = b.late_samples, b.dead_letter_samples
    return {
        "run": target.run_id,
        "job": target.job_id,
        "version": target.version,
        "store": target.store,
        "batch": batch_id,
        "now": b.now,
        "input_rows": progress.input_rows,
        "rows_per_second": float(progress.rows_per_second),
        "duration_ms": progress.duration_ms,
        "watermark": progress.watermark,
        "state_rows": progress.state_rows,
        "state_bytes": progress.state_bytes,
        "late_accepted": progress.late_accepted,
        "late_dropped": progress.late_dropped,
        "dead_letters": progress.dead_letters,
        "committed_at": snapshot.committed_at,
        "s_watermark": snapshot.watermark,
        "source_offsets": js(snapshot.source_offsets),
        "s_state_rows": snapshot.state_rows,
        "s_state_bytes": snapshot.state_bytes,
        "checkpoint": snapshot.checkpoint_location,
        "l_slot": _text_array([r[0] for r in rows]),
        "l_key": _text_array([r[1] for r in rows]),
        "l_ws": _int_array([r[2] for r in rows]),
        "l_we": _int_array([r[3] for r in rows]),
        "l_a": _int_array([r[4] for r in rows]),
        "l_d": _int_array([r[5] for r in rows]),
        "s_key": _text_array([key_json(s.key) for s in samples]),
        "s_et": _int_array([s.event_time for s in samples]),
        "s_ws": _int_array([s.window_start for s in samples]),
        "s_we": _int_array([s.window_end for s in samples]),
        "s_reason": _text_array([s.reason for s in samples]),
        "s_rec": _text_array([js(s.record) for s in samples]),
        "d_reason": _text_array([d.reason for d in dead]),
        "d_rec": _text_array([js(d.record) for d in dead]),
        "prune_late": prune and bool(samples),
        "prune_dead": prune and bool(dead),
        "limit": b.sample_limit,
    }


def _text_array(values: list[str]) -> str:
    """A text[] literal; every element quoted, so no value can read as NULL or split."""
    return "{" + ",".join(
        ['"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values]
    ) + "}"


def _int_array(values: list[int | None]) -> str:
    """A bigint[] literal (``None`` is NULL)."""
    if None in values:
        return "{" + ",".join(["NULL" if v is None else str(int(v)) for v in values]) + "}"
    return "{" + ",".join(map(str, map(int, values))) + "}"  # type: ignore[arg-type]


# ---------------------------------------------------------------- the writer


class BatchWriter:
    """Writes batches for one :class:`~jobs.catalog.Catalog` (one engine)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect: Dialect = engine.dialect
        self.postgres = self.dialect.name == "postgresql"
        self.converters = Converters.for_dialect(self.dialect)
        self._lock = threading.Lock()
        self._held: Any = None  # the pool's connection proxy kept for batches
        self._checkpointer: _Checkpointer | None = None
        database = engine.url.database
        if not self.postgres and database and database != ":memory:":
            from jobs.catalog.db import SQLITE_BUSY_TIMEOUT_MS

            self._checkpointer = _Checkpointer(database, SQLITE_BUSY_TIMEOUT_MS)

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


@dataclass(frozen=True, slots=True)
class Converters:
    """Bind conversions of the columns' own types, resolved once per dialect."""

    timestamp: Callable[[Any], Any]
    json: Callable[[Any], Any]

    @classmethod
    def for_dialect(cls, dialect: Dialect) -> Converters:
        from sqlalchemy import JSON

        from jobs.catalog.types import UTCDateTime

        ts = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
        serializer = getattr(dialect, "_json_serializer", None) or json.dumps
        if dialect.name == "sqlite":
            js = JSON().dialect_impl(dialect).bind_processor(dialect)
        else:
            js = None

        def ident(v: Any) -> Any:
            return v

        return cls(
            timestamp=ts or ident,
            json=js or (lambda v: serializer(v)),
        )
