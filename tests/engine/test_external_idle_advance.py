"""Idle advance with a host-driven (external) global watermark, as the Spark engine path runs
it: each micro-batch first catches up with the previous batch (its processing time, then the
watermark Spark computed from its records: max event time - delay), then ingests its own
records. The panes must equal replay's (internal watermark) for the same arrival instants."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import Engine, RecordBatch

Instant = tuple[int, list[tuple[str, int]]]


def _defn(window: dict[str, Any], **over: Any) -> Definition:
    base: dict[str, Any] = {
        "name": "t", "key": "team", "event_time": "et",
        "watermark": {"delay": "2s", "idle_advance": True},
        "window": window, "aggregations": [{"name": "n", "fn": "count"}],
    }
    base.update(over)
    return load_definition(base)


def _batch(rows: list[tuple[str, int]], pt: int) -> RecordBatch:
    return RecordBatch(
        keys=[k for k, _ in rows],
        event_times=np.array([t for _, t in rows], dtype=np.int64),
        columns={},
        records=[{"team": k, "et": t} for k, t in rows],
        processing_time=pt,
    )


def _replay(defn: Definition, instants: list[Instant]) -> list[dict[str, Any]]:
    eng = Engine(defn)
    out = []
    for pt, rows in instants:
        out += [e.to_json() for e in eng.ingest(_batch(rows, pt))]
    return out


def _hosted(defn: Definition, instants: list[Instant]) -> list[dict[str, Any]]:
    """The Spark host's protocol, one engine for all keys (one bucket)."""
    eng = Engine(defn, watermark="external")
    out: list[dict[str, Any]] = []
    spark_wm: int | None = None  # Spark's watermark: max event time seen - delay, never back
    prev: int | None = None
    for pt, rows in [*instants, (None, [])]:  # the last: the no-data batch that ends the run
        if prev is not None:
            out += [e.to_json() for e in eng.advance_processing_time(prev)]
        if spark_wm is not None:
            out += [e.to_json() for e in eng.advance_watermark(spark_wm)]
        if pt is None:
            break
        out += [e.to_json() for e in eng.ingest(_batch(rows, pt))]
        top = max(t for _, t in rows) - defn.watermark.delay
        spark_wm = top if spark_wm is None else max(spark_wm, top)
        prev = pt
    return out


def _canon(panes: list[dict[str, Any]]) -> list[str]:
    import json

    return sorted(json.dumps(p, sort_keys=True) for p in panes if p["type"] == "pane")


def test_the_transcripts_idle_scenario_hosted_equals_replay() -> None:
    defn = _defn({"type": "tumbling", "size": "10s"})
    instants: list[Instant] = [(100000, [("a", 5000)]), (108000, [("a", 12000)]),
                               (118000, [("a", 40000)]), (125000, [("b", 41000)])]
    want = _replay(defn, instants)
    # idle advance closed [0,10000) at 108000 (wm 3000 + 8000 = 11000): not by any record
    assert any(p["window_start"] == 0 and p["emitted_at"] == 108000 for p in want)
    assert _canon(_hosted(defn, instants)) == _canon(want)


@pytest.mark.parametrize("window", [
    {"type": "tumbling", "size": "10s"},
    {"type": "hopping", "size": "10s", "step": "5s"},
    {"type": "session", "gap": "4s"},
    {"type": "sliding", "size": "6s"},
])
@pytest.mark.parametrize("seed", range(6))
def test_random_instants_hosted_equals_replay(window: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    defn = _defn(window, allowed_lateness=rng.choice(["0s", "3s"]),
                 trigger={"emit": "custom", "on_time": True, "late": {"count": 1}}
                 if rng.random() < 0.5 else {"emit": "final"})
    instants: list[Instant] = []
    pt, et = 50_000, 0
    for _ in range(25):
        pt += rng.choice([500, 1000, 3000, 7000])
        et += rng.randint(-1000, 4000)
        rows = [(rng.choice("abc"), max(0, et + rng.randint(-6000, 1000)))
                for _ in range(rng.randint(1, 4))]
        instants.append((pt, rows))
    want = _replay(defn, instants)
    assert want, "the scenario emits panes"
    assert _canon(_hosted(defn, instants)) == _canon(want)
