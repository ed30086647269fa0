"""Exactly once across driver SIGKILLs with the checkpoint and the results on ``s3a://`` (the
suite's S3Proxy), through the real entry point: the results equal an uninterrupted run's (the
session's shared local run, ``tests/crash_reference.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash_reference import JOB, CrashReferences
from spark.test_crash_recovery import KILL_AT, ROOT, _setup

from jobs.storage import join
from jobs.storage.s3 import S3Storage
from jobs.storage.s3server import BUCKET, S3Server

from .test_s3 import s3_panes, s3_side

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def _env(s3: S3Server, home: Path, root: str) -> dict[str, str]:
    env = {**os.environ, **s3.env(), "TIDEMARK_HOME": str(home), "PYTHONPATH": str(ROOT),
           "TIDEMARK_SPARK_MASTER": "local[2]",
           "TIDEMARK_CHECKPOINT_ROOT": f"s3a://{BUCKET}/{root}/checkpoints",
           "TIDEMARK_RESULTS_ROOT": f"s3a://{BUCKET}/{root}/results"}
    for var in ("TIDEMARK_DB_URL", "TIDEMARK_LAUNCHED", "TIDEMARK_CONFIG"):
        env.pop(var, None)
    return env


def _launch(env: dict[str, str], job: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "jobs.run", job, "--until-idle", "--shuffle-partitions", "2"],
        env=env, cwd=str(ROOT), stdout=log.open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True)


def _results(st: S3Storage, out: str) -> tuple[list[str], list[str], list[str]]:
    panes = []
    for row in s3_panes(st, join(out, "panes")):
        row.pop("emitted_at")
        panes.append(json.dumps(row, sort_keys=True, default=str))
    side: dict[str, list[str]] = {}
    for kind in ("late", "dead_letters"):
        side[kind] = sorted(json.dumps(x, sort_keys=True) for x in s3_side(st, out, kind))
    return sorted(panes), side["late"], side["dead_letters"]


def test_sigkill_with_checkpoint_and_results_on_s3_equals_uninterrupted(
        s3: S3Server, crash_reference: CrashReferences, tmp_path: Path) -> None:
    ref = crash_reference.get(False)  # the uninterrupted local run, shared with other scenarios
    job = JOB
    home = tmp_path / "crash"
    store = _setup(home, ref.spec)
    env = _env(s3, home, "kill-crash")
    ckpt = f"{env['TIDEMARK_CHECKPOINT_ROOT']}/{store}"
    st = S3Storage(s3.options())
    kills = []
    for batch in KILL_AT:
        proc = _launch(env, job, tmp_path / "crash.log")
        deadline = time.monotonic() + 600
        while not st.exists(join(ckpt, "offsets", str(batch))):  # batch started: kill in it
            assert proc.poll() is None, (tmp_path / "crash.log").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        kills.append((batch, st.exists(join(ckpt, "commits", str(batch)))))
    proc = _launch(env, job, tmp_path / "crash.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "crash.log").read_text()[-3000:]

    got = _results(st, f"{env['TIDEMARK_RESULTS_ROOT']}/{job}/{store}")
    assert got[0] == ref.panes, f"kills at {kills}"
    assert got[1:] == (ref.late, ref.dead)
