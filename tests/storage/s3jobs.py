"""The S3 job tests' scores job and its runs through the real entry point (``python -m
jobs.run``), plus the one native-path Parquet run that several tests read: a run is a fresh
driver JVM (tens of seconds on a loaded machine), and what it leaves on S3 does not depend on
which test looks at it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.catalog import Catalog
from jobs.storage.s3server import BUCKET, S3Server
from tests.ui.helpers import PASSWORD

from .jobfiles import FILES, land

ROOT = Path(__file__).resolve().parents[2]


def spec(source: Path, *, engine: bool = False, sink: str = "parquet") -> dict[str, Any]:
    """The storage tests' scores job; ``engine`` adds a ``last`` aggregation, which only the
    engine path computes (the totals and counts stay those of :data:`FINAL_PANES`)."""
    aggs: list[dict[str, Any]] = [{"name": "total", "fn": "sum", "of": "score"},
                                  {"name": "n", "fn": "count"}]
    if engine:
        aggs.append({"name": "last_score", "fn": "last", "of": "score"})
    return {
        "name": "scores",
        "source": {"kind": "files", "path": str(source), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": aggs,
        "sink": {"kind": sink},
    }


def catalog(home: Path, job: dict[str, Any]) -> str:
    home.mkdir(parents=True, exist_ok=True)
    with Catalog(f"sqlite:///{home / 'catalog.db'}", upgrade=True) as cat:
        return cat.create_job(job, actor="test").store_name


def run_job(s3: S3Server, home: Path, log: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m jobs.run scores --until-idle`` with the server's settings and credentials
    in its environment (the credentials only there: never in the definition or catalog)."""
    full = {**os.environ, **s3.env(), "TIDEMARK_HOME": str(home), "PYTHONPATH": str(ROOT),
            "TIDEMARK_SPARK_MASTER": "local[2]", **env}
    for var in ("TIDEMARK_DB_URL", "TIDEMARK_LAUNCHED", "TIDEMARK_CONFIG"):
        full.pop(var, None)
    proc = subprocess.run(
        [sys.executable, "-m", "jobs.run", "scores", "--until-idle", "--shuffle-partitions", "2"],
        env=full, cwd=str(ROOT), capture_output=True, text=True, timeout=1200)
    log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return proc


@dataclass(frozen=True)
class S3Run:
    """One finished ``jobs.run`` of the scores job with its results root on S3: its home (the
    catalog file, with an admin, an editor and a viewer, lives there), store and process."""

    home: Path
    db_url: str
    store: str
    results: str
    proc: subprocess.CompletedProcess[str]


def run_scores_on_s3(s3: S3Server, base: Path, results: str, *, engine: bool = False,
                     sink: str = "parquet") -> S3Run:
    """Land :data:`FILES` under ``base``, create the catalog (users and the job, saved by the
    editor) and run the job once with its results under ``results``."""
    land(base / "in", FILES)
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    db_url = f"sqlite:///{home / 'catalog.db'}"
    with Catalog(db_url, upgrade=True) as cat:
        cat.ensure_admin("admin", PASSWORD)
        cat.add_user("editor", PASSWORD, "editor", "admin")
        cat.add_user("viewer", PASSWORD, "viewer", "admin")
        store = cat.create_job(spec(base / "in", engine=engine, sink=sink), "editor").store_name
    proc = run_job(s3, home, base / "job.log", TIDEMARK_RESULTS_ROOT=results)
    return S3Run(home, db_url, store, results, proc)


NATIVE_RESULTS = f"s3a://{BUCKET}/native/results"
"""Where the suite's shared native-path Parquet run keeps its results."""
