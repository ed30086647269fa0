"""``python -m jobs.run JOB`` until SIGTERM (graceful: the running batch commits, the run's end
is recorded, the job stops without working off its backlog first) and ``tidemark state JOB`` on
the checkpoint it left, as separate processes; a restart then finishes the input exactly as an
uninterrupted run does."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_crash_recovery import FILES, ROOT, _env, _input, _launch, _results, _setup, _spec

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def test_sigterm_stops_after_a_committed_batch_and_state_shows_open_windows(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    _input(inp)
    home = tmp_path / "home"
    store = _setup(home, _spec("termed", inp, engine=True))
    ckpt = home / "checkpoints" / store
    log = tmp_path / "run.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs.run", "termed", "--shuffle-partitions", "2",
         "--trigger-interval", "200 milliseconds"],
        env=_env(home), cwd=str(ROOT), stdout=log.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True)
    deadline = time.monotonic() + 600
    while not (ckpt / "commits" / "2").exists():
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]

    offsets = sorted(int(p.name) for p in (ckpt / "offsets").iterdir() if p.name.isdigit())
    commits = sorted(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())
    assert commits[-1] >= 2
    # batches ran back to back (a backlog of one file per batch, each slower than the trigger
    # interval): the job stopped once the running batch committed, it did not first work off
    # the backlog (before, it waited for a gap between batches that only came at the end)
    assert commits[-1] < FILES - 1, "SIGTERM waited for the whole backlog"
    # at most the batch after it had started; it committed nothing and is re-run on restart
    assert offsets[-1] - commits[-1] <= 1

    from jobs.catalog import Catalog

    with Catalog(f"sqlite:///{home / 'catalog.db'}") as cat:
        (run,) = cat.runs("termed")
        snaps = cat.snapshots("termed")
    assert run.status == "stopped"
    assert "SIGTERM" in (run.exit_reason or "")
    assert {s.batch_id for s in snaps} == set(commits)

    out = subprocess.run(
        [sys.executable, "-m", "jobs", "state", "termed", "--batch", "1", "--json"],
        env=_env(home), cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    windows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert windows, out.stdout
    assert {w["key"] for w in windows} <= {f"k{i}" for i in range(5)}
    assert all(w["window_end"] > w["window_start"] for w in windows)

    # the restart re-runs the batch the stop left started and finishes the input: the results
    # equal those of an uninterrupted run
    proc = _launch(home, "termed", log)
    assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
    ref_home = tmp_path / "ref"
    _setup(ref_home, _spec("termed", inp, engine=True))
    ref = _launch(ref_home, "termed", tmp_path / "ref.log")
    assert ref.wait(timeout=900) == 0, (tmp_path / "ref.log").read_text()[-3000:]
    panes, late, dead = _results(home / "results" / "termed" / store)
    ref_panes, ref_late, ref_dead = _results(ref_home / "results" / "termed" / store)
    assert ref_panes and len(ref_dead) == FILES
    assert (panes, late, dead) == (ref_panes, ref_late, ref_dead)
