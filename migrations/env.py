"""Alembic environment for the tidemark catalog.

Configured programmatically by :mod:`jobs.catalog.schema` (no alembic.ini): the database URL
comes from ``config.attributes["url"]`` (or ``TIDEMARK_DB_URL`` / the default SQLite file), and
an open connection may be handed in as ``config.attributes["connection"]``. SQLite gets batch
mode, because it can only ALTER a table by copying it.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from jobs.catalog.db import make_db_engine
from jobs.catalog.models import Base
from jobs.config import Settings

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.attributes.get("url")
    return str(url) if url else Settings.from_env().db_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=_url().startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_db_engine(_url())
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
