"""Alembic, configured from code: the catalog schema exists only through its revisions.

There is no alembic.ini: :func:`alembic_config` points Alembic at the repository's
``migrations/`` folder and passes the URL through ``Config.attributes`` (so a password with a
``%`` in it does not trip ConfigParser interpolation). ``tidemark db upgrade`` and
``Catalog(upgrade=True)`` call :func:`upgrade`; :func:`schema_diffs` is ``alembic check`` as a
function (models versus the upgraded schema).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from jobs.catalog.db import make_db_engine
from jobs.catalog.models import Base

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url
    return cfg


@functools.cache
def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None, f"no Alembic revisions in {MIGRATIONS_DIR}"
    return head


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def current_revision(url: str | Engine) -> str | None:
    engine = make_db_engine(url) if isinstance(url, str) else url
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        if isinstance(url, str):
            engine.dispose()


def schema_diffs(url: str) -> list[Any]:
    """Differences between the ORM models and the database at its schema revision (empty = in
    sync)."""
    engine = make_db_engine(url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diffs: list[Any] = compare_metadata(ctx, Base.metadata)
            return diffs
    finally:
        engine.dispose()
