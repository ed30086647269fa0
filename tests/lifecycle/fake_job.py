"""A tiny stand-in for ``python -m jobs.run JOB``: a real child process that behaves like a job
towards the catalog (attaches to the run its launcher recorded, heartbeats, records a graceful
stop on SIGTERM) and misbehaves on command, so the supervisor is tested without Spark.

    python fake_job.py JOB [--version N]

``FAKE_MODE``: ``run`` (default: heartbeat until SIGTERM), ``crash`` (exit 3 at once),
``hang`` (never heartbeat), ``ignore_term`` (heartbeat, ignore SIGTERM), ``nocatalog``
(sleep, touch nothing). ``FAKE_HEARTBEAT_S`` sets the heartbeat period (default 0.2).

With ``FAKE_SOURCE_T0`` (epoch ms) it also commits a micro-batch per period, like a job reading
a source whose input grows with wall time (event time up to ``now - FAKE_SOURCE_T0`` exists):
each batch advances its store's watermark by ``FAKE_CHUNK_MS`` (default 5000) but never past
the input, and resumes from the store's last committed batch (a checkpoint). A new store
therefore replays from 0 and catches up with a run that is already at the head.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("--version", type=int)
    args = parser.parse_args()
    mode = os.environ.get("FAKE_MODE", "run")
    print(f"fake job {args.job} v{args.version} mode {mode} pid {os.getpid()}", flush=True)
    if mode == "crash":
        print("boom: cannot start", flush=True)
        return 3
    if mode == "nocatalog":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(0.1)

    from jobs.catalog import Catalog
    from jobs.lifecycle.attach import find_own_run

    catalog = Catalog(os.environ["TIDEMARK_DB_URL"])
    run = find_own_run(catalog, args.job, timeout_s=20)
    if run is None:
        print("no run recorded for me", flush=True)
        return 4
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    if mode == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, on_term)
    period = float(os.environ.get("FAKE_HEARTBEAT_S", "0.2"))
    source_t0 = os.environ.get("FAKE_SOURCE_T0")
    chunk = int(os.environ.get("FAKE_CHUNK_MS", "5000"))
    last = catalog.progress(args.job, store=run.store, limit=1)
    batch_id = last[-1].batch_id + 1 if last else 0
    wm = (last[-1].watermark or 0) if last else 0
    if last:
        print(f"resuming store {run.store} at batch {batch_id}, watermark {wm}", flush=True)
    while not stopping:
        if mode == "hang":
            pass
        elif source_t0 is not None:
            head = time.time_ns() // 1_000_000 - int(source_t0)
            wm = max(wm, min(wm + chunk, head))
            commit_batch(catalog, run.id, run.store, batch_id, wm)
            batch_id += 1
        else:
            catalog.heartbeat(run.id)
        time.sleep(period)
    catalog.end_run(run.id, "stopped", "SIGTERM: stopped after the current batch",
                    actor=f"spark:{run.id}")
    print("stopped gracefully", flush=True)
    return 0


def commit_batch(catalog: object, run_id: int, store: str, batch_id: int, wm: int) -> None:
    from datetime import UTC, datetime

    from jobs.catalog.records import BatchProgress, BatchSnapshot

    progress = BatchProgress(batch_id=batch_id, input_rows=10, rows_per_second=50.0,
                             duration_ms=5, watermark=wm, state_rows=1, state_bytes=100)
    snap = BatchSnapshot(batch_id=batch_id, committed_at=datetime.now(tz=UTC), watermark=wm,
                         source_offsets={"files": batch_id}, state_bytes=100,
                         checkpoint_location=f"/checkpoints/{store}")
    catalog.record_batch(run_id, progress, snap, [])  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
