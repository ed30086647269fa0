"""One logging configuration for every tidemark process, and the rotation of job logs.

Every process calls :func:`configure_logging` once, first thing: the CLI (``tidemark
--log-level``), the job runner (``python -m jobs.run``), the UI (``ui/app.py``) and the Airflow
tasks (``jobs.lifecycle.tasks``). The level comes from the argument, else ``TIDEMARK_LOG_LEVEL``,
else ``INFO``; every line reads ``2026-11-25T15:04:05Z INFO jobs.lifecycle.reconcile: ...``
(UTC, 24-hour, as everywhere else in tidemark).

Inside an Airflow task, Airflow owns the handlers (they write the task log the UI shows), so
there only the level of tidemark's own loggers (``jobs.*``) is set and records propagate to
Airflow's handlers; everywhere else one stderr handler is installed on the root logger.

A job's stdout and stderr go to a file the supervisor opens for it (``<home>/logs/<job>/``); a
job runs for days, so :func:`rotate_job_logs` (called on every supervisor pass) rotates a file
past ``TIDEMARK_LOG_MAX_BYTES`` by copy-and-truncate -- the job keeps writing to the same open
file (opened for appending, so it continues at the new end) -- keeps ``TIDEMARK_LOG_BACKUPS``
rotated copies, and deletes the oldest launch logs of a job beyond ``TIDEMARK_LOG_KEEP``.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

Process = Literal["cli", "job", "ui", "airflow-task", "demo"]

LEVEL_ENV = "TIDEMARK_LOG_LEVEL"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_HANDLER_NAME = "tidemark"
# libraries that are chatty at INFO and say nothing a tidemark operator acts on
_QUIET = ("py4j", "alembic", "urllib3", "watchdog")


class LogSetupError(ValueError):
    """A log level or rotation setting that cannot be used; the message names the setting."""


def parse_level(value: str | None, *, setting: str = LEVEL_ENV) -> int:
    """The ``logging`` level of ``value`` (a name in :data:`LEVELS`, any case); INFO if unset."""
    if value is None or not value.strip():
        return logging.INFO
    name = value.strip().upper()
    if name not in LEVELS:
        raise LogSetupError(f"{setting}: {value!r} is not one of {', '.join(LEVELS)}")
    return int(logging.getLevelName(name))


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (a test's capture, or a
    stream redirected after the configuration), never to a stream closed since."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def settings_values() -> Mapping[str, str]:
    """tidemark's settings (file and environment) by variable name: what ``env=None`` reads."""
    from jobs.config import Settings

    return Settings.from_env().values


def _formatter() -> logging.Formatter:
    formatter = logging.Formatter(FORMAT, DATE_FORMAT)
    formatter.converter = time.gmtime  # UTC, matching the Z in DATE_FORMAT
    return formatter


def configure_logging(
    process: Process,
    level: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> int:
    """Configure logging for ``process``; returns the level set. Safe to call more than once."""
    e = settings_values() if env is None else env
    lvl = parse_level(level) if level else parse_level(e.get(LEVEL_ENV))
    logging.getLogger("jobs").setLevel(lvl)
    if process == "airflow-task":  # Airflow's handlers write the task log; add none of ours
        return lvl
    root = logging.getLogger()
    for h in list(root.handlers):
        if h.get_name() == _HANDLER_NAME:
            root.removeHandler(h)
    handler: logging.Handler = _StderrHandler() if stream is None else logging.StreamHandler(stream)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(_formatter())
    root.addHandler(handler)
    root.setLevel(lvl)
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(lvl, logging.WARNING))
    logging.captureWarnings(True)
    return lvl


# ---------------------------------------------------------------- job log rotation


@dataclass(frozen=True)
class Rotation:
    """How job logs are kept: rotate a file past ``max_bytes``, keep ``backups`` rotated copies
    of it, and keep the ``keep`` newest launch logs of each job."""

    max_bytes: int = 50 * 1024 * 1024
    backups: int = 3
    keep: int = 20

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Rotation:
        e = settings_values() if env is None else env
        d = cls()
        return cls(
            max_bytes=_positive(e, "TIDEMARK_LOG_MAX_BYTES", d.max_bytes),
            backups=_positive(e, "TIDEMARK_LOG_BACKUPS", d.backups),
            keep=_positive(e, "TIDEMARK_LOG_KEEP", d.keep),
        )


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise LogSetupError(f"{name}: {raw!r} is not a whole number") from None
    if value < 1:
        raise LogSetupError(f"{name}: must be at least 1, not {value}")
    return value


def rotate_file(path: Path, rotation: Rotation) -> bool:
    """Rotate ``path`` if it is larger than ``rotation.max_bytes``: ``path.1`` is the newest
    copy, ``path.<backups>`` the oldest kept. Copy-and-truncate, so a writer that holds the file
    open for appending goes on writing into ``path``. Returns whether it rotated."""
    try:
        if path.stat().st_size <= rotation.max_bytes:
            return False
    except FileNotFoundError:
        return False
    oldest = path.with_name(f"{path.name}.{rotation.backups}")
    oldest.unlink(missing_ok=True)
    for n in range(rotation.backups - 1, 0, -1):
        src = path.with_name(f"{path.name}.{n}")
        if src.exists():
            src.rename(path.with_name(f"{path.name}.{n + 1}"))
    shutil.copyfile(path, path.with_name(f"{path.name}.1"))
    with open(path, "r+b") as f:
        f.truncate(0)
    return True


def rotate_job_logs(log_dir: Path, rotation: Rotation) -> list[Path]:
    """Rotate every job log under ``log_dir/<job>/`` past the size limit and delete the oldest
    launch logs (with their rotated copies) beyond ``rotation.keep`` per job; returns the files
    rotated. A missing ``log_dir`` is no error (nothing launched yet)."""
    rotated: list[Path] = []
    if not log_dir.is_dir():
        return rotated
    for job_dir in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        launches = sorted((p for p in job_dir.glob("*.log") if p.is_file()),
                          key=lambda p: (p.stat().st_mtime, p.name), reverse=True)
        for old in launches[rotation.keep:]:
            for f in job_dir.glob(f"{old.name}*"):
                f.unlink(missing_ok=True)
        for current in launches[: rotation.keep]:
            if rotate_file(current, rotation):
                rotated.append(current)
    return rotated
