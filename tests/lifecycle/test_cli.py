"""``tidemark supervise`` / ``migrate`` from the command line (real catalog, fake jobs)."""

from __future__ import annotations

import argparse
import json
import sys

import pytest
from lifecycle_support import FAKE, definition, hopping_mean, wait_for

from jobs.catalog import Catalog
from jobs.cli import lifecycle_cmds


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tidemark")
    sub = parser.add_subparsers(dest="command", required=True)
    lifecycle_cmds.register(sub)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def test_supervise_and_migrate_from_the_shell(
    db_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("TIDEMARK_DB_URL", db_url)
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TIDEMARK_JOB_COMMAND", json.dumps([sys.executable, FAKE, "{job}", "--version", "{version}"]))
    import time

    monkeypatch.setenv("FAKE_SOURCE_T0", str(time.time_ns() // 1_000_000 - 60_000))
    monkeypatch.setenv("FAKE_CHUNK_MS", "20000")
    monkeypatch.setenv("FAKE_HEARTBEAT_S", "0.1")
    with Catalog(db_url) as cat:
        cat.create_job(definition(), "alice")
        cat.set_desired_state("scores", "running", "alice")
        assert _cli(["supervise"]) == 0
        assert "scores: start run" in capsys.readouterr().out
        wait_for(lambda: bool(cat.progress("scores", limit=1)), what="a batch")
        cat.save_version("scores", hopping_mean(), "bob", base_version=1)
        assert _cli(["migrate", "scores", "2", "--as", "bob", "--timeout", "60"]) == 0
        out, err = capsys.readouterr()
        assert "cut_over" in out and out.strip().endswith("done")
        assert "migration 1 of scores: done" in err  # progress goes to stderr
        assert cat.job("scores").active_version == 2
        assert _cli(["supervise", "--job", "scores"]) == 0  # nothing left to do
        cat.set_desired_state("scores", "stopped", "alice")
        assert _cli(["supervise"]) == 0
        assert cat.active_runs("scores") == []
