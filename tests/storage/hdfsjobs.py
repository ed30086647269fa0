"""The HDFS job tests' settings and the native-path runs on the MiniDFSCluster that several
tests read (the Parquet run: the job test and the UI test on HDFS; the Delta run: the Delta sink
test and the UI test on HDFS): a Spark run on HDFS costs tens of seconds on a loaded machine,
and what it leaves there does not depend on which test looks at it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.catalog import Catalog
from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions
from jobs.storage.minihdfs import MiniHdfs
from tests.ui.helpers import PASSWORD

from .jobfiles import FILES, land


def hdfs_settings(hdfs: MiniHdfs, home: Path, name: str) -> Settings:
    """Checkpoint and results roots under ``/name`` on the cluster, WebHDFS for the Python side."""
    return Settings.from_env({
        **os.environ,
        "TIDEMARK_HOME": str(home),
        "TIDEMARK_CHECKPOINT_ROOT": f"{hdfs.url}/{name}/checkpoints",
        "TIDEMARK_RESULTS_ROOT": f"{hdfs.url}/{name}/results",
        "TIDEMARK_WEBHDFS_URL": hdfs.http,
        "TIDEMARK_SPARK_MASTER": "local[2]",
    })


def scores_spec(source: Path, sink: str) -> dict[str, Any]:
    return {
        "name": "scores",
        "source": {"kind": "files", "path": str(source), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
        "sink": {"kind": sink},
    }


@dataclass
class HdfsRun:
    """One finished run of the scores job with checkpoint and results under ``root`` on HDFS;
    its catalog (an admin, an editor and a viewer; the job saved by the editor) at ``db_url``."""

    home: Path
    db_url: str
    root: str
    ctx: JobContext
    runner: JobRunner
    exit_reason: str


def run_scores_on_hdfs(spark: Any, hdfs: MiniHdfs, base: Path, name: str, *,
                       sink: str = "parquet", engine: bool = False) -> HdfsRun:
    """Land :data:`FILES` under ``base``, create the catalog and run the job until idle
    (two key buckets, as a deployment's engine path would use) with its roots under ``name``."""
    land(base / "in", FILES)
    db_url = f"sqlite:///{base / 'catalog.db'}"
    spec = scores_spec(base / "in", sink)
    with Catalog(db_url, upgrade=True) as cat:
        cat.ensure_admin("admin", PASSWORD)
        cat.add_user("editor", PASSWORD, "editor", "admin")
        cat.add_user("viewer", PASSWORD, "viewer", "admin")
        store = cat.create_job(spec, "editor").store_name
    settings = hdfs_settings(hdfs, base / "home", name)
    ctx = JobContext.create(load_definition(spec), settings, store=store, force_engine=engine)
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True, buckets=2))
    reason = str(runner.run())
    return HdfsRun(base / "home", db_url, f"{hdfs.url}/{name}", ctx, runner, reason)
