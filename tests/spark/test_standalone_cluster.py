"""The same job, unchanged, on a real Spark standalone cluster: a master and two workers on
127.0.0.1 (pyspark's ``bin/spark-class``), checkpoints and sinks on a path every process shares.
Its results must equal a local-mode run's."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from .test_crash_recovery import ROOT, _env, _input, _launch, _results, _setup, _spec

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

SPARK_HOME = Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


@pytest.mark.parametrize("engine", [True, False], ids=["engine", "native"])
def test_job_on_standalone_cluster_equals_local(tmp_path: Path, engine: bool) -> None:
    inp = tmp_path / "in"
    _input(inp)
    spec = _spec("clustered", inp, engine)

    local = tmp_path / "local"
    store = _setup(local, spec)
    proc = _launch(local, "clustered", tmp_path / "local.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "local.log").read_text()[-3000:]

    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = _free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(_free_port())],
            env=env, stdout=(tmp_path / "master.log").open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True))
        _wait_port(port)
        for i in range(2):
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker",
                 f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(_free_port()),
                 "--work-dir", str(tmp_path / f"worker{i}")],
                env=env, stdout=(tmp_path / f"worker{i}.log").open("wb"),
                stderr=subprocess.STDOUT, start_new_session=True))
        time.sleep(5)
        cluster = tmp_path / "cluster"
        _setup(cluster, spec)
        job_env = {**_env(cluster), "TIDEMARK_SPARK_MASTER": f"spark://127.0.0.1:{port}"}
        log = tmp_path / "cluster.log"
        job = subprocess.Popen(
            [sys.executable, "-m", "jobs.run", "clustered", "--until-idle",
             "--shuffle-partitions", "2"],
            env=job_env, cwd=str(ROOT), stdout=log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        assert job.wait(timeout=1200) == 0, log.read_text()[-3000:]
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    worker_logs = "".join((tmp_path / f"worker{i}.log").read_text() for i in range(2))
    assert "Launching executor" in worker_logs or "Asked to launch executor" in worker_logs
    ref = _results(local / "results" / "clustered" / store)
    got = _results(cluster / "results" / "clustered" / store)
    assert ref[0], "local run produced no panes"
    assert got == ref
