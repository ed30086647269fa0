"""Storage fixtures: one MiniDFSCluster, one S3 server and one local[2] Spark session per
test session (each is a JVM that costs tens of seconds to start), and the job runs on them
that more than one test reads (each test only reads what the run left)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.storage.minihdfs import MiniHdfs, start, stop
from jobs.storage.s3server import S3Server
from jobs.storage.s3server import start as start_s3
from jobs.storage.s3server import stop as stop_s3

from .hdfsjobs import HdfsRun, run_scores_on_hdfs
from .s3jobs import NATIVE_RESULTS, S3Run, run_scores_on_s3


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


@pytest.fixture(scope="session")
def s3_native_run(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> S3Run:
    """The scores job on the native path, Parquet sink, results on S3, run once through
    ``python -m jobs.run``: read by the S3 job test and the UI test on S3."""
    base: Path = tmp_path_factory.mktemp("s3-native")
    return run_scores_on_s3(s3, base, NATIVE_RESULTS)


@pytest.fixture(scope="session")
def hdfs_native_run(spark: Any, hdfs: MiniHdfs,
                    tmp_path_factory: pytest.TempPathFactory) -> HdfsRun:
    """The scores job on the native path, Parquet sink, checkpoint and results on HDFS, run
    once: read by the job test on HDFS and the UI test on HDFS."""
    return run_scores_on_hdfs(spark, hdfs, tmp_path_factory.mktemp("hdfs-native"), "native")


@pytest.fixture(scope="session")
def hdfs_delta_run(spark: Any, hdfs: MiniHdfs,
                   tmp_path_factory: pytest.TempPathFactory) -> HdfsRun:
    """The scores job on the native path, Delta sink, checkpoint and results on HDFS, run
    once: read by the Delta sink test and the UI test on HDFS."""
    return run_scores_on_hdfs(spark, hdfs, tmp_path_factory.mktemp("hdfs-delta"), "delta",
                              sink="delta")
