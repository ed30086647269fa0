"""End to end with the real Spark job (``python -m jobs.run``) launched by the supervisor:
a SIGKILLed job is restarted with its output exactly once; the migration guarantee (tumbling
1m sum -> hopping 2m/1m mean while data keeps arriving); roll back resumes the old checkpoint.

Expected results are never copied from a run: they are ``tidemark replay`` of the same
definition over the same input (one arrival instant per landed file, as Spark reads one file
per micro-batch; nothing is late because every file is later in event time than the ones
before it; the job may read several files per micro-batch, which changes no final pane for
such input), restricted by nothing but the watermark the job has reached.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from lifecycle_support import wait_for

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema
from jobs.config import Settings
from jobs.definition import load_definition
from jobs.engine.arrival import Arrival
from jobs.lifecycle.catalog_port import LifecycleCatalog
from jobs.lifecycle.migration import Migrator, rollback
from jobs.lifecycle.outbox import poll_changes
from jobs.lifecycle.policy import RestartPolicy
from jobs.lifecycle.reconcile import Launcher, Supervisor
from jobs.replay import replay_lines

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z
FILE_SPAN = 20_000
JOB = "mig"


def _records(i: int) -> list[dict[str, Any]]:
    return [
        {"k": "abc"[j % 3], "v": (i * 7 + j * 3) % 11, "et": BASE + i * FILE_SPAN + j * 1000}
        for j in range(20)
    ]


def _land(directory: Path, i: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".part-{i:04d}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in _records(i)))
    mtime = 1_700_000_000 + i
    os.utime(tmp, (mtime, mtime))
    tmp.rename(directory / f"part-{i:04d}.json")  # atomic: Spark never sees half a file


def _spec(inp: Path, *, hopping: bool) -> dict[str, Any]:
    window = {"type": "hopping", "size": "2m", "step": "1m"} if hopping else {"type": "tumbling", "size": "1m"}
    fn = "mean" if hopping else "sum"
    return {
        "name": JOB,
        "source": {"kind": "files", "path": str(inp), "format": "json",
                   "schema": "k STRING, v INT, et BIGINT"},
        "key": "k", "event_time": "et", "window": window,
        "aggregations": [{"name": "x", "fn": fn, "of": "v"}],
        "trigger": {"emit": "final"},
    }


class Env:
    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.home.mkdir(parents=True)
        self.inp = tmp / "in"
        self.url = f"sqlite:///{self.home / 'catalog.db'}"
        catalog_schema.upgrade(self.url)
        self.catalog = Catalog(self.url)
        self.settings = replace(
            Settings.from_env({"TIDEMARK_HOME": str(self.home), "TIDEMARK_SPARK_MASTER": "local[2]"}),
            db_url=self.url,
        )
        policy = RestartPolicy(heartbeat_timeout_ms=180_000, backoff_base_ms=500, backoff_max_ms=2_000,
                               crash_loop_limit=3, healthy_after_ms=600_000, stop_timeout_ms=60_000)
        launcher = Launcher(
            command=lambda job, v: [sys.executable, "-m", "jobs.run", job, "--version", str(v),
                                    "--shuffle-partitions", "2", "--trigger-interval", "500 milliseconds",
                                    # up to 4 files a batch, so a replay can catch up with input that
                                    # keeps landing even on a loaded machine (final panes do not
                                    # depend on batching: no record here is ever late)
                                    "--max-files-per-trigger", "4"],
            env={"TIDEMARK_HOME": str(self.home), "TIDEMARK_SPARK_MASTER": "local[2]"},
        )
        self.sup = Supervisor(LifecycleCatalog(self.catalog), db_url=self.url, policy=policy,
                              launcher=launcher, settings=self.settings)
        msup = Supervisor(LifecycleCatalog(self.catalog, actor="airflow:migration"), db_url=self.url,
                          policy=policy, launcher=launcher, settings=self.settings)
        self.mig = Migrator(msup)
        self.landed = 0

    def land(self, n: int) -> None:
        for _ in range(n):
            _land(self.inp, self.landed)
            self.landed += 1

    def store(self, version: int) -> str:
        return self.catalog.version(JOB, version).store_name

    def watermark(self, version: int) -> int | None:
        points = self.catalog.progress(JOB, store=self.store(version), limit=1)
        return points[-1].watermark if points else None

    def panes(self, version: int) -> list[str]:
        import pyarrow.parquet as pq

        from jobs.spark.sinks import pane_json

        out = []
        root = self.home / "results" / JOB / self.store(version) / "panes"
        for f in sorted(root.glob("batch_id=*/*.parquet")):
            for row in pq.read_table(f).to_pylist():
                assert row["version"] == version and row["store"] == self.store(version)
                out.append(_canon(pane_json(row)))
        return sorted(out)

    def expected(self, version: int) -> list[str]:
        """Replay of ``version`` over every landed file, one micro-batch per file (the job's
        arrival order: replay's ``batch`` mode)."""
        defn = load_definition(self.catalog.version(JOB, version).spec_json)
        lines: list[Any] = []
        for i in range(self.landed):
            lines.append({"$processing_time": BASE + i * FILE_SPAN})
            lines.extend(_records(i))
        out = replay_lines(defn, lines, eof_flush=False, arrival=Arrival("batch"))
        return sorted(_canon(p) for p in out if p["type"] == "pane")

    def final_watermark(self) -> int:
        return BASE + (self.landed - 1) * FILE_SPAN + 19 * 1000  # delay 0

    def settle(self, version: int, timeout: float = 600) -> None:
        """Wait until ``version`` has read every landed file and emitted what that closes."""
        want = self.expected(version)
        wait_for(lambda: self.watermark(version) == self.final_watermark() and self.panes(version) == want,
                 timeout=timeout, what=f"v{version} to settle")

    def close(self) -> None:
        for run in self.catalog.active_runs(JOB):
            self.sup.stop_run(self.sup.catalog.run(run.id), "test over")
        self.catalog.close()


def _canon(p: dict[str, Any]) -> str:
    q = {k: v for k, v in p.items() if k not in ("emitted_at", "watermark")}
    return json.dumps(q, sort_keys=True)


@pytest.fixture
def env(tmp_path: Path) -> Any:
    e = Env(tmp_path)
    yield e
    e.close()


def test_sigkilled_spark_job_is_restarted_and_its_output_stays_exactly_once(env: Env) -> None:
    env.land(8)
    env.catalog.create_job(_spec(env.inp, hopping=False), "alice")
    env.catalog.set_desired_state(JOB, "running", "alice")
    assert [o.action for o in env.sup.reconcile().outcomes] == ["start"]
    (run,) = env.catalog.active_runs(JOB)
    wait_for(lambda: (env.watermark(1) or 0) >= BASE + 2 * FILE_SPAN, timeout=240, what="batches")
    lander = threading.Thread(target=lambda: [env.land(1) or time.sleep(0.5) for _ in range(4)])
    lander.start()
    os.killpg(run.pid, signal.SIGKILL)  # type: ignore[arg-type]  # the driver and its JVM
    lander.join()
    wait_for(lambda: [o.action for o in env.sup.reconcile().outcomes][:1] == ["ended"] or
             not env.catalog.active_runs(JOB), what="the death to be noticed")
    assert env.catalog.run(run.id).status == "killed"
    wait_for(lambda: any(o.action == "restart" for o in env.sup.reconcile().outcomes),
             timeout=30, what="the restart")
    (again,) = env.catalog.active_runs(JOB)
    assert again.id != run.id and again.restart_count == 1
    env.settle(1)  # equal to replay: nothing missing, nothing twice


def test_migration_guarantee_and_roll_back(env: Env) -> None:
    env.land(10)
    env.catalog.create_job(_spec(env.inp, hopping=False), "alice")
    env.catalog.set_desired_state(JOB, "running", "alice")
    env.sup.reconcile()
    wait_for(lambda: (env.watermark(1) or 0) >= BASE + 6 * FILE_SPAN, timeout=240, what="v1 batches")

    saved = env.catalog.save_version(JOB, _spec(env.inp, hopping=True), "bob", base_version=1)
    assert saved.kind == "new_store"
    env.catalog.activate(JOB, 2, "bob")
    (change,) = poll_changes(env.catalog)
    assert change.migration_id is not None

    stop_landing = threading.Event()

    def keep_landing() -> None:  # data keeps arriving during the migration
        while not stop_landing.is_set():
            env.land(1)
            time.sleep(2.0)

    lander = threading.Thread(target=keep_landing)
    lander.start()
    try:
        m = env.mig.drive(change.migration_id, poll_s=0.5, timeout_s=900)
    finally:
        stop_landing.set()
        lander.join()
    assert m.state == "done", m
    assert env.catalog.job(JOB).active_version == 2
    assert m.cutover_watermark is not None and m.cutover_watermark >= BASE + 6 * FILE_SPAN
    old_results = sorted((env.home / "results" / JOB / env.store(1)).rglob("*.parquet"))
    old_panes = env.panes(1)

    # how many files landed during the migration depends on how fast it was; top the input up
    # afterwards so v2 always has at least 8 closed hopping windows (26 files: 0..519 s) to prove
    landed_during = env.landed - 10
    assert landed_during >= 1  # the migration did run while data kept arriving
    env.land(max(0, 26 - env.landed))

    # the new version's final panes are exactly replay's over all input
    env.settle(2)
    want_v2 = env.expected(2)
    assert any('"window_end": ' in p for p in want_v2) and len(want_v2) >= 24
    # the old version's results are untouched by the migration: what it emitted before it was
    # retired is still there, unchanged, and correct for the input it had read
    assert sorted((env.home / "results" / JOB / env.store(1)).rglob("*.parquet")) == old_results
    assert env.panes(1) == old_panes
    # v1 emitted every window its last batch closed, each exactly once, all as replay has them
    v1_points = env.catalog.progress(JOB, store=env.store(1), limit=10_000)
    applied = v1_points[-2].watermark
    assert applied is not None
    expected_v1 = env.expected(1)
    assert len(set(old_panes)) == len(old_panes) and set(old_panes) <= set(expected_v1)
    closed = [p for p in expected_v1 if json.loads(p)["window_end"] <= applied]
    assert set(closed) <= set(old_panes)
    # and the windows it owns by the cutover watermark are all among them
    owned = [p for p in expected_v1 if json.loads(p)["window_end"] <= (m.cutover_watermark or 0)]
    assert owned and set(owned) <= set(old_panes)
    assert (env.home / "checkpoints" / env.store(1)).is_dir()  # kept for roll back

    # roll back: v1 resumes from its own checkpoint and catches up
    last_v1_batch = env.catalog.progress(JOB, store=env.store(1), limit=1)[-1].batch_id
    result = rollback(env.mig, JOB, 1, actor="carol")
    assert result.action == "rollback" and result.migration_id is not None
    m = env.mig.drive(result.migration_id, poll_s=0.5, timeout_s=900)
    assert m.state == "done" and env.catalog.job(JOB).active_version == 1
    (run,) = env.catalog.active_runs(JOB)
    assert run.version == 1
    # v1 may have read every landed file before it was retired (then the roll back is caught up
    # at once and the resumed run has nothing to do): new input must continue its batch ids
    env.land(1)

    def resumed() -> list[Any]:
        points = env.catalog.progress(JOB, store=env.store(1), limit=10_000)
        return [p for p in points if p.run_id == run.id]

    wait_for(lambda: bool(resumed()), timeout=240, what="a batch of the resumed v1 run")
    assert resumed()[0].batch_id == last_v1_batch + 1
    env.settle(1)  # exactly once across the stop and the resume


def _final(panes: list[str]) -> list[tuple[Any, ...]]:
    """The ON_TIME panes without what depends on how input was cut into micro-batches (the
    pane index and ``is_first`` count the early firings before them)."""
    out = []
    for text in panes:
        p = json.loads(text)
        if p["timing"] == "ON_TIME":
            out.append((json.dumps(p["key"]), p["window_start"], p["window_end"],
                        json.dumps(p["values"], sort_keys=True), p["is_last"]))
    return sorted(out)


def test_a_trigger_change_off_the_native_path_migrates_to_a_new_store(env: Env) -> None:
    """``emit: final`` -> early firings moves the job from Spark's native aggregation to the
    engine. Before, the store name stayed, the job restarted in place on the native checkpoint
    and Spark refused it (STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA): the job
    crash-looped. Now the path is state-shaping: a new store, a migration, and v2's results are
    what v2 gives from the start."""
    env.land(8)
    env.catalog.create_job(_spec(env.inp, hopping=False), "alice")
    env.catalog.set_desired_state(JOB, "running", "alice")
    env.sup.reconcile()
    wait_for(lambda: (env.watermark(1) or 0) >= BASE + 4 * FILE_SPAN, timeout=240, what="v1 batches")

    early = _spec(env.inp, hopping=False) | {"trigger": {"emit": "custom", "early": {"count": 5}}}
    saved = env.catalog.save_version(JOB, early, "bob", base_version=1)
    assert saved.kind == "new_store" and env.store(2) != env.store(1)
    env.catalog.activate(JOB, 2, "bob")
    (change,) = poll_changes(env.catalog)
    assert change.migration_id is not None  # not a restart in place
    env.land(4)
    m = env.mig.drive(change.migration_id, poll_s=0.5, timeout_s=900)
    assert m.state == "done", m
    assert env.catalog.job(JOB).active_version == 2
    (run,) = env.catalog.active_runs(JOB)
    assert run.version == 2 and run.store == env.store(2)

    # v2 runs on the engine path in its own checkpoint: its final panes are replay's of v2 over
    # all input, and it fires early as v2 says
    want = _final(env.expected(2))
    assert len(want) >= 9  # 3 keys x the 3 one-minute windows 12 files of 20 s close
    wait_for(lambda: env.watermark(2) == env.final_watermark() and _final(env.panes(2)) == want,
             timeout=600, what="v2 to settle")
    assert any(json.loads(p)["timing"] == "EARLY" for p in env.panes(2))
    # v1's native checkpoint is kept (roll back) and what it emitted is replay's of v1
    assert (env.home / "checkpoints" / env.store(1) / "commits").is_dir()
    assert set(env.panes(1)) <= set(env.expected(1)) and env.panes(1)
