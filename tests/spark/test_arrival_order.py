"""The engine path feeds a micro-batch's records to the engine in arrival order (files:
modification time, then path, then line), whatever order the shuffle delivers them in, so the
job equals replay in its micro-batch mode (docs/semantics.md, "Arrival model" and "Spark").

One micro-batch of two files: the earlier file is the smaller one, which Spark's file packing
reads *second*. Under a per-key watermark the order of key ``a``'s records decides which of
them are late, so a job that applied them in read order would report other late records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings
from jobs.engine.arrival import Arrival
from jobs.replay import replay_lines
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import read_jsonl_dir
from .parity import canon, definition, spark_panes

pytestmark = pytest.mark.spark


def _write(path: Path, rows: list[dict[str, Any]], mtime: int) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.utime(path, (mtime, mtime))


def test_a_batch_reaches_the_engine_in_file_then_line_order(
        spark: Any, tmp_path: Path, settings: Settings) -> None:
    defn = definition(tmp_path, {
        "key": "k", "event_time": "t",
        "watermark": {"strategy": "bounded", "delay": "0s", "scope": "key"},
        "lateness_basis": "event",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "s", "fn": "sum", "of": "v"}],
    }, "k STRING, v BIGINT, t BIGINT")
    first = [{"k": "a", "v": 1, "t": 30000}, {"k": "a", "v": 2, "t": 5000}]
    second = [{"k": "a", "v": 4, "t": 20000}] + [
        {"k": f"c{i % 7}", "v": i, "t": 1000 * i} for i in range(300)]  # the larger file
    (tmp_path / "in").mkdir()
    _write(tmp_path / "in" / "z-first.json", first, 1_700_000_000)
    _write(tmp_path / "in" / "a-second.json", second, 1_700_000_001)

    expected = list(replay_lines(defn, [{"$processing_time": 1000}, *first, *second],
                                 eof_flush=False, arrival=Arrival("batch")))
    want_late = sorted((json.dumps(o["key"]), o["event_time"]) for o in expected
                       if o["type"] == "late")
    # in arrival order a@30000 sets a's watermark: a@5000 and a@20000 are late
    assert ('"a"', 5000) in want_late and ('"a"', 20000) in want_late

    ctx = JobContext.create(defn, settings)
    runner = JobRunner(spark, ctx, RunOptions(
        until_idle=True, buckets=2, source_options={"maxFilesPerTrigger": "2"}))
    runner.run()
    assert not ctx.plan.native
    assert runner.reports[0].input_rows == len(first) + len(second)  # one micro-batch
    late = read_jsonl_dir(Path(ctx.late_path))
    assert sorted((x["key"], x["event_time"]) for x in late) == want_late
    drop = ("emitted_at",)
    assert canon(spark_panes(spark, ctx), drop) == canon(expected, drop)
