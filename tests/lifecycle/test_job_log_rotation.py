"""A job's log rotates on the supervisor's passes while the job keeps writing to it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lifecycle_support import Harness, definition, pid_alive, wait_for

from jobs.logsetup import Rotation


def test_a_live_jobs_log_rotates_and_the_job_writes_on(harness: Harness) -> None:
    h = harness
    h.catalog.create_job(definition(), "alice")
    h.catalog.set_desired_state("scores", "running", "alice")
    ticker = [sys.executable, "-c",
              "import itertools, time\n"
              "for n in itertools.count():\n"
              "    print(f'tick {n}', flush=True)\n"
              "    time.sleep(0.05)\n"]
    sup = h.supervisor(command=lambda job, version: ticker)
    sup.log_rotation = Rotation(max_bytes=40, backups=2, keep=5)
    assert [o.action for o in sup.reconcile().outcomes] == ["start"]
    (run,) = h.catalog.active_runs("scores")
    log = Path(str(run.log_path))
    wait_for(lambda: "tick 3" in log.read_text(), what="the job's first lines")

    report = sup.reconcile()
    assert ("rotate-log", str(log)) in [(o.action, o.detail) for o in report.outcomes]
    rotated = log.with_name(log.name + ".1").read_text()
    assert "launching scores" in rotated and "tick 3" in rotated
    wait_for(lambda: "tick" in log.read_text(), what="the job writing on")
    after = log.read_bytes()
    assert b"launching" not in after and b"\0" not in after  # appended at the new end
    assert pid_alive(run.pid)


def test_old_launch_logs_beyond_the_limit_are_deleted(harness: Harness) -> None:
    h = harness
    sup = h.supervisor()
    sup.log_rotation = Rotation(max_bytes=10_000, backups=2, keep=2)
    job_dir = sup.log_dir / "scores"
    job_dir.mkdir(parents=True)
    for n in range(4):
        f = job_dir / f"scores-v1-2026010{n}T000000Z-{100 + n}.log"
        f.write_text(f"launch {n}\n")
        os.utime(f, (1_000_000 + n, 1_000_000 + n))
    (job_dir / "scores-v1-20260100T000000Z-100.log.1").write_text("rotated\n")
    sup.reconcile()
    assert sorted(p.name for p in job_dir.iterdir()) == [
        "scores-v1-20260102T000000Z-102.log", "scores-v1-20260103T000000Z-103.log"]
