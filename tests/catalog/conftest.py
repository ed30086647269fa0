"""Fixtures: every catalog test runs against SQLite (a temp file) and PostgreSQL 15 (a real
server started by tests/pg.py), each test on a fresh database migrated by Alembic.

Migrating per test would dominate the run time, so each backend is migrated once into a
template (a SQLite file that is copied; a PostgreSQL template database that is cloned with
``CREATE DATABASE ... TEMPLATE``).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pg import PgServer

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema
from jobs.timeutil import ManualClock

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
_counter = itertools.count()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("catalog-template") / "template.db"
    catalog_schema.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_template(pg_server: PgServer) -> str:  # noqa: F811
    name = "tidemark_template"
    catalog_schema.upgrade(pg_server.create_database(name))
    return name


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of a fresh, migrated catalog database on each backend."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "catalog.db"
        shutil.copyfile(template, path)
        yield f"sqlite:///{path}"
        return
    server: PgServer = request.getfixturevalue("pg_server")
    template_name: str = request.getfixturevalue("pg_template")
    name = f"t{next(_counter)}"
    url = server.create_database(name, template=template_name)
    yield url
    server.drop_database(name)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_MS)


@pytest.fixture
def open_catalog(catalog_url: str, clock: ManualClock) -> Iterator[Callable[[], Catalog]]:
    """Open further Catalog instances on the same database (other processes' view)."""
    opened: list[Catalog] = []

    def _open() -> Catalog:
        cat = Catalog(catalog_url, clock=clock)
        opened.append(cat)
        return cat

    yield _open
    for cat in opened:
        cat.close()


@pytest.fixture
def catalog(open_catalog: Callable[[], Catalog]) -> Catalog:
    return open_catalog()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of an empty database (no schema) on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    server: PgServer = request.getfixturevalue("pg_server")
    name = f"e{next(_counter)}"
    url = server.create_database(name)
    yield url
    server.drop_database(name)
