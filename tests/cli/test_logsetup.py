"""One logging configuration: the level from the flag or TIDEMARK_LOG_LEVEL, UTC 24-hour
times, tidemark's one handler (never two after reconfiguring), and size rotation."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.logsetup import LogSetupError, Rotation, configure_logging, rotate_file


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    jobs_level = logging.getLogger("jobs").level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("jobs").setLevel(jobs_level)


def test_lines_are_utc_24_hour_with_level_and_logger() -> None:
    out = io.StringIO()
    configure_logging("job", env={"TIDEMARK_LOG_LEVEL": "warning"}, stream=out)
    logging.getLogger("jobs.spark.runner").info("not shown at WARNING")
    logging.getLogger("jobs.spark.runner").warning("batch %d slow", 7)
    [line] = out.getvalue().splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ WARNING "
                        r"jobs\.spark\.runner: batch 7 slow", line)


def test_the_flag_wins_over_the_environment_and_reconfiguring_keeps_one_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("cli", env={"TIDEMARK_LOG_LEVEL": "ERROR"}, stream=first)
    assert configure_logging("cli", "debug", env={"TIDEMARK_LOG_LEVEL": "ERROR"},
                             stream=second) == logging.DEBUG
    logging.getLogger("jobs.x").debug("once")
    assert first.getvalue() == "" and second.getvalue().count("once") == 1


def test_inside_airflow_only_the_level_is_set() -> None:
    before = list(logging.getLogger().handlers)
    configure_logging("airflow-task", env={"TIDEMARK_LOG_LEVEL": "DEBUG"})
    assert logging.getLogger().handlers == before
    assert logging.getLogger("jobs").level == logging.DEBUG


def test_bad_settings_name_the_setting() -> None:
    with pytest.raises(LogSetupError, match="TIDEMARK_LOG_LEVEL: 'loud'"):
        configure_logging("cli", env={"TIDEMARK_LOG_LEVEL": "loud"})
    with pytest.raises(LogSetupError, match="TIDEMARK_LOG_MAX_BYTES: 'big' is not a whole"):
        Rotation.from_env({"TIDEMARK_LOG_MAX_BYTES": "big"})
    with pytest.raises(LogSetupError, match="TIDEMARK_LOG_BACKUPS: must be at least 1"):
        Rotation.from_env({"TIDEMARK_LOG_BACKUPS": "0"})


def test_rotation_keeps_the_newest_backups(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    rotation = Rotation(max_bytes=5, backups=2)
    for n in range(4):
        log.write_text(f"generation {n}\n")
        assert rotate_file(log, rotation)
    assert not rotate_file(log, rotation)  # empty now: under the limit
    assert (tmp_path / "job.log.1").read_text() == "generation 3\n"
    assert (tmp_path / "job.log.2").read_text() == "generation 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.log", "job.log.1", "job.log.2"]
