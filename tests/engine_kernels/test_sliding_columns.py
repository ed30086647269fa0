"""Differential tests of the sliding kernel engine's columnar output: every call's
``EmissionColumns`` must give the general engine's objects (``to_emissions()``) and its replay
lines (``json_lines()``), also after a hand-over to the general engine, and ``tidemark replay``
(which takes the columnar path for this engine) must write the general engine's file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from itertools import cycle, islice
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition, Trigger, Watermark, Window
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingKernelEngine
from jobs.engine.records import RecordBatch
from jobs.replay import is_columnar, replay_file
from tests.engine_kernels.strategies import VALUES, event_logs
from tests.engine_kernels.test_sliding_vs_engine import (
    SETTINGS,
    Unit,
    _batch,
    sliding_definitions,
    units,
)

COLUMN_SETTINGS = settings(SETTINGS, max_examples=30)


def _line(e: Any) -> str:
    return json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False)


def _general(defn: Definition, us: list[Unit], external: bool) -> list[list[str]]:
    """Per call (each unit, its watermark advance, the end of input), the general engine's
    output lines."""
    eng = Engine(defn, watermark="external" if external else "internal")
    calls: list[list[str]] = []
    for u in us:
        calls.append([_line(e) for e in eng.ingest(_batch(defn, u))])
        if external and u[1]:
            calls.append([_line(e) for e in eng.advance_watermark(max(r[1] for r in u[1]) - 5)])
    calls.append([_line(e) for e in eng.end_of_input()])
    return calls


def _columnar(defn: Definition, us: list[Unit], external: bool) -> tuple[
        list[list[str]], list[list[str]], SlidingKernelEngine]:
    """The same calls on the kernel engine's columnar API: per call, ``json_lines()`` and the
    lines of ``to_emissions()``."""
    eng = SlidingKernelEngine(defn, watermark="external" if external else "internal")
    texts: list[list[str]] = []
    objects: list[list[str]] = []
    outs = []
    for u in us:
        outs.append(eng.ingest_columns(_batch(defn, u)))
        if external and u[1]:
            outs.append(eng.advance_watermark_columns(max(r[1] for r in u[1]) - 5))
    outs.append(eng.end_of_input_columns())
    for out in outs:
        assert out.before == []
        texts.append(out.panes.json_lines())
        objects.append([_line(e) for e in out.to_emissions()])
    return texts, objects, eng


@COLUMN_SETTINGS
@given(defn=sliding_definitions(), us=units(), external=st.booleans())
def test_columns_are_the_general_engines_output_call_by_call(
    defn: Definition, us: list[Unit], external: bool
) -> None:
    texts, objects, eng = _columnar(defn, us, external)
    expected = _general(defn, us, external)
    assert eng.general is None
    assert objects == expected
    assert texts == expected


ODD = st.one_of(VALUES, st.booleans(), st.sampled_from([2**70, "a"]))


@COLUMN_SETTINGS
@given(us=units(ODD), external=st.booleans())
def test_columns_after_a_hand_over_are_the_general_engines(
    us: list[Unit], external: bool
) -> None:
    defn = Definition(
        name="odd", key="k", event_time="t", window=Window("sliding", size=7),
        aggregations=(Aggregation("lo", "min", "x"), Aggregation("hi", "max", "x"),
                      Aggregation("nx", "count", "x"), Aggregation("f", "first", "x")),
        watermark=Watermark(strategy="source" if external else "bounded", delay=3),
        allowed_lateness=5, trigger=Trigger(emit="final"),
    )
    texts, objects, eng = _columnar(defn, us, external)
    expected = _general(defn, us, external)
    if any(isinstance(r[2], (bool, str)) or r[2] == 2**70 for u in us for r in u[1]):
        assert eng.general is not None
    assert objects == expected
    assert texts == expected


@settings(SETTINGS, max_examples=10)
@given(defn=sliding_definitions(), log=event_logs())
def test_replay_file_writes_the_general_engines_lines(
    defn: Definition, log: list[dict[str, Any]]
) -> None:
    import tempfile

    assert is_columnar(make_engine(defn))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "in.jsonl")
        src.write_text("".join(json.dumps(r) + "\n" for r in log), encoding="utf-8")
        auto, general = Path(tmp, "auto.jsonl"), Path(tmp, "general.jsonl")
        s_auto = replay_file(defn, str(src), str(auto), engine="auto")
        s_general = replay_file(defn, str(src), str(general), engine="general")
        assert auto.read_text(encoding="utf-8") == general.read_text(encoding="utf-8")
        assert s_auto == s_general


@settings(SETTINGS, max_examples=5)
@given(defn=sliding_definitions(), us=units())
def test_late_lines_without_records_and_late_counts_over_many_units(
    defn: Definition, us: list[Unit]
) -> None:
    """Batches given without their records show ``record: null`` on late
    lines; the per-window late counts, kept per unit until summed, drain to the general
    engine's after more units than the engine keeps unsummed."""
    kernel, general = SlidingKernelEngine(defn), Engine(defn)
    # 70 units: the same records again and again (late from their second round on)
    for i, (pt, rows) in enumerate(islice(cycle(us), 70)):
        pt += 1000 * (i // len(us))
        batch = replace(_batch(defn, (pt, rows)), records=None)
        out = kernel.ingest_columns(batch).panes
        expected = [_line(e) for e in general.ingest(batch)]
        assert out.json_lines() == expected
        assert [_line(e) for e in out.to_emissions()] == expected
    assert kernel.drain_late_counts() == general.drain_late_counts()
    assert kernel.late_totals() == general.late_totals()


class _Watched(Sequence[dict[str, Any]]):
    """Records that note which of them were read (as the Spark path's lazy records, which
    build a record only when it is asked for)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows, self.read = rows, set()

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        self.read.add(i)
        return self.rows[i]


def test_only_the_late_records_are_read() -> None:
    defn = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"),),
                      watermark=Watermark(delay=0), trigger=Trigger(emit="final"))
    kernel, general = SlidingKernelEngine(defn), Engine(defn)
    for rows in ([("a", 0), ("a", 20)], [("a", 21), ("a", 15), ("b", 3), ("a", 22)]):
        given = [{"k": k, "t": t} for k, t in rows]
        watched = _Watched(given)
        batch = RecordBatch(keys=[k for k, _ in rows],
                            event_times=np.array([t for _, t in rows], dtype=np.int64),
                            columns={}, records=watched, processing_time=1)
        out = kernel.ingest_columns(batch).panes
        batch.records = given
        assert out.json_lines() == [_line(e) for e in general.ingest(batch)]
    assert watched.read == {1, 2}  # (a, 15) and (b, 3): behind the watermark 20
