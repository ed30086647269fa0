"""A job reading Kafka on a real Spark standalone cluster (a master and two workers on
127.0.0.1): the connector's jars travel with the job to the executors (found in the workers'
application folders; nothing on the workers was installed for Kafka), and the results equal a
local-mode run's over the same topic."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.kafka.broker import KafkaBroker
from tests.kafka.conftest import create_topic
from tests.kafka.test_crash_recovery import _produce, _spec
from tests.spark.test_crash_recovery import ROOT, _env, _launch, _results, _setup
from tests.spark.test_standalone_cluster import SPARK_HOME, _free_port, _wait_port

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def test_kafka_job_on_standalone_cluster_equals_local(tmp_path: Path, broker: KafkaBroker) -> None:
    topic = create_topic(broker, partitions=2)
    _produce(broker, topic)
    spec = _spec("kclustered", broker, topic, engine=False)

    local = tmp_path / "local"
    store = _setup(local, spec)
    proc = _launch(local, "kclustered", tmp_path / "local.log")
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
            [sys.executable, "-m", "jobs.run", "kclustered", "--until-idle",
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
    shipped = {p.name for i in range(2) for p in (tmp_path / f"worker{i}").rglob("*.jar")}
    assert "spark-sql-kafka-0-10_2.13-4.2.0.jar" in shipped, sorted(shipped)
    assert any(n.startswith("kafka-clients-") for n in shipped)
    ref = _results(local / "results" / "kclustered" / store)
    got = _results(cluster / "results" / "kclustered" / store)
    assert ref[0], "local run produced no panes"
    assert got == ref
