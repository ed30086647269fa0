"""Where the UI gets its catalog, and the first-run admin.

The catalog is opened once per server process (``st.cache_resource``) for the database URL in
effect: Streamlit reruns page scripts on every interaction, and opening a SQLAlchemy engine each
time would leak connection pools. The URL is part of the cache key so a test that points
``TIDEMARK_DB_URL`` at a fresh file gets a fresh catalog rather than a stale one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import streamlit as st

from jobs.catalog import Catalog
from jobs.catalog.ports import UICatalog
from jobs.config import Settings

FIRST_ADMIN = "admin"
"""Name of the administrator created on first run of an embedded (default) catalog."""

LOCAL_ADDRESSES = frozenset({"127.0.0.1", "localhost", "::1"})


def settings() -> Settings:
    return Settings.from_env()


@st.cache_resource(show_spinner=False)
def _open_catalog(db_url: str, upgrade: bool) -> Catalog:
    return Catalog(db_url, upgrade=upgrade)


def catalog() -> UICatalog:
    """The catalog for the current ``TIDEMARK_DB_URL`` (or the embedded default).

    Only the embedded default is brought to the head schema revision here, so a fresh checkout
    just works; a configured (shared) catalog is never upgraded by a UI process -- that is an
    operator's ``tidemark db upgrade`` -- and an out-of-date one is reported on the page.
    """
    return _open_catalog(settings().db_url, uses_embedded_catalog())


def uses_embedded_catalog(env: dict[str, str] | None = None) -> bool:
    """True when no catalog URL was configured (variable or settings file), i.e. the SQLite
    file under TIDEMARK_HOME."""
    s = Settings.from_env(env)
    return "db_url" not in s.sources or not s.db_url


def server_address() -> str:
    """The address the Streamlit server is bound to ("" when unknown, e.g. under AppTest)."""
    try:
        value = st.get_option("server.address")
    except Exception:  # option missing in a bare script run
        return ""
    return str(value or "")


def first_run_admin_file(home: Path) -> Path:
    return home / "first-run-admin.txt"


def ensure_first_run_admin(cat: UICatalog, home: Path, address: str) -> Path | None:
    """Create the first administrator of an embedded catalog served only on loopback.

    Why only then: a fresh embedded catalog has no users, so nobody could log in; but creating
    a known account on a catalog reachable from the network (or on a shared PostgreSQL) would
    be a back door. The password is ``TIDEMARK_ADMIN_PASSWORD`` if set, else random, and is
    written to ``<home>/first-run-admin.txt`` (mode 0600) -- never shown in the page itself.
    Returns that file when an admin was created, else None.
    """
    if address not in LOCAL_ADDRESSES:
        return None
    password = Settings.from_env().value("TIDEMARK_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
    if not cat.ensure_admin(FIRST_ADMIN, password):
        return None
    path = first_run_admin_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"user: {FIRST_ADMIN}\npassword: {password}\n")
    return path
