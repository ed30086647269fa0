"""A single-node Apache Kafka broker in KRaft mode, for the tests and the demo.

The broker is the real one (``kafka.Kafka`` from the ``kafka-broker`` JVM bundle, see
``jobs/jvmdeps/``), run as a child JVM on 127.0.0.1 with its log directories under a folder the
caller owns (a test's temp dir, the demo's home). It is combined broker + controller with a
static one-voter quorum, so formatting the storage and starting the JVM is all it takes.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from jobs.kafka.errors import KafkaSetupError

BUNDLE = "kafka-broker"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _classpath() -> str:
    from jobs.jvmdeps import JvmDepsError, bundle_jars

    try:
        return os.pathsep.join(str(p) for p in bundle_jars(BUNDLE))
    except JvmDepsError as exc:
        raise KafkaSetupError(str(exc), "broker") from exc


def server_properties(home: Path, port: int, controller_port: int) -> str:
    """The KRaft configuration: one node, both roles, everything on 127.0.0.1."""
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={home / 'logs'}",
        "num.partitions=1",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        "log.retention.check.interval.ms=1000",
        "",
    ])


def new_cluster_id() -> str:
    """A random KRaft cluster id that never starts with '-'.

    The storage tool's argument parser reads an id such as '-Xk…' as an option and fails,
    so, like Kafka's own ``Uuid.randomUuid``, draw again until the first character is safe.
    """
    while True:
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster.startswith("-"):
            return cluster


@dataclass
class KafkaBroker:
    """``with KafkaBroker(home) as b: b.bootstrap`` starts and stops one broker.

    ``port`` 0 picks a free port. The storage is formatted once: a second broker on the same
    ``home`` (the demo's next start) keeps its topics and offsets.
    """

    home: Path
    port: int = 0
    heap: str = "256m"
    start_timeout: float = 90.0
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _java(self, main: str, *args: str, log: Path | None = None) -> list[str]:
        return [
            "java", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-Xshare:auto",
            "-Djava.awt.headless=true", f"-Dkafka.logs.dir={self.home / 'server-logs'}",
            "-cp", _classpath(), main, *args,
        ]

    def start(self) -> KafkaBroker:
        self.home = Path(self.home).absolute()
        self.home.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = free_port()
        cfg = self.home / "server.properties"
        cfg.write_text(server_properties(self.home, self.port, free_port()))
        if not (self.home / "logs" / "meta.properties").exists():
            cluster = new_cluster_id()
            fmt = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(cfg)),
                capture_output=True, text=True, timeout=120,
            )
            if fmt.returncode != 0:
                raise KafkaSetupError(
                    f"formatting the broker storage failed: {fmt.stdout[-2000:]}{fmt.stderr[-2000:]}",
                    "broker")
        log = (self.home / "broker.log").open("ab")
        self.proc = subprocess.Popen(
            self._java("kafka.Kafka", str(cfg)), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self.start_timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise KafkaSetupError(
                    f"the broker exited with {self.proc.returncode}; see {self.home / 'broker.log'}",
                    "broker")
            try:
                md = admin.list_topics(timeout=2)
                if md.brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.5)
        self.stop()
        raise KafkaSetupError(
            f"the broker did not answer on {self.bootstrap} within {self.start_timeout:.0f} s; "
            f"see {self.home / 'broker.log'}", "broker")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after ``timeout``."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
