"""The same job, unchanged, on a real Spark standalone cluster: a master and two workers on
127.0.0.1 (pyspark's ``bin/spark-class``), checkpoints and sinks on a path every process shares.
Its results must equal a local-mode run's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import executors_launched, standalone_cluster

from .test_crash_recovery import ROOT, _env, _input, _launch, _results, _setup, _spec

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "native"])
def test_job_on_standalone_cluster_equals_local(tmp_path: Path, engine: bool) -> None:
    inp = tmp_path / "in"
    _input(inp)
    spec = _spec("clustered", inp, engine)

    local = tmp_path / "local"
    store = _setup(local, spec)
    proc = _launch(local, "clustered", tmp_path / "local.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "local.log").read_text()[-3000:]

    with standalone_cluster(tmp_path) as master:
        cluster = tmp_path / "cluster"
        _setup(cluster, spec)
        job_env = {**_env(cluster), "TIDEMARK_SPARK_MASTER": master}
        log = tmp_path / "cluster.log"
        job = subprocess.Popen(
            [sys.executable, "-m", "jobs.run", "clustered", "--until-idle",
             "--shuffle-partitions", "2"],
            env=job_env, cwd=str(ROOT), stdout=log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        assert job.wait(timeout=1200) == 0, log.read_text()[-3000:]
    assert executors_launched(tmp_path)
    ref = _results(local / "results" / "clustered" / store)
    got = _results(cluster / "results" / "clustered" / store)
    assert ref[0], "local run produced no panes"
    assert got == ref
