"""Fixtures of the CLI tests: a real SQLite catalog migrated once per session, copied per test,
and a way to run ``tidemark`` as a user does (a subprocess) or in-process (``main``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs.catalog import schema as catalog_schema

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def catalog_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-catalog") / "template.db"
    catalog_schema.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def db_url(catalog_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = tmp_path / "catalog.db"
    shutil.copyfile(catalog_template, path)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("TIDEMARK_DB_URL", url)
    monkeypatch.delenv("TIDEMARK_USER", raising=False)
    monkeypatch.delenv("TIDEMARK_LOG_LEVEL", raising=False)
    return url


Shell = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def tidemark(db_url: str, tmp_path: Path) -> Shell:
    """``tidemark ARGS`` in a child process, with this test's catalog and home."""

    def run(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, TIDEMARK_DB_URL=db_url, TIDEMARK_HOME=str(tmp_path / "home"))
        return subprocess.run(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "jobs", *argv], input=stdin, capture_output=True, text=True,
            env=env, cwd=ROOT, timeout=120, check=False,
        )

    return run
