"""A location that is malformed or unreachable stops the job with one error naming the
setting it came from, before any batch runs."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.spark.context import JobContext
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.runner import JobRunner, RunOptions

from .jobfiles import FILES, land, scores

pytestmark = pytest.mark.spark


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_bad_sink_path_names_the_field(tmp_path: Path) -> None:
    settings = Settings.from_env({"TIDEMARK_HOME": str(tmp_path)})
    defn = scores(tmp_path / "in", sink={"kind": "parquet", "path": "s3://bucket/out"})
    with pytest.raises(SparkRuntimeError) as err:
        JobContext.create(defn, settings)
    assert str(err.value).startswith("sink.path: ") and "s3a://" in str(err.value)


def test_an_unreachable_filesystem_fails_before_any_batch(spark: Any, tmp_path: Path) -> None:
    land(tmp_path / "in", FILES)
    config = tmp_path / "tidemark.toml"
    config.write_text(
        f'checkpoint_root = "hdfs://127.0.0.1:{_closed_port()}/tidemark/ck"\n', encoding="utf-8")
    settings = Settings.from_env({"TIDEMARK_HOME": str(tmp_path / "home"),
                                  "TIDEMARK_CONFIG": str(config)})
    runner = JobRunner(spark, JobContext.create(scores(tmp_path / "in"), settings),
                       RunOptions(until_idle=True))
    with pytest.raises(SparkRuntimeError) as err:
        runner.run()
    text = str(err.value)
    assert text.startswith(f"{config}: checkpoint_root: hdfs://127.0.0.1:"), text
    assert "not reachable" in text and "\n" not in text
    assert runner.query is None and runner.reports == []

    # the results root is checked the same way (the checkpoint root is fine this time)
    settings = Settings.from_env({
        "TIDEMARK_HOME": str(tmp_path / "home"),
        "TIDEMARK_RESULTS_ROOT": f"hdfs://127.0.0.1:{_closed_port()}/tidemark/results"})
    runner = JobRunner(spark, JobContext.create(scores(tmp_path / "in"), settings),
                       RunOptions(until_idle=True))
    with pytest.raises(SparkRuntimeError, match="^TIDEMARK_RESULTS_ROOT: .*not reachable"):
        runner.run()
    assert runner.query is None
