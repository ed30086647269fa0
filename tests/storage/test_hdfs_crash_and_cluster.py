"""Heavy end-to-end scenarios on a real HDFS, through the real entry point (``python -m
jobs.run``): exactly once across driver SIGKILLs with checkpoint and results on ``hdfs://``
(Parquet on the native path, a Delta table on the engine path), and the same job on a Spark
standalone cluster (a master and two workers) whose checkpoint and results live on HDFS. The
Parquet scenarios compare with the session's shared uninterrupted local run
(``tests/crash_reference.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crash_reference import JOB, CrashReferences
from spark.test_crash_recovery import FILES, KILL_AT, ROOT, _input, _setup, _spec

from jobs.spark.delta_sink import read_table
from jobs.spark.sinks import read_side
from jobs.storage import join
from jobs.storage.minihdfs import MiniHdfs
from jobs.storage.webhdfs import WebHdfsStorage
from tests.cluster import executors_launched, standalone_cluster

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def _env(home: Path, hdfs: MiniHdfs, root: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"TIDEMARK_HOME": str(home), "TIDEMARK_SPARK_MASTER": "local[2]",
                "PYTHONPATH": str(ROOT), "TIDEMARK_WEBHDFS_URL": hdfs.http,
                "TIDEMARK_CHECKPOINT_ROOT": f"{hdfs.url}/{root}/checkpoints",
                "TIDEMARK_RESULTS_ROOT": f"{hdfs.url}/{root}/results", **extra})
    env.pop("TIDEMARK_DB_URL", None)
    env.pop("TIDEMARK_LAUNCHED", None)
    return env


def _launch(env: dict[str, str], job: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "jobs.run", job, "--until-idle", "--shuffle-partitions", "2"],
        env=env, cwd=str(ROOT), stdout=log.open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True)


def _results(spark: Any, hdfs: MiniHdfs, out: str, delta: bool
             ) -> tuple[list[str], list[str], list[str]]:
    """(panes without emitted_at, late records, dead letters) under ``out``, sorted."""
    if delta:
        rows = read_table(join(out, "panes")).to_pylist()
    else:
        rows = [r.asDict() for r in spark.read.parquet(join(out, "panes")).collect()]
    panes = []
    for row in rows:
        row.pop("emitted_at")
        row.pop("batch_id", None)
        panes.append(json.dumps(row, sort_keys=True))
    st = WebHdfsStorage(hdfs.http)
    side: dict[str, list[str]] = {}
    for kind in ("late", "dead_letters"):
        ids = [int(n.split("=")[1]) for n in st.list(join(out, kind)) if n.startswith("batch_id=")]
        side[kind] = sorted(json.dumps(x, sort_keys=True)
                            for b in ids for x in read_side(out, kind, b))
    return sorted(panes), side["late"], side["dead_letters"]


@pytest.mark.parametrize("engine", [False, True], ids=["native-parquet", "engine-delta"])
def test_sigkill_on_hdfs_equals_uninterrupted(
        spark: Any, hdfs: MiniHdfs, crash_reference: CrashReferences, tmp_path: Path,
        engine: bool) -> None:
    job = JOB
    tag = "engine" if engine else "native"
    if engine:
        # the Delta sink has no shared reference: its uninterrupted run is on HDFS here
        inp = tmp_path / "in"
        _input(inp)
        spec = _spec(job, inp, engine)
        spec["sink"] = {"kind": "delta"}
        ref_home = tmp_path / "ref"
        store = _setup(ref_home, spec)
        proc = _launch(_env(ref_home, hdfs, f"{tag}-ref"), job, tmp_path / "ref.log")
        assert proc.wait(timeout=900) == 0, (tmp_path / "ref.log").read_text()[-3000:]
        ref = _results(spark, hdfs, f"{hdfs.url}/{tag}-ref/results/{job}/{store}", engine)
        assert ref[0], "the reference run produced no panes"
        assert len(ref[2]) == FILES
    else:
        # the Parquet sink's uninterrupted run is the session's shared local reference
        local = crash_reference.get(engine)
        spec = local.spec
        ref = (local.panes, local.late, local.dead)

    home = tmp_path / "crash"
    store = _setup(home, spec)
    env = _env(home, hdfs, f"{tag}-crash")
    ckpt = f"{env['TIDEMARK_CHECKPOINT_ROOT']}/{store}"
    st = WebHdfsStorage(hdfs.http)
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

    got = _results(spark, hdfs, f"{env['TIDEMARK_RESULTS_ROOT']}/{job}/{store}", engine)
    assert got[0] == ref[0], f"kills at {kills}"
    assert got[1:] == ref[1:]


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "native"])
def test_standalone_cluster_with_checkpoint_and_results_on_hdfs(
        spark: Any, hdfs: MiniHdfs, crash_reference: CrashReferences, tmp_path: Path,
        engine: bool) -> None:
    local = crash_reference.get(engine)  # the local-mode run, shared with the crash scenarios
    tag = "cl-engine" if engine else "cl-native"
    with standalone_cluster(tmp_path) as master:
        cluster = tmp_path / "cluster"
        store = _setup(cluster, local.spec)
        job_env = _env(cluster, hdfs, f"{tag}-cluster",
                       TIDEMARK_SPARK_MASTER=master)
        log = tmp_path / "cluster.log"
        run = _launch(job_env, JOB, log)
        assert run.wait(timeout=1200) == 0, log.read_text()[-3000:]
    assert executors_launched(tmp_path)
    assert not (cluster / "checkpoints").exists() and not (cluster / "results").exists()
    got = _results(spark, hdfs, f"{hdfs.url}/{tag}-cluster/results/{JOB}/{store}", False)
    assert got == (local.panes, local.late, local.dead)
