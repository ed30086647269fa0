"""A job that has really run on Spark, seen through the UI: its snapshots, and the open windows
read from its state store at a snapshot (through ``tidemark state`` in a child process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.catalog import Catalog
from tests.ui.helpers import app_as, button, team_scores

pytestmark = [pytest.mark.heavy, pytest.mark.spark]


@pytest.fixture
def spark_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDEMARK_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("TIDEMARK_RESULTS_ROOT", str(tmp_path / "results"))


def test_snapshots_and_state_of_a_job_that_ran(cat: Catalog, users: dict[str, str],
                                               tmp_path: Path, spark_env: None) -> None:
    src = tmp_path / "landing"
    src.mkdir()
    records = [{"team": "a", "score": 3, "et": "2026-01-01T00:00:10Z"},
               {"team": "a", "score": 4, "et": "2026-01-01T00:00:50Z"},
               {"team": "b", "score": 1, "et": "2026-01-01T00:01:30Z"}]
    (src / "part-1.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    cat.create_job(team_scores(src), "editor")
    proc = subprocess.run(
        [sys.executable, "-m", "jobs", "run", "team_scores", "--until-idle",
         "--shuffle-partitions", "2"],
        env=dict(os.environ), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    snaps = cat.snapshots("team_scores")
    assert snaps, "the run recorded no snapshot"

    at = app_as("viewer", "views/snapshots.py")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "batch id" in d.value.columns)
    assert sorted(table["batch id"]) == sorted(s.batch_id for s in snaps)
    at.default_timeout = 600
    button(at, "Read open windows from the state store").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    windows = next(d.value for d in at.dataframe if "window_start" in d.value.columns)
    # b's window [00:01, 00:02) cannot have closed: the watermark is at most 00:01:20
    starts = {(k, s) for k, s in zip(windows["key"], windows["window_start"], strict=True)}
    assert ('"b"', "2026-01-01T00:01:00.000Z") in starts, starts
