"""The native path counts its state's rows itself (jobs/spark/state_rows.py): RocksDB's own
count (read before every write) is off, and the number the catalog gets after every batch must
still be exactly the one Spark's own count gives, across stops, a batch re-run after a crash,
and a checkpoint written before the count file existed."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.definition import load_definition
from jobs.spark import runner as runner_module
from jobs.spark.checkpoint import committed_batches
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions
from jobs.spark.state_rows import COUNT_FILE, read_counts

from .conftest import land

pytestmark = pytest.mark.spark

T0 = 1_767_225_600_000


def _files(n: int, seed: int = 7) -> list[list[dict[str, Any]]]:
    """``n`` files of records for 5 keys moving forward ~6 s of event time per file, some of
    them behind the watermark (late, some into expired windows)."""
    rng = random.Random(seed)
    out = []
    for f in range(n):
        rows: list[dict[str, Any]] = []
        for _ in range(12):
            et = T0 + f * 6000 + rng.randrange(0, 6000)
            if rng.random() < 0.25:
                et -= rng.randrange(0, 15_000)  # out of order: late, some past the lateness
            rows.append({"k": f"k{rng.randrange(5)}", "v": rng.randrange(10), "et": et})
        out.append(rows)
    return out


def _defn(inp: Path) -> Any:
    return load_definition({
        "name": "rows",
        "source": {"kind": "files", "path": str(inp), "format": "json",
                   "schema": "k STRING, v INT, et BIGINT"},
        "key": "k", "event_time": "et", "watermark": {"delay": "2s"},
        "window": {"type": "hopping", "size": "10s", "step": "5s"},
        "allowed_lateness": "3s",
        "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
    })


def _run(spark: Any, home: Path, inp: Path) -> JobRunner:
    settings = Settings.from_env({"TIDEMARK_HOME": str(home), "TIDEMARK_SPARK_MASTER": "local[2]"})
    ctx = JobContext.create(_defn(inp), settings)
    assert ctx.plan.native
    runner = JobRunner(spark, ctx, RunOptions(until_idle=True))
    runner.run()
    return runner


def _rows(runners: list[JobRunner]) -> dict[int, int]:
    return {r.batch_id: r.state_rows for run in runners for r in run.reports}


def _sparks_own(runners: list[JobRunner]) -> dict[int, int]:
    """State rows after every batch as the progress events of runs that kept Spark's count
    (RocksDB's read-before-write on) report them."""
    out: dict[int, int] = {}
    for run in runners:
        assert run.state_counter is not None and run.state_counter.counting == "spark"
        assert run.query is not None
        out.update({int(p.batchId): sum(op.numRowsTotal for op in p.stateOperators)
                    for p in run.query.recentProgress if p.stateOperators})
    return out


def _stops_and_crash(spark: Any, root: Path, forget_count: bool) -> list[JobRunner]:
    """9 files in four runs of one checkpoint: 3 files; a crash that lost the last batch's
    commit (the restart re-runs that batch) and 2 more; 2 more; the last 2. With
    ``forget_count`` the count file is deleted before the third run, as in a checkpoint written
    before the file existed."""
    inp, home = root / "in", root / "home"
    files = _files(9)
    land(inp, files[:3])
    runs = [_run(spark, home, inp)]
    ckpt = Path(runs[0].ctx.checkpoint)
    last = committed_batches(str(ckpt))[-1]
    # after the batch's sink call and state commit, before Spark's commit log entry
    (ckpt / "commits" / str(last)).unlink()
    (ckpt / "commits" / f".{last}.crc").unlink(missing_ok=True)
    land(inp, files[3:5], start=3)
    runs.append(_run(spark, home, inp))
    assert min(r.batch_id for r in runs[1].reports) == last  # the batch did run again
    if forget_count:
        (ckpt / COUNT_FILE).unlink()
    land(inp, files[5:7], start=5)
    runs.append(_run(spark, home, inp))
    land(inp, files[7:], start=7)
    runs.append(_run(spark, home, inp))
    return runs


def test_count_across_stops_a_rerun_batch_and_an_old_checkpoint(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(runner_module, "choose_counting", lambda checkpoint: "spark")
        ref = _stops_and_crash(spark, tmp_path / "ref", forget_count=False)
    want = _sparks_own(ref)
    assert len(want) >= 10 and max(want.values()) >= 10
    assert len(set(want.values())) >= 4  # a count that moves

    runs = _stops_and_crash(spark, tmp_path / "ours", forget_count=True)
    counting = [r.state_counter.counting for r in runs if r.state_counter is not None]
    # the first run is a plain run on a fresh checkpoint; the re-run batch started from the
    # count before it; the checkpoint without a count file kept Spark's count for one run,
    # then counted itself again
    assert counting == ["tidemark", "tidemark", "spark", "tidemark"]
    for run in runs:
        assert run.query is not None
        if run.state_counter is not None and run.state_counter.counting == "tidemark":
            # RocksDB did not count (its read-before-write was off for this query) ...
            assert all(op.numRowsTotal <= 0 for p in run.query.recentProgress
                       for op in p.stateOperators)
    # ... and the session keeps its own setting
    assert spark.conf.get("spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows",
                          "true") == "true"
    assert read_counts(runs[-1].ctx.checkpoint) is not None
    assert _rows(runs) == want
    _panes_reported_as_written(ref)
    _panes_reported_as_written(runs)


def _panes_reported_as_written(runs: list[JobRunner]) -> None:
    """Every batch's pane count in the catalog report (read from the save operator's metrics
    after the write) is the number of rows in that batch's pane files; for a batch re-run
    after the crash, the last run's report, whose write replaced the first one's."""
    import pyarrow.parquet as pq

    reported = {r.batch_id: r.panes for run in runs for r in run.reports}
    panes = Path(runs[-1].ctx.panes_path)
    on_disk = {int(d.name.split("=")[1]): pq.read_table(d).num_rows
               for d in panes.glob("batch_id=*")}
    assert sum(1 for n in on_disk.values() if n) >= 5  # windows closed in many batches
    assert {b: n for b, n in reported.items() if n} == {b: n for b, n in on_disk.items() if n}
    assert all(on_disk.get(b, 0) == 0 for b, n in reported.items() if not n)


def test_a_checkpoint_that_ran_without_the_file_keeps_sparks_count(tmp_path: Path) -> None:
    from jobs.spark.state_rows import choose_counting

    fresh = tmp_path / "fresh"
    assert choose_counting(str(fresh)) == "tidemark"
    ran = tmp_path / "ran"
    (ran / "offsets").mkdir(parents=True)
    (ran / "offsets" / "0").write_text("v1\n{}\n")
    assert choose_counting(str(ran)) == "spark"
    shutil.rmtree(ran)


def test_a_count_that_cannot_be_kept_never_stops_the_job(spark: Any, tmp_path: Path) -> None:
    from jobs.spark.checkpoint import write_marker
    from jobs.spark.state_rows import StateRowCounter, choose_counting

    land(tmp_path / "in", _files(3))
    run = _run(spark, tmp_path / "home", tmp_path / "in")
    assert run.query is not None
    ckpt = run.ctx.checkpoint
    # a count file that does not reach the batch: the rows before it are unknown
    write_marker(Path(ckpt), COUNT_FILE, {"batch": 99, "rows": 1, "prev": 1})
    counter = StateRowCounter(ckpt, "tidemark")
    assert counter.after_batch(spark, run.query, 5) is None
    assert counter.failed and read_counts(ckpt) is None
    assert counter.after_batch(spark, run.query, 6) is None
    assert choose_counting(ckpt) == "spark"  # the next start rebuilds it from Spark's count
