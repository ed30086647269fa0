"""A real Spark standalone cluster for the tests: a master and two one-core workers on
127.0.0.1, started from pyspark's own ``bin/spark-class`` and stopped (process groups) on exit."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[1]
SPARK_HOME = Path(pyspark.__file__).parent
WORKERS = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


@contextlib.contextmanager
def standalone_cluster(tmp_path: Path) -> Iterator[str]:
    """Yields the master URL; logs in ``tmp_path/master.log`` and ``worker<i>.log``, each
    worker's application folders (where shipped jars land) under ``tmp_path/worker<i>``."""
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(free_port())],
            env=env, stdout=(tmp_path / "master.log").open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True))
        wait_port(port)
        for i in range(WORKERS):
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker",
                 f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(free_port()),
                 "--work-dir", str(tmp_path / f"worker{i}")],
                env=env, stdout=(tmp_path / f"worker{i}.log").open("wb"),
                stderr=subprocess.STDOUT, start_new_session=True))
        time.sleep(5)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def executors_launched(tmp_path: Path) -> bool:
    logs = "".join((tmp_path / f"worker{i}.log").read_text() for i in range(WORKERS))
    return "Launching executor" in logs or "Asked to launch executor" in logs
