"""`make demo-check` must fail loudly and fast when there is nothing to check, and never wait
past its budget (CI bounds its runtime on it)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.catalog import Catalog
from jobs.config import Settings
from jobs.demo.check import STATE_FILE, Tour, TourFailed, run_tour


def _settings(home: Path) -> Settings:
    return Settings.from_env({"TIDEMARK_HOME": str(home)})


def test_no_running_demo_fails_at_once_and_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert run_tour(_settings(tmp_path)) == 1
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "make demo" in err and "scripts/demo-ci.sh" in err


def test_a_demo_that_died_is_reported_not_waited_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / STATE_FILE).write_text(json.dumps(
        {"pid": dead.pid, "ui_url": "http://127.0.0.1:9", "airflow_url": "http://127.0.0.1:9"}))
    started = time.monotonic()
    assert run_tour(_settings(tmp_path)) == 1
    assert time.monotonic() - started < 5
    assert "not running any more" in capsys.readouterr().err


def test_a_step_never_waits_past_the_tour_budget(tmp_path: Path) -> None:
    cat = Catalog(f"sqlite:///{tmp_path / 'c.db'}", upgrade=True)
    try:
        tour = Tour(cat, budget_s=1.0)
        assert tour.step("quick", lambda: "yes", 60) == "yes"
        started = time.monotonic()
        with pytest.raises(TourFailed, match="budget ran out") as failed:
            tour.step("never", lambda: None, 600, job="team_scores", poll_s=0.1)
        assert time.monotonic() - started < 3
        assert failed.value.job == "team_scores"
        assert tour.passed == ["quick"]
    finally:
        cat.close()
