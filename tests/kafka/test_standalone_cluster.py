"""A job reading Kafka on a real Spark standalone cluster (a master and two workers on
127.0.0.1): the connector's jars travel with the job to the executors (found in the workers'
application folders; nothing on the workers was installed for Kafka), and the results equal a
local-mode run's over the same topic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobs.kafka.broker import KafkaBroker
from tests.cluster import standalone_cluster
from tests.kafka.conftest import create_topic
from tests.kafka.test_crash_recovery import _produce, _spec
from tests.spark.test_crash_recovery import ROOT, _env, _launch, _results, _setup

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def test_kafka_job_on_standalone_cluster_equals_local(tmp_path: Path, broker: KafkaBroker) -> None:
    topic = create_topic(broker, partitions=2)
    _produce(broker, topic)
    spec = _spec("kclustered", broker, topic, engine=False)

    local = tmp_path / "local"
    store = _setup(local, spec)
    proc = _launch(local, "kclustered", tmp_path / "local.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "local.log").read_text()[-3000:]

    with standalone_cluster(tmp_path) as master:
        cluster = tmp_path / "cluster"
        _setup(cluster, spec)
        job_env = {**_env(cluster), "TIDEMARK_SPARK_MASTER": master}
        log = tmp_path / "cluster.log"
        job = subprocess.Popen(
            [sys.executable, "-m", "jobs.run", "kclustered", "--until-idle",
             "--shuffle-partitions", "2"],
            env=job_env, cwd=str(ROOT), stdout=log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        assert job.wait(timeout=1200) == 0, log.read_text()[-3000:]
    shipped = {p.name for i in range(2) for p in (tmp_path / f"worker{i}").rglob("*.jar")}
    assert "spark-sql-kafka-0-10_2.13-4.2.0.jar" in shipped, sorted(shipped)
    assert any(n.startswith("kafka-clients-") for n in shipped)
    ref = _results(local / "results" / "kclustered" / store)
    got = _results(cluster / "results" / "kclustered" / store)
    assert ref[0], "local run produced no panes"
    assert got == ref
