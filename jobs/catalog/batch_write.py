"""The write half of ``record_batch``, at driver level: one transaction per micro-batch.

``record_batch`` runs after every committed micro-batch of every job, so its cost is paid all
the time. Going through the ORM session cost more than the database work (a parameter dict
per statement, statement coercion, result objects), so the batch is written here with plain
DB-API calls on a pooled connection, with the columns' own bind processors applied where a
type needs converting (UTC datetimes and JSON on SQLite):

- **SQLite** (in-process, no round trips): ``BEGIN IMMEDIATE``; the progress row with
  ``ON CONFLICT (store, batch_id) DO NOTHING`` -- if nothing was inserted the batch is a replay,
  the transaction is rolled back and nothing else is written; the snapshot; the late counts
  as ONE ``INSERT ... SELECT FROM json_each(?) ... ON CONFLICT DO UPDATE`` (adds to the
  per-window totals); the samples; every ``PRUNE_EVERY`` batches a prune to the newest N; the
  heartbeat; ``COMMIT``.
- **PostgreSQL**: the whole batch is ONE statement (data-modifying CTEs), sent as one round
  trip together with its BEGIN and COMMIT (psycopg pipeline mode). Every CTE reads from the
  progress insert's ``RETURNING``, so when ``ON CONFLICT DO NOTHING`` finds the batch already
  recorded the statement writes nothing at all (same idempotency, decided by the database).
  Per-row values travel as binary arrays unpacked by ``unnest`` (no JSON parsing, no text
  escaping); values that are the same for every row (job, store, time) are passed once.

A prune inside the PostgreSQL statement does not see the samples inserted by the same
statement (one snapshot per statement), so it keeps the newest N *earlier* samples plus this
batch's: storage stays under ``sample_limit`` + ``PRUNE_EVERY`` batches of samples, as on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Dialect

from jobs.catalog.base import key_json, slot_text
from jobs.catalog.records import (
    BatchProgress,
    BatchSnapshot,
    DeadLetterSample,
    LateCount,
    LateSample,
)

PRUNE_EVERY = 8
"""Samples are pruned every 8th batch (fewer statements on the other batches); reads
return at most ``sample_limit`` rows, so callers always see exactly the newest N."""


@dataclass(frozen=True, slots=True)
class BatchTarget:
    """Who a batch belongs to (immutable per run, cached by the service)."""

    run_id: int
    job_id: int
    store: str
    version: int


def merge_late_counts(
    late_counts: Sequence[LateCount],
) -> dict[tuple[str, int | None, int | None], list[Any]]:
    """One entry per window, ``(key_json, start, end) -> [accepted, dropped]``: PostgreSQL
    refuses an upsert that touches the same row twice, and one row per window is less work."""
    merged: dict[tuple[str, int | None, int | None], list[Any]] = {}
    texts: dict[tuple[type, Any], str] = {}
    for c in late_counts:
        k = c.key
        kt = texts.get((type(k), k))
        if kt is None:
            kt = texts[(type(k), k)] = key_json(k)
        ident = (kt, c.window_start, c.window_end)
        row = merged.get(ident)
        if row is None:
            merged[ident] = [c.accepted, c.dropped]
        else:
            row[0] += c.accepted
            row[1] += c.dropped
    return merged


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


def write_sqlite(
    dbapi_conn: Any,
    dialect: Dialect,
    converters: Converters,
    target: BatchTarget,
    now: datetime,
    progress: BatchProgress,
    snapshot: BatchSnapshot,
    late_counts: Sequence[LateCount],
    late_samples: Sequence[LateSample],
    dead_letter_samples: Sequence[DeadLetterSample],
    sample_limit: int,
) -> bool:
    """Write one batch on a SQLite DB-API connection (driver in autocommit mode: we BEGIN)."""
    ts, js = converters.timestamp, converters.json
    now_v = ts(now)
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
        if late_counts:
            cur.executemany(
                _SQLITE_LATE,
                [
                    (job_id, store, slot_text(kt, s, e), kt, s, e, ad[0], ad[1], now_v)
                    for (kt, s, e), ad in merge_late_counts(late_counts).items()
                ],
            )
        prune = batch_id % PRUNE_EVERY == 0
        if late_samples:
            cur.executemany(
                _SQLITE_LATE_SAMPLE,
                [
                    (
                        job_id, store, batch_id, now_v, key_json(s.key), s.event_time,
                        s.window_start, s.window_end, s.reason, js(s.record),
                    )
                    for s in late_samples
                ],
            )
            if prune:
                cur.execute(_SQLITE_PRUNE["late_samples"], (job_id, sample_limit))
        if dead_letter_samples:
            cur.executemany(
                _SQLITE_DEAD_LETTER,
                [
                    (job_id, store, batch_id, now_v, d.reason, js(d.record))
                    for d in dead_letter_samples
                ],
            )
            if prune:
                cur.execute(_SQLITE_PRUNE["dead_letters"], (job_id, sample_limit))
        cur.execute(_SQLITE_HEARTBEAT, (now_v, target.run_id))
        cur.execute("COMMIT")
        return True
    except BaseException:
        if dbapi_conn.in_transaction:
            cur.execute("ROLLBACK")
        raise
    finally:
        cur.close()


# ---------------------------------------------------------------- PostgreSQL

PG_BATCH = """\
WITH p AS (
  INSERT INTO batch_progress (run_id, job_id, store, batch_id, recorded_at, input_rows,
    rows_per_second, duration_ms, watermark, state_rows, state_bytes, late_accepted,
    late_dropped, dead_letters)
  VALUES (%(run)s, %(job)s, %(store)s, %(batch)s, %(now)s, %(input_rows)s,
    %(rows_per_second)s, %(duration_ms)s, %(watermark)s, %(state_rows)s, %(state_bytes)s,
    %(late_accepted)s, %(late_dropped)s, %(dead_letters)s)
  ON CONFLICT (store, batch_id) DO NOTHING
  RETURNING id
), s AS (
  INSERT INTO snapshots (run_id, job_id, version, store, batch_id, committed_at, watermark,
    source_offsets, state_rows, state_bytes, checkpoint_location)
  SELECT %(run)s, %(job)s, %(version)s, %(store)s, %(batch)s, %(committed_at)s,
    %(s_watermark)s, %(source_offsets)s::json, %(s_state_rows)s, %(s_state_bytes)s,
    %(checkpoint)s
  FROM p
), l AS (
  INSERT INTO late_window_counts (job_id, store, slot, key_json, window_start, window_end,
    accepted, dropped, last_at)
  SELECT %(job)s, %(store)s, x.slot, x.key_json, x.ws, x.we, x.a, x.d, %(now)s
  FROM p CROSS JOIN unnest(%(l_slot)s::text[], %(l_key)s::text[], %(l_ws)s::bigint[],
    %(l_we)s::bigint[], %(l_a)s::bigint[], %(l_d)s::bigint[]) AS x(slot, key_json, ws, we, a, d)
  ON CONFLICT (store, slot) DO UPDATE SET
    accepted = late_window_counts.accepted + excluded.accepted,
    dropped = late_window_counts.dropped + excluded.dropped,
    last_at = excluded.last_at
), ls AS (
  INSERT INTO late_samples (job_id, store, batch_id, recorded_at, key_json, event_time,
    window_start, window_end, reason, record)
  SELECT %(job)s, %(store)s, %(batch)s, %(now)s, x.k, x.et, x.ws, x.we, x.reason, x.rec::json
  FROM p CROSS JOIN unnest(%(s_key)b::text[], %(s_et)b::bigint[], %(s_ws)b::bigint[],
    %(s_we)b::bigint[], %(s_reason)b::text[], %(s_rec)b::text[])
    WITH ORDINALITY AS x(k, et, ws, we, reason, rec, n)
  ORDER BY x.n
), dl AS (
  INSERT INTO dead_letters (job_id, store, batch_id, recorded_at, reason, record)
  SELECT %(job)s, %(store)s, %(batch)s, %(now)s, x.reason, x.rec::json
  FROM p CROSS JOIN unnest(%(d_reason)b::text[], %(d_rec)b::text[])
    WITH ORDINALITY AS x(reason, rec, n)
  ORDER BY x.n
), lp AS (
  DELETE FROM late_samples
  WHERE %(prune_late)s AND job_id = %(job)s AND EXISTS (SELECT FROM p) AND id <= (
    SELECT id FROM late_samples WHERE job_id = %(job)s ORDER BY id DESC
    LIMIT 1 OFFSET %(limit)s)
), dp AS (
  DELETE FROM dead_letters
  WHERE %(prune_dead)s AND job_id = %(job)s AND EXISTS (SELECT FROM p) AND id <= (
    SELECT id FROM dead_letters WHERE job_id = %(job)s ORDER BY id DESC
    LIMIT 1 OFFSET %(limit)s)
), h AS (
  UPDATE runs SET last_heartbeat_at = %(now)s
  WHERE id = %(run)s AND status = 'running' AND EXISTS (SELECT FROM p)
)
SELECT count(*) FROM p"""


def write_postgres(
    dbapi_conn: Any,
    converters: Converters,
    target: BatchTarget,
    now: datetime,
    progress: BatchProgress,
    snapshot: BatchSnapshot,
    late_counts: Sequence[LateCount],
    late_samples: Sequence[LateSample],
    dead_letter_samples: Sequence[DeadLetterSample],
    sample_limit: int,
) -> bool:
    """Write one batch on a psycopg connection: one statement, one round trip."""
    params = postgres_params(
        converters, target, now, progress, snapshot, late_counts, late_samples,
        dead_letter_samples, sample_limit,
    )
    # one statement is one transaction: in autocommit mode it is sent as one round trip
    # (no separate BEGIN and COMMIT) and PostgreSQL commits it atomically
    dbapi_conn.autocommit = True
    try:
        with dbapi_conn.cursor() as cur:
            cur.execute(PG_BATCH, params)
            row = cur.fetchone()
    finally:
        dbapi_conn.autocommit = False
    return bool(row and row[0])


def postgres_params(
    converters: Converters,
    target: BatchTarget,
    now: datetime,
    progress: BatchProgress,
    snapshot: BatchSnapshot,
    late_counts: Sequence[LateCount],
    late_samples: Sequence[LateSample],
    dead_letter_samples: Sequence[DeadLetterSample],
    sample_limit: int,
) -> dict[str, Any]:
    """The parameters of :data:`PG_BATCH` for one batch."""
    js = converters.json
    merged = merge_late_counts(late_counts)
    l_slot = _text_array([slot_text(kt, s, e) for kt, s, e in merged])
    l_key = _text_array([kt for kt, _s, _e in merged])
    l_ws = _int_array([s for _kt, s, _e in merged])
    l_we = _int_array([e for _kt, _s, e in merged])
    l_a = _int_array([ad[0] for ad in merged.values()])
    l_d = _int_array([ad[1] for ad in merged.values()])
    batch_id = progress.batch_id
    prune = batch_id % PRUNE_EVERY == 0
    return {
        "run": target.run_id,
        "job": target.job_id,
        "version": target.version,
        "store": target.store,
        "batch": batch_id,
        "now": now,
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
        "l_slot": l_slot,
        "l_key": l_key,
        "l_ws": l_ws,
        "l_we": l_we,
        "l_a": l_a,
        "l_d": l_d,
        "s_key": [key_json(s.key) for s in late_samples],
        "s_et": [s.event_time for s in late_samples],
        "s_ws": [s.window_start for s in late_samples],
        "s_we": [s.window_end for s in late_samples],
        "s_reason": [s.reason for s in late_samples],
        "s_rec": [js(s.record) for s in late_samples],
        "d_reason": [d.reason for d in dead_letter_samples],
        "d_rec": [js(d.record) for d in dead_letter_samples],
        "prune_late": prune and bool(late_samples),
        "prune_dead": prune and bool(dead_letter_samples),
        "limit": sample_limit,
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


# ---------------------------------------------------------------- type conversion


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
