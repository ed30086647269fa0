"""A tiny stand-in for ``python -m jobs.run JOB``: a real child process that behaves like a job
towards the catalog (attaches to the run its launcher recorded, heartbeats, records a graceful
stop on SIGTERM) and misbehaves on command, so the supervisor is tested without Spark.

    python fake_job.py JOB [--version N]

``FAKE_MODE``: ``run`` (default: heartbeat until SIGTERM), ``crash`` (exit 3 at once),
``hang`` (never heartbeat), ``ignore_term`` (heartbeat, ignore SIGTERM), ``nocatalog``
(sleep, touch nothing). ``FAKE_HEARTBEAT_S`` sets the heartbeat period (default 0.2).
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
    while not stopping:
        if mode != "hang":
            catalog.heartbeat(run.id)
        time.sleep(period)
    catalog.end_run(run.id, "stopped", "SIGTERM: stopped after the current batch",
                    actor=f"spark:{run.id}")
    print("stopped gracefully", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
