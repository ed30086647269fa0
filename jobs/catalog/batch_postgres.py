"""The PostgreSQL batch writer: the whole micro-batch is ONE statement.

Data-modifying CTEs in autocommit mode: one implicit transaction sent as one round trip (no
separate BEGIN and COMMIT). Every CTE reads from the progress insert's ``RETURNING``, so when
``ON CONFLICT DO NOTHING`` finds the batch already recorded the statement writes nothing at all
(idempotency decided by the database). Per-row values travel as ``text[]`` / ``bigint[]``
literals unpacked by ``unnest`` (no JSON parsing; the only escaping is of ``"`` and ``\\``);
values that are the same for every row (job, store, time) are passed once. The commit is
synchronous (fsync), like every other catalog commit.

A prune inside the statement does not see the samples inserted by the same statement (one
snapshot per statement), so it keeps the newest N *earlier* samples plus this batch's: storage
stays under ``sample_limit`` + ``PRUNE_EVERY`` batches of samples, as on SQLite.
"""

from __future__ import annotations

from typing import Any

from jobs.catalog.base import key_json
from jobs.catalog.batch_rows import PRUNE_EVERY, BatchInput, Converters, late_rows

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
