"""Exactly once across driver crashes: SIGKILL the whole driver (Python and its JVM) at several
different micro-batches, restart it each time on the same checkpoint, and the final results
(panes, late records, dead letters) equal an uninterrupted run's: no pane missing, none twice.

Runs the real entry point (``python -m jobs.run JOB --until-idle``) against a real SQLite
catalog, for both execution paths. The uninterrupted run is the session's shared reference
(``tests/crash_reference.py``), which the HDFS, S3 and cluster scenarios compare with too."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crash_reference import JOB, CrashReferences

from .conftest import land, read_jsonl_dir

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

ROOT = Path(__file__).resolve().parents[2]
FILES = 7
# the driver is killed inside these micro-batches: the first batch that resumes a checkpoint,
# and a later one that resumes open windows, late records and a re-run batch's side outputs
KILL_AT = (1, 4)


def _input(directory: Path) -> None:
    rng = random.Random(7)
    files: list[list[Any]] = []
    for f in range(FILES):
        rows: list[Any] = []
        for i in range(60):
            t = f * 20_000 + i * 300 + 1_000_000
            if rng.random() < 0.15:
                t -= rng.randint(5_000, 40_000)  # out of order, some of it late
            rows.append({"k": f"k{rng.randint(0, 4)}", "v": rng.randint(1, 9), "et": t})
        rows.append("{broken")
        files.append(rows)
    land(directory, files)


def _spec(name: str, inp: Path, engine: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "source": {"kind": "files", "path": str(inp), "format": "json",
                   "schema": "k STRING, v INT, et BIGINT"},
        "key": "k", "event_time": "et",
        "watermark": {"delay": "2s"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
    }
    if engine:
        spec.update({"window": {"type": "session", "gap": "3s"}, "allowed_lateness": "5s",
                     "trigger": {"emit": "custom", "early": {"count": 5}, "on_time": True,
                                 "late": {"count": 1}},
                     "accumulation": "retracting"})
    else:
        spec.update({"window": {"type": "tumbling", "size": "10s"}, "allowed_lateness": "3s"})
    return spec


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"TIDEMARK_HOME": str(home), "TIDEMARK_SPARK_MASTER": "local[2]",
                "PYTHONPATH": str(ROOT)})
    env.pop("TIDEMARK_DB_URL", None)
    env.pop("TIDEMARK_LAUNCHED", None)
    return env


def _setup(home: Path, spec: dict[str, Any]) -> str:
    from jobs.catalog import Catalog

    home.mkdir(parents=True, exist_ok=True)
    with Catalog(f"sqlite:///{home / 'catalog.db'}", upgrade=True) as cat:
        version = cat.create_job(spec, actor="test")
    return version.store_name


def _launch(home: Path, job: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "jobs.run", job, "--until-idle", "--shuffle-partitions", "2"],
        env=_env(home), cwd=str(ROOT), stdout=log.open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _results(out: Path) -> tuple[list[str], list[str], list[str]]:
    import pyarrow.parquet as pq

    panes = []
    for f in sorted((out / "panes").glob("batch_id=*/*.parquet")):
        for row in pq.read_table(f).to_pylist():
            row.pop("emitted_at")
            panes.append(json.dumps(row, sort_keys=True))
    late = [json.dumps(x, sort_keys=True) for x in read_jsonl_dir(out / "late")]
    dead = [json.dumps(x, sort_keys=True) for x in read_jsonl_dir(out / "dead_letters")]
    return sorted(panes), sorted(late), sorted(dead)


@pytest.mark.parametrize("engine", [False, True], ids=["native", "engine"])
def test_sigkill_at_several_batches_equals_uninterrupted(
        tmp_path: Path, crash_reference: CrashReferences, engine: bool) -> None:
    ref = crash_reference.get(engine)  # the uninterrupted run, shared with the other scenarios
    job = JOB
    home = tmp_path / "crash"
    store = _setup(home, ref.spec)
    assert store == ref.store
    ckpt = home / "checkpoints" / store
    kills = []
    for batch in KILL_AT:
        proc = _launch(home, job, tmp_path / "crash.log")
        deadline = time.monotonic() + 600
        while not (ckpt / "offsets" / str(batch)).exists():  # batch started: kill inside it
            assert proc.poll() is None, (tmp_path / "crash.log").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        kills.append((batch, (ckpt / "commits" / str(batch)).exists()))
    proc = _launch(home, job, tmp_path / "crash.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "crash.log").read_text()[-3000:]

    panes, late, dead = _results(home / "results" / job / store)
    assert panes == ref.panes, f"kills at {kills}"
    assert late == ref.late
    assert dead == ref.dead

    from jobs.catalog import Catalog

    with Catalog(f"sqlite:///{home / 'catalog.db'}") as cat:
        runs = cat.runs(job)
        snaps = cat.snapshots(job)
        progress = cat.progress(job)
    assert len(runs) == len(KILL_AT) + 1
    committed = sorted(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())
    assert sorted({s.batch_id for s in snaps}) == committed
    assert sum(p.dead_letters for p in progress) == FILES  # re-run batches not counted twice


def test_sigkill_processing_clock_counts_every_record_once(tmp_path: Path) -> None:
    """The ProcessingTime mode (here: the processing clock, whose windows depend on the wall
    clock, so two runs cannot be compared pane by pane): kill the driver inside each batch of
    ``KILL_AT``, restart each time; a re-run batch keeps its batch time (offsets log), so every
    record is in exactly one final pane and no (key, window) pane appears twice."""
    inp = tmp_path / "in"
    _input(inp)
    job = "clocked"
    spec: dict[str, Any] = {
        "name": job,
        "source": {"kind": "files", "path": str(inp), "format": "json",
                   "schema": "k STRING, v INT, et BIGINT"},
        "key": "k", "event_time": "processing",
        # 50 ms: the window of the last batch's arrival ends long before the no-data batch
        # that follows it (a micro-batch takes far longer), so --until-idle closes it
        "window": {"type": "tumbling", "size": "50ms"},
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
    }
    home = tmp_path / "crash"
    store = _setup(home, spec)
    ckpt = home / "checkpoints" / store
    for batch in KILL_AT:
        proc = _launch(home, job, tmp_path / "crash.log")
        deadline = time.monotonic() + 600
        while not (ckpt / "offsets" / str(batch)).exists():
            assert proc.poll() is None, (tmp_path / "crash.log").read_text()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    proc = _launch(home, job, tmp_path / "crash.log")
    assert proc.wait(timeout=900) == 0, (tmp_path / "crash.log").read_text()[-3000:]

    import pyarrow.parquet as pq

    rows = [r for f in sorted((home / "results" / job / store / "panes").glob(
        "batch_id=*/*.parquet")) for r in pq.read_table(f).to_pylist()]
    good = [r for f in sorted(inp.iterdir()) for r in (
        json.loads(line) for line in f.read_text().splitlines() if line != "{broken")]
    assert len(good) == FILES * 60
    windows = [(r["key"], r["window_start"]) for r in rows]
    assert len(windows) == len(set(windows)), "a pane was written twice"
    assert all(r["timing"] == "ON_TIME" for r in rows)
    assert sum(json.loads(r["values"])["n"] for r in rows) == len(good)
    assert sum(json.loads(r["values"])["s"] for r in rows) == sum(r["v"] for r in good)
    by_key: dict[str, int] = {}
    for r in rows:
        by_key[json.loads(r["key"])] = by_key.get(json.loads(r["key"]), 0) + json.loads(
            r["values"])["n"]
    assert by_key == {k: sum(1 for r in good if r["k"] == k) for k in by_key}
    assert len(by_key) == len({r["k"] for r in good})
