"""Engines and sessions: the connection settings that let several processes share the catalog.

SQLite is the default and is shared by the UI, the Spark job and the DAGs at once, so every
connection gets WAL (readers never block the writer), a busy timeout (writers queue instead of
failing), foreign keys (off by default in SQLite) and ``synchronous=NORMAL`` (safe with WAL, and
a commit no longer waits for an fsync of the main file). Python's sqlite3 module would begin
transactions lazily as DEFERRED, and a deferred transaction that reads, then writes, fails at
once with "database is locked" when another writer got in between -- the busy timeout does not
apply to that upgrade. So the driver's own transaction handling is switched off and write
sessions begin with ``BEGIN IMMEDIATE`` (take the write lock up front, waiting up to the busy
timeout), read sessions with a plain ``BEGIN``.

Immutability of audit events and definition versions is enforced here for the ORM (a clear
:class:`CatalogError`) and by triggers in the migrations for everything else.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

from jobs.catalog.errors import CatalogError
from jobs.catalog.models import AuditEventRow, DefinitionVersion

SQLITE_BUSY_TIMEOUT_MS = 30_000
WRITE_OPTION = "tidemark_write"


def make_db_engine(url: str, **kwargs: Any) -> Engine:
    """A SQLAlchemy engine for ``url`` with tidemark's connection settings applied (named apart
    from ``jobs.engine.make_engine``, the windowing engine)."""
    if url.startswith("sqlite"):
        connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        _configure_sqlite(engine)
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return create_engine(url, pool_pre_ping=True, **kwargs)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (see module doc)
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def make_sessionmakers(engine: Engine) -> tuple[sessionmaker[Session], sessionmaker[Session]]:
    """(read sessions, write sessions). Write sessions take SQLite's write lock at BEGIN."""
    read = sessionmaker(engine, expire_on_commit=False)
    write = sessionmaker(
        engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False
    )
    for maker in (read, write):
        event.listen(maker, "do_orm_execute", _refuse_bulk)
    return read, write


# ---------------------------------------------------------------- immutability guards

_IMMUTABLE = {
    AuditEventRow: "audit events are append-only",
    DefinitionVersion: "definition versions are immutable",
}


def _refuse(_mapper: Any, _connection: Any, target: Any) -> None:
    raise CatalogError(f"{_IMMUTABLE[type(target)]} (id {target.id})", code="immutable")


for _cls in _IMMUTABLE:
    event.listen(_cls, "before_update", _refuse)
    event.listen(_cls, "before_delete", _refuse)


def _refuse_bulk(state: ORMExecuteState) -> None:
    if not (state.is_update or state.is_delete):
        return
    for mapper in state.all_mappers:
        cls = mapper.class_
        if cls in _IMMUTABLE:
            raise CatalogError(_IMMUTABLE[cls], code="immutable")
