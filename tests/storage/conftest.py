"""Storage fixtures: one MiniDFSCluster, one S3 server and one local[2] Spark session per
test session (each is a JVM that costs tens of seconds to start)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from jobs.config import Settings
from jobs.storage.minihdfs import MiniHdfs, start, stop
from jobs.storage.s3server import S3Server
from jobs.storage.s3server import start as start_s3
from jobs.storage.s3server import stop as stop_s3


@pytest.fixture(scope="session")
def hdfs() -> Iterator[MiniHdfs]:
    cluster = start()
    yield cluster
    stop(cluster)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from jobs.spark.session import build_session

    settings = Settings.from_env({**os.environ, "TIDEMARK_SPARK_MASTER": "local[2]"})
    session = build_session(settings, app_name="tidemark-storage-tests", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """S3Proxy on a free port of 127.0.0.1, with one bucket; stopped at the end."""
    server = start_s3()
    yield server
    stop_s3(server)
