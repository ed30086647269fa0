"""Airflow test set-up: an isolated AIRFLOW_HOME with a SQLite metadata DB, configured through
the environment *before* anything imports airflow (its configuration is read at import).

The DAG tasks run in this process under ``dag.test()``; they find the tidemark catalog through
``TIDEMARK_DB_URL`` and launch ``tests/lifecycle/fake_job.py`` through ``TIDEMARK_JOB_COMMAND``
(no Spark here), with the policy numbers from ``TIDEMARK_<FIELD>``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from dags_support import DAGS, FAKE

_home = Path(tempfile.mkdtemp(prefix="tidemark-airflow-test-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(_home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_home / 'airflow.db'}",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "TIDEMARK_JOB_COMMAND": json.dumps([sys.executable, str(FAKE), "{job}", "--version", "{version}"]),
        "TIDEMARK_STOP_TIMEOUT_MS": "3000",
        "TIDEMARK_MIGRATION_POLL_S": "0.2",
        "TIDEMARK_MIGRATION_TIMEOUT_S": "120",
    }
)


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[Path]:
    from airflow.utils import db

    db.resetdb()
    yield _home
    shutil.rmtree(_home, ignore_errors=True)


@pytest.fixture(scope="session")
def catalog_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from jobs.catalog import schema as catalog_schema

    path = tmp_path_factory.mktemp("dags-catalog") / "template.db"
    catalog_schema.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def tidemark_env(
    catalog_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A fresh tidemark catalog + home for one test, visible to the DAG tasks via env."""
    db = tmp_path / "catalog.db"
    shutil.copyfile(catalog_template, db)
    url = f"sqlite:///{db}"
    monkeypatch.setenv("TIDEMARK_DB_URL", url)
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    yield url
    from jobs.catalog import Catalog
    from jobs.lifecycle.process import ProcessControl

    pc = ProcessControl()
    with Catalog(url) as cat:
        for job in cat.jobs():
            for pid in pc.job_processes(job.name, url):
                pc.kill(pid, job.name, pc.host)
