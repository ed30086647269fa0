"""The other sinks and the other source on real Spark: ``sink.kind`` catalog and console on both
execution paths (the same final definition, forced onto the engine path for the second run;
panes equal replay's, written once per batch), and Spark's ``rate`` source
(exact per-window counts follow from how the rate source spaces its timestamps)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.catalog import Catalog, PaneRecord
from jobs.config import Settings
from jobs.definition import canonical_json, load_definition
from jobs.spark.context import JobContext
from jobs.spark.runner import JobRunner, RunOptions

from .conftest import land, run_until_panes
from .parity import canon, definition, replay_output, spark_run

pytestmark = pytest.mark.spark

INSTANTS = [
    (1_000, [{"k": "a", "v": 1, "et": 1_000}, {"k": "b", "v": 2, "et": 2_000}]),
    (2_000, [{"k": "a", "v": 3, "et": 4_000}, {"k": "a", "v": 4, "et": 12_000}]),
    (3_000, [{"k": "b", "v": 5, "et": 13_000}, {"k": "a", "v": 6, "et": 26_000}]),
]


def _spec(sink: str) -> dict[str, Any]:
    return {
        "key": "k", "event_time": "et", "watermark": {"delay": "1s"},
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
        "sink": {"kind": sink},
    }


@pytest.mark.parametrize("engine", [False, True], ids=["native", "engine"])
def test_catalog_sink_holds_the_replay_panes_once(spark: Any, tmp_path: Path,
                                                  settings: Settings, engine: bool) -> None:
    defn = definition(tmp_path, _spec("catalog"), "k STRING, v INT, et BIGINT")
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", upgrade=True)
    try:
        info = catalog.create_job(canonical_json(defn), actor="test")
        ctx = JobContext.create(defn, settings, version=info.number, store=info.store_name,
                               force_engine=engine)
        assert ctx.plan.native is not engine
        land(tmp_path / "in", [[{**r, "arrival": t} for r in recs] for t, recs in INSTANTS])
        written: list[int] = []

        def writer(batch_id: int, panes: list[dict[str, Any]]) -> None:
            written.append(batch_id)
            catalog.write_panes(ctx.store, batch_id, [PaneRecord.from_json(p) for p in panes])

        runner = JobRunner(spark, ctx, RunOptions(until_idle=True, arrival_column="arrival",
                                                  buckets=2), catalog_writer=writer)
        runner.run()
        stored = catalog.panes("parity")
        assert not Path(ctx.panes_path).exists(), "a catalog sink writes no Parquet results"
        got = [{"type": "pane", "key": p.key, "window_start": p.window_start,
                "window_end": p.window_end, "timing": p.timing, "pane_index": p.pane_index,
                "is_first": p.is_first, "is_last": p.is_last, "retraction": p.retraction,
                "values": p.values, "watermark": p.watermark}
               for p in (s.pane for s in stored)]
        assert {s.store for s in stored} == {ctx.store} and {s.version for s in stored} == {1}
        expected = [e for e in replay_output(defn, INSTANTS) if e["type"] == "pane"]
        # emitted a micro-batch after the one whose records closed the window (docs/spark.md)
        drop = ("emitted_at", "watermark", "first_event_time", "last_event_time")
        assert canon(got, drop=drop) == canon(expected, drop=drop)
        assert {s.pane.window_start for s in stored} >= {0, 10_000}
        # a batch written twice (a re-run after a crash) leaves the panes as they were
        again = catalog.write_panes(ctx.store, written[-1], [])
        assert again is False
        assert len(catalog.panes("parity")) == len(stored)
    finally:
        catalog.close()


@pytest.mark.parametrize("engine", [False, True], ids=["native", "engine"])
def test_console_sink_prints_each_pane_as_replay_json(spark: Any, tmp_path: Path,
                                                      settings: Settings, engine: bool,
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    defn = definition(tmp_path, _spec("console"), "k STRING, v INT, et BIGINT")
    runner, ctx = spark_run(spark, tmp_path, defn, INSTANTS, settings, force_engine=engine)
    assert ctx.plan.native is not engine
    out = capfd.readouterr().out
    printed = [json.loads(line) for line in out.splitlines() if line.startswith('{"')]
    assert printed, out[-2000:]
    assert all(p["type"] == "pane" for p in printed)
    expected = [e for e in replay_output(defn, INSTANTS) if e["type"] == "pane"]
    drop = ("emitted_at", "watermark", "first_event_time", "last_event_time")
    assert canon(printed, drop=drop) == canon(expected, drop=drop)
    assert sum(r.panes for r in runner.reports) == len(printed)
    assert not Path(ctx.panes_path).exists()


@pytest.mark.heavy  # runs on wall-clock time (a processing-time trigger), ~1-2 minutes
def test_rate_source_counts_every_generated_row(spark: Any, tmp_path: Path,
                                                settings: Settings) -> None:
    """Spark's rate source spaces the timestamps of ``rowsPerSecond`` rows evenly over each
    second, so every complete 1-second window holds exactly ``rowsPerSecond`` rows: with
    ``value % 3`` as key and 30 rows/s, exactly 10 per key and window, sums of consecutive
    values. Runs with a processing-time trigger until a few windows are final, then stops
    gracefully (SIGTERM-like)."""
    defn = load_definition({
        "name": "rated",
        "source": {"kind": "rate", "options": {"rowsPerSecond": "30", "numPartitions": "2"}},
        "key": "value % 3", "event_time": "timestamp", "watermark": {"delay": "200ms"},
        "window": {"type": "tumbling", "size": "1s"},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "lo", "fn": "min", "of": "value"},
                         {"name": "hi", "fn": "max", "of": "value"}],
    })
    ctx = JobContext.create(defn, settings)
    assert ctx.plan.native
    runner = JobRunner(spark, ctx, RunOptions(trigger_interval="500 milliseconds",
                                              poll_seconds=0.2))
    assert run_until_panes(runner, 12) == "stopped"
    rows = [r.asDict() for r in spark.read.parquet(ctx.panes_path).collect()]
    assert len(rows) >= 12, rows
    starts = sorted({r["window_start"] for r in rows})
    first = starts[0]  # the stream starts mid-second: its first window is partial
    full = [r for r in rows if r["window_start"] != first]
    assert len(full) >= 6
    for r in full:
        values = json.loads(r["values"])
        key = json.loads(r["key"])
        assert r["window_end"] - r["window_start"] == 1000 and r["window_start"] % 1000 == 0
        assert values["n"] == 10, r
        # 10 values with the same remainder: consecutive members of that residue class
        assert values["hi"] - values["lo"] == 27 and values["lo"] % 3 == key, r
    by_window: dict[int, list[int]] = {}
    for r in full:
        by_window.setdefault(r["window_start"], []).append(json.loads(r["key"]))
    assert all(sorted(keys) == [0, 1, 2] for keys in by_window.values()), by_window
    assert sum(rep.dead_letters for rep in runner.reports) == 0
