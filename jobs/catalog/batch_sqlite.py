"""The SQLite batch writer: one transaction per micro-batch on the DB-API connection.

``BEGIN IMMEDIATE``; the progress row with ``ON CONFLICT (store, batch_id) DO NOTHING`` -- if
nothing was inserted the batch is a replay, the transaction is rolled back and nothing else is
written; the snapshot; the late counts as one ``executemany`` of ``INSERT ... ON CONFLICT
(store, slot) DO UPDATE`` (adds to the per-window totals); the samples; every ``PRUNE_EVERY``
batches a prune to the newest N; the heartbeat; ``COMMIT``. SQLite is in-process: no round
trips to save.

WAL checkpoints: a checkpoint copies the WAL into the database file and fsyncs both (with
``synchronous=NORMAL`` commits themselves never fsync). Left to SQLite's automatic checkpoint
(every 1000 WAL pages), every ~20th batch paid for one inside its COMMIT. The batch connection
therefore checkpoints automatically only past :data:`WRITER_AUTOCHECKPOINT_PAGES` (a safety
net), and :class:`Checkpointer` runs a PASSIVE checkpoint (never blocks writers or readers) on
its own connection in a background thread after batches, at most every
:data:`CHECKPOINT_INTERVAL_S`. Durability is unchanged: a commit is durable exactly when it
would be with SQLite's own checkpoints (WAL + NORMAL: on disk at the next checkpoint or WAL
sync).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from typing import Any

from jobs.catalog.base import key_json
from jobs.catalog.batch_rows import PRUNE_EVERY, BatchInput, Converters, late_rows

log = logging.getLogger(__name__)

WRITER_AUTOCHECKPOINT_PAGES = 4000
"""The batch connection checkpoints by itself only when the WAL reaches this many pages
(16 MB): a safety net that also restarts the WAL if batches never leave a gap."""
CHECKPOINT_INTERVAL_S = 0.25
"""At most one background checkpoint per this many seconds."""

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


class Checkpointer:
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
