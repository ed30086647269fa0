"""The same job, unchanged, on a real Spark standalone cluster: a master and two workers on
127.0.0.1 (pyspark's ``bin/spark-class``), checkpoints and sinks on a path every process shares.
Its results must equal a local-mode run's (the session's shared uninterrupted run,
``tests/crash_reference.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from crash_reference import JOB, CrashReferences

from tests.cluster import executors_launched, standalone_cluster

from .test_crash_recovery import ROOT, _env, _results, _setup

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "native"])
def test_job_on_standalone_cluster_equals_local(
        tmp_path: Path, crash_reference: CrashReferences, engine: bool) -> None:
    local = crash_reference.get(engine)  # the local-mode run, shared with the crash scenarios

    with standalone_cluster(tmp_path) as master:
        cluster = tmp_path / "cluster"
        store = _setup(cluster, local.spec)
        job_env = {**_env(cluster), "TIDEMARK_SPARK_MASTER": master}
        log = tmp_path / "cluster.log"
        job = subprocess.Popen(
            [sys.executable, "-m", "jobs.run", JOB, "--until-idle",
             "--shuffle-partitions", "2"],
            env=job_env, cwd=str(ROOT), stdout=log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        assert job.wait(timeout=1200) == 0, log.read_text()[-3000:]
    assert executors_launched(tmp_path)
    assert store == local.store
    got = _results(cluster / "results" / JOB / store)
    assert got == (local.panes, local.late, local.dead)
