"""A job whose checkpoint and results live on a real HDFS, on both execution paths.

Everything tidemark keeps beside Spark goes there too: the checkpoint manifest's files, the
gate's side files (dead letters, late records, late counts, written by the executors: the JVM
gate through Hadoop's FileSystem, the Python gate and the engine host over WebHDFS) and the
offsets log they read. The job's input stays on the local disk (sources are not storage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions
from jobs.spark.sinks import pane_json, read_side
from jobs.storage import join, storage_for
from jobs.storage.manifest import (
    BUCKETS_FILE,
    KEY_FILE,
    PATH_FILE,
    TIME_FILE,
    committed_batches,
    recorded_path,
)
from jobs.storage.minihdfs import MiniHdfs

from .hdfsjobs import HdfsRun, hdfs_settings, run_scores_on_hdfs
from .jobfiles import FILES, FINAL_PANES, T0, final_panes, land, scores

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("engine", [False, True], ids=["native", "engine"])
def test_a_job_keeps_checkpoint_results_and_side_files_on_hdfs(
        spark: Any, hdfs: MiniHdfs, tmp_path: Path, request: pytest.FixtureRequest,
        engine: bool) -> None:
    """The native path's run is the suite's shared one (the UI test on HDFS reads it too)."""
    run: HdfsRun = (run_scores_on_hdfs(spark, hdfs, tmp_path, "engine", engine=True)
                    if engine else request.getfixturevalue("hdfs_native_run"))
    ctx, runner = run.ctx, run.runner
    assert ctx.checkpoint.startswith(f"{hdfs.url}/") and ctx.output_root.startswith(hdfs.url)
    assert ctx.plan.native is not engine
    assert run.exit_reason == "idle"

    panes = [pane_json(r.asDict()) for r in spark.read.parquet(ctx.panes_path).collect()]
    assert final_panes(panes) == FINAL_PANES
    assert not any(run.home.glob("**/offsets"))  # nothing landed locally

    st = storage_for(ctx.checkpoint)
    assert committed_batches(ctx.checkpoint)[:3] == [0, 1, 2]
    assert recorded_path(ctx.checkpoint) == ("engine" if engine else "native")
    names = set(st.list(ctx.checkpoint))
    assert PATH_FILE in names
    assert ({BUCKETS_FILE, TIME_FILE} <= names) if engine else (KEY_FILE in names)

    dead = [d for b in range(3) for d in read_side(ctx.output_root, "dead_letters", b)]
    assert sorted(d["reason"] for d in dead) == [
        "key is null or did not evaluate", "unparsable record"]
    late = [x for b in range(3) for x in read_side(ctx.output_root, "late", b)]
    assert [(x["key"], x["event_time"] - T0, x["reason"]) for x in late] == [
        ('"a"', 3000, "expired")]
    by_batch = {r.batch_id: r for r in runner.reports}
    assert by_batch[0].dead_letters == 2 and by_batch[2].late_dropped == 1
    assert st.exists(join(ctx.output_root, "late", "batch_id=2"))


@pytest.mark.heavy
def test_a_restart_on_hdfs_resumes_from_the_checkpoint(
        spark: Any, hdfs: MiniHdfs, tmp_path: Path) -> None:
    """Two files, stop, a third file, restart: the second run continues from the HDFS
    checkpoint (its manifest read back from there) and the panes are those of one run."""
    settings = hdfs_settings(hdfs, tmp_path / "home", "restart")
    defn = scores(tmp_path / "in")
    land(tmp_path / "in", FILES[:2])
    first = JobContext.create(defn, settings)
    JobRunner(spark, first, RunOptions(until_idle=True)).run()
    done = committed_batches(first.checkpoint)
    land(tmp_path / "in", FILES)
    again = JobContext.create(defn, settings)
    runner = JobRunner(spark, again, RunOptions(until_idle=True))
    assert runner.run() == "idle"
    assert min(r.batch_id for r in runner.reports) > done[-1]  # resumed, nothing re-run
    panes = [pane_json(r.asDict()) for r in spark.read.parquet(again.panes_path).collect()]
    assert final_panes(panes) == FINAL_PANES
