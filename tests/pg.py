"""A throwaway PostgreSQL server for tests and benchmarks (initdb + pg_ctl in a temp dir).

Usage in a conftest (the tests/ folder is on sys.path, so ``import pg`` works everywhere)::

    from pg import pg_server  # noqa: F401  (session-scoped fixture -> PgServer)

    def test_x(pg_server):
        url = pg_server.create_database("mytest")   # postgresql+psycopg://... URL

or directly: ``with start_pg() as server: ...``. The server listens on 127.0.0.1 on a free port
with trust authentication, keeps everything (data, socket, log) in one temporary directory and
is stopped and deleted at the end. PostgreSQL refuses to run as root, so when the tests run as
root the server runs as the ``postgres`` system user (or ``nobody``) through ``runuser``.
Tests that need it skip when no server binaries are installed (``make system-deps`` installs
them); mark them ``postgres``.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def find_pg_bin(name: str) -> str | None:
    """Path of a PostgreSQL server binary (PATH first, then Debian's versioned dirs)."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


def pg_available() -> bool:
    return find_pg_bin("initdb") is not None and find_pg_bin("pg_ctl") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _server_user() -> str | None:
    """The user to run the server as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


@dataclass
class PgServer:
    base: Path
    port: int
    run_as: str | None
    superuser: str = "postgres"
    _databases: list[str] = field(default_factory=list)
    _stopped: bool = False

    @property
    def datadir(self) -> Path:
        return self.base / "data"

    @property
    def log_path(self) -> Path:
        return self.base / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.superuser}@127.0.0.1:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.superuser, dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create database ``name`` (optionally as a copy of ``template``); returns its URL."""
        tmpl = f" TEMPLATE {template}" if template else ""
        self._admin(f'CREATE DATABASE "{name}"{tmpl}')
        self._databases.append(name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        _run_pg(self.run_as, [_need("pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w", "stop"],
                check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def _need(name: str) -> str:
    path = find_pg_bin(name)
    if path is None:
        raise RuntimeError(f"PostgreSQL server binary {name!r} not found (make system-deps)")
    return path


def _run_pg(run_as: str | None, argv: list[str], *, check: bool = True) -> None:
    if run_as is not None:
        argv = ["runuser", "-u", run_as, "--", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd="/")
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")


def start_pg_server(*, fsync: bool = False, base: Path | None = None) -> PgServer:
    """initdb + start a server; the caller must call ``stop()`` (also done at exit).

    ``fsync=False`` (tests) trades crash safety, which a throwaway server does not need, for
    speed; benchmarks pass ``fsync=True`` to measure what a real installation would see.
    """
    run_as = _server_user()
    base = Path(tempfile.mkdtemp(prefix="tidemark-pg-")) if base is None else base
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(base, entry.pw_uid, entry.pw_gid)
        base.chmod(0o700)
    server = PgServer(base=base, port=_free_port(), run_as=run_as)
    _run_pg(run_as, [_need("initdb"), "-D", str(server.datadir), "-U", server.superuser,
                     "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
    options = (
        f"-p {server.port} -k {base} -c listen_addresses=127.0.0.1 "
        "-c shared_buffers=32MB -c max_connections=60"
    )
    if not fsync:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    atexit.register(server.stop)
    _run_pg(run_as, [_need("pg_ctl"), "-D", str(server.datadir), "-o", options,
                     "-l", str(server.log_path), "-w", "-t", "60", "start"])
    return server


@contextlib.contextmanager
def start_pg(*, fsync: bool = False) -> Iterator[PgServer]:
    server = start_pg_server(fsync=fsync)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL 15 server for the whole test session (skips if not installed)."""
    if not pg_available():
        pytest.skip("PostgreSQL server binaries not installed (make system-deps)")
    with start_pg() as server:
        yield server
