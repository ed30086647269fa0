"""Portable INSERT ... ON CONFLICT statements, built once and reused.

SQLite and PostgreSQL spell ``ON CONFLICT (...) DO NOTHING / DO UPDATE`` the same way, but
SQLAlchemy's dialect-specific ``insert().on_conflict_*`` constructs are not cacheable, so each
execution would compile the statement again -- most of ``record_batch``'s time on the hot path.
These helpers write the SQL once as typed ``text()`` (bind parameters carry the columns' types,
so e.g. UTC datetimes are still converted) and SQLAlchemy caches it like any other statement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Integer, Table, bindparam, text
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import TextualSelect


def _insert_head(table: Table) -> tuple[str, list[str]]:
    cols = [c.name for c in table.columns if not c.primary_key]
    sql = (
        f"INSERT INTO {table.name} ({', '.join(cols)}) "
        f"VALUES ({', '.join(':' + c for c in cols)}) "
    )
    return sql, cols


def _typed(sql: str, table: Table, cols: list[str]) -> TextClause:
    return text(sql).bindparams(*[bindparam(c, type_=table.c[c].type) for c in cols])


def insert_or_ignore(table: Table, conflict: Sequence[str]) -> TextualSelect:
    """Insert one row unless ``conflict`` columns collide; returns the new id (no row if not)."""
    head, cols = _insert_head(table)
    sql = head + f"ON CONFLICT ({', '.join(conflict)}) DO NOTHING RETURNING id"
    return _typed(sql, table, cols).columns(id=Integer)


def insert_many(
    session: Session, table: Table, cols: Sequence[str], rows: Sequence[Sequence[Any]],
    *, suffix: str = "",
) -> None:
    """``executemany`` of one INSERT straight through the driver, for hundreds of rows a batch.

    SQLAlchemy builds a parameter dict per row through several layers (measured: most of the
    time of a 500-row insert); here the columns' own bind processors (JSON, booleans, UTC
    datetimes) are applied directly and the driver gets tuples (SQLite), or all rows go as one
    JSON document into a single ``INSERT ... SELECT ... FROM json_to_recordset(...)``
    (PostgreSQL: one statement instead of one per row). ``suffix`` is appended to the statement
    (e.g. an ON CONFLICT clause written in the SQL both backends accept).
    """
    if not rows:
        return
    conn = session.connection()
    dialect = conn.dialect
    mark = "?" if dialect.paramstyle in ("qmark", "numeric") else "%s"
    quote = dialect.identifier_preparer.quote
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in cols)}) "
        f"VALUES ({', '.join([mark] * len(cols))}) {suffix}"
    )
    if dialect.name == "postgresql":
        _insert_many_pg(conn, table, cols, rows, suffix)
        return
    procs = [table.c[c].type.dialect_impl(dialect).bind_processor(dialect) for c in cols]
    if any(procs):
        out = [list(row) for row in rows]
        for i, proc in enumerate(procs):
            if proc is None:
                continue
            last_raw: Any = object()
            last_done: Any = None
            for row in out:
                value = row[i]
                if value is None:
                    continue
                if value is not last_raw:  # e.g. one timestamp for all rows: convert once
                    last_raw, last_done = value, proc(value)
                row[i] = last_done
        params = [tuple(row) for row in out]
    else:
        params = [tuple(row) for row in rows]
    conn.exec_driver_sql(sql, params)


def _insert_many_pg(
    conn: Any, table: Table, cols: Sequence[str], rows: Sequence[Sequence[Any]], suffix: str
) -> None:
    """PostgreSQL: the rows travel as ONE JSON document, unpacked by ``json_to_recordset``.

    One statement and one round trip instead of one per row, and no per-value quoting on the
    client (psycopg's text-format arrays escape every string with a regex, which cost more than
    the insert itself). Datetimes travel as ISO-8601 with offset, JSON columns as nested JSON.
    """
    dialect = conn.dialect
    quote = dialect.identifier_preparer.quote
    last_raw: Any = object()
    last_iso = ""

    def plain(value: Any) -> Any:
        nonlocal last_raw, last_iso
        if isinstance(value, datetime):
            if value is not last_raw:
                if value.tzinfo is None:
                    raise ValueError(f"naive datetime {value!r}: UTC-aware datetimes only")
                last_raw, last_iso = value, value.astimezone(UTC).isoformat()
            return last_iso
        return value

    doc = json.dumps(
        [{c: plain(v) for c, v in zip(cols, row, strict=True)} for row in rows],
        separators=(",", ":"),
    )
    spec = ", ".join(f"{quote(c)} {table.c[c].type.compile(dialect=dialect)}" for c in cols)
    names = ", ".join(quote(c) for c in cols)
    sql = (
        f"INSERT INTO {quote(table.name)} ({names}) "
        f"SELECT {names} FROM json_to_recordset(%s::json) AS x({spec}) {suffix}"
    )
    conn.exec_driver_sql(sql, (doc,))
