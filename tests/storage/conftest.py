"""Storage fixtures: one MiniDFSCluster and one local[2] Spark session per
test session (each is a JVM that costs tens of seconds to start)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from jobs.config import Settings
from jobs.storage.minihdfs import MiniHdfs, start, stop


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
