"""``watermark.idle_advance`` on the vectorized final engine: the watermark also moves with
processing time (``base + (now - base_pt)``), from ingest calls and clock ticks alike; output
(panes fired by the clock before a unit's late lines, ``emitted_at``), late counts and open
windows must be the general engine's, across snapshot/restore and externally driven hosts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine.engine import Engine
from jobs.engine.state import EngineState
from jobs.engine.vectorized import VectorizedEngine, qualifies
from jobs.engine.vectorized.engine import VectorizedState
from tests.engine_vectorized.strategies import Instant, definitions, instants
from tests.engine_vectorized.test_vs_engine import observe
from tests.engine_vectorized.test_vs_reference import batch_of, canon


@st.composite
def idle_definitions(draw: st.DrawFn) -> Definition:
    base = draw(definitions())
    wm = dataclasses.replace(base.watermark, idle_advance=True, scope="global")
    return dataclasses.replace(base, watermark=wm)


def run(defn: Definition, insts: list[Instant], ticks: list[int | None],
        restore_at: int | None, vectorized: bool, mode: str = "internal",
        marks: list[int | None] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    eng: Any = (VectorizedEngine if vectorized else Engine)(defn, watermark=mode)
    out: list[dict[str, Any]] = []
    seen = []
    for i, inst in enumerate(insts):
        if i == restore_at:
            snap = json.loads(json.dumps(eng.state.snapshot()))
            if not vectorized:
                eng = Engine(defn, state=EngineState.restore(snap), watermark=mode)
            elif snap.get("engine") == "vectorized":
                eng = VectorizedEngine(defn, state=VectorizedState.restore(snap), watermark=mode)
            else:
                eng = VectorizedEngine(defn, state=snap, watermark=mode)
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        if marks is not None and marks[i] is not None:
            out.extend(e.to_json() for e in eng.advance_watermark(marks[i]))
        tick = ticks[i]
        if tick is not None:  # the clock moves between arrivals
            out.extend(e.to_json() for e in eng.advance_processing_time(inst.processing_time + tick))
        seen.append(observe(eng))
    out.extend(e.to_json() for e in eng.end_of_input())
    seen.append(observe(eng))
    return canon(out), seen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=idle_definitions(), insts=instants(), data=st.data())
def test_idle_advance_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    assert qualifies(defn)
    ticks = [data.draw(st.one_of(st.none(), st.integers(0, 40))) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True)
    g = run(defn, insts, ticks, None, vectorized=False)
    assert v == g


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=idle_definitions(), insts=instants(), data=st.data())
def test_idle_advance_with_external_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """A host's watermarks become idle bases; the clock moves the watermark past them."""
    ticks = [data.draw(st.one_of(st.none(), st.integers(0, 40))) for _ in insts]
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True, mode="external", marks=marks)
    g = run(defn, insts, ticks, None, vectorized=False, mode="external", marks=marks)
    assert v == g


def test_a_quiet_stream_closes_its_window_by_the_clock() -> None:
    """No record after t=5: the clock alone moves the watermark past the window's end."""
    from jobs.definition.model import Aggregation, Trigger, Watermark, Window

    defn = Definition(
        name="idle", window=Window("tumbling", size=10), key="k", event_time="t",
        aggregations=(Aggregation("n", "count"), Aggregation("xs", "collect", "x")),
        watermark=Watermark(delay=2, idle_advance=True), trigger=Trigger(emit="final"),
    )
    eng = VectorizedEngine(defn)
    assert eng.ingest(batch_of(defn, Instant(100, [("a", 5, "p"), ("a", 1, "q")]))) == []
    assert eng.watermark == 3 and eng.advance_processing_time(106) == []  # wm 3 + 6 = 9
    (pane,) = eng.advance_processing_time(107)  # wm 10 = end of [0, 10)
    assert pane.values == {"n": 2, "xs": ["q", "p"]}
    assert pane.emitted_at == 107 and pane.watermark == 10
