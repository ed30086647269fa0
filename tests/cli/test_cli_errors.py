"""``tidemark`` as a new user meets it: a mistake is one line on stderr and a documented exit
code, never a Python traceback. Each kind of output is checked once from the shell (a fresh
Python costs seconds); the other cases go through ``main``, the entry function the shell calls."""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs import __version__
from jobs.cli import main
from jobs.cli.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_FOUND,
    report,
)

Shell = Callable[..., subprocess.CompletedProcess[str]]  # the ``tidemark`` fixture


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_unknown_job_is_one_line_and_exit_5_from_the_shell(tidemark: Shell) -> None:
    done = tidemark("run", "nosuch")
    assert done.returncode == EXIT_NOT_FOUND
    assert _one_line(done.stderr) == "tidemark: job 'nosuch' not found"
    assert done.stdout == ""


@pytest.mark.parametrize("command", [["run", "nosuch"], ["state", "nosuch"],
                                     ["job", "show", "nosuch"], ["job", "history", "nosuch"]])
def test_an_unknown_job_is_one_line_and_exit_5(
        db_url: str, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """Every command that names a job, through the entry function the shell calls (a fresh
    Python per command costs seconds; the shell test above covers the process end to end)."""
    assert main(command) == EXIT_NOT_FOUND
    out, err = capsys.readouterr()
    assert _one_line(err) == "tidemark: job 'nosuch' not found"
    assert out == ""


def test_version(tidemark: Shell) -> None:
    done = tidemark("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"tidemark {__version__}"


def test_a_catalog_that_is_not_migrated_says_what_to_run(
        db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "list", "--db", f"sqlite:///{tmp_path / 'fresh.db'}"]) == EXIT_ERROR
    assert "tidemark db upgrade" in _one_line(capsys.readouterr().err)


def test_an_unexpected_error_is_one_line_too(tidemark: Shell) -> None:
    done = tidemark("job", "list", "--db", "nosuchdialect://x")
    assert done.returncode == EXIT_ERROR
    line = _one_line(done.stderr)
    assert line.startswith("tidemark: unexpected ") and "--log-level DEBUG" in line


def test_the_traceback_of_an_unexpected_error_at_debug_level(tidemark: Shell) -> None:
    done = tidemark("--log-level", "debug", "job", "list", "--db", "nosuchdialect://x")
    assert done.returncode == EXIT_ERROR
    assert "Traceback" in done.stderr and "DEBUG jobs.cli.errors: unexpected error" in done.stderr


def test_an_invalid_definition_lists_every_field(
        db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nkey: k\nevent_time: t\nwindow: {type: tumbling}\n")
    assert main(["job", "create", str(bad)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(r"^  window\.size: ", err, re.M), err


def test_a_bad_log_level_in_the_environment_is_exit_2(
        db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TIDEMARK_LOG_LEVEL", "chatty")
    assert main(["job", "list"]) == EXIT_INVALID
    assert "TIDEMARK_LOG_LEVEL: 'chatty' is not one of DEBUG, INFO, WARNING, ERROR" in \
        capsys.readouterr().err


def test_report_maps_interrupts_and_missing_files() -> None:
    out = io.StringIO()
    assert report(KeyboardInterrupt(), stream=out) == EXIT_INTERRUPTED
    try:
        open("/nonexistent/definition.yaml")  # noqa: SIM115
    except OSError as exc:
        assert report(exc, stream=out) == EXIT_ERROR
    assert out.getvalue().splitlines() == [
        "tidemark: interrupted",
        "tidemark: /nonexistent/definition.yaml: No such file or directory",
    ]
