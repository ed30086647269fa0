"""A real HDFS for the tests and the benchmark: Hadoop's MiniDFSCluster (one NameNode, one
DataNode) in a JVM started on free ports on 127.0.0.1 and stopped by its caller
(``MiniHdfs.java``, run by the JDK's source launcher against the ``hdfs-minicluster`` bundle and
pyspark's Hadoop client jars). Not for production: one DataNode, no security."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from jobs.storage.errors import StorageError

START_TIMEOUT_S = 900.0
"""A NameNode and DataNode start in ~20 s on an idle machine, minutes on 2 busy cores."""


@dataclass(frozen=True)
class MiniHdfs:
    url: str
    """``hdfs://127.0.0.1:<port>`` (the NameNode's RPC address)."""
    http: str
    """``http://127.0.0.1:<port>`` (the NameNode's HTTP address: WebHDFS)."""
    process: subprocess.Popen[bytes]
    base: Path


def java() -> str:
    from jobs.jvmdeps.jdk import jdk_tool

    found = jdk_tool("java")
    if found is None:
        raise StorageError("no java on PATH or under JAVA_HOME")
    return found


def classpath() -> str:
    import pyspark

    from jobs.jvmdeps import bundle_jars

    jars = [str(j) for j in bundle_jars("hdfs-minicluster")]
    return ":".join([*jars, str(Path(pyspark.__file__).parent / "jars" / "*")])


def start() -> MiniHdfs:
    base = Path(tempfile.mkdtemp(prefix="tidemark-hdfs-"))
    ready = base / "ready"
    log = (base / "minihdfs.log").open("wb")
    proc = subprocess.Popen(
        [java(), "-Xmx512m", "-cp", classpath(), str(Path(__file__).with_name("MiniHdfs.java")),
         str(base / "data"), str(ready)],
        stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.exists():
        if proc.poll() is not None:
            raise StorageError(f"MiniDFSCluster exited ({proc.returncode}); log: "
                               f"{(base / 'minihdfs.log').read_text()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise StorageError(f"MiniDFSCluster not ready after {START_TIMEOUT_S:.0f} s")
        time.sleep(0.5)
    url, http = ready.read_text().split()
    return MiniHdfs(url=url, http=http, process=proc, base=base)


def stop(cluster: MiniHdfs) -> None:
    assert cluster.process.stdin is not None
    cluster.process.stdin.close()  # MiniHdfs.java shuts the cluster down when stdin closes
    try:
        cluster.process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        cluster.process.kill()
        cluster.process.wait()
    shutil.rmtree(cluster.base, ignore_errors=True)
