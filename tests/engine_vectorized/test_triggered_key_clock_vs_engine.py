"""Differential tests: the compiled triggered engine under the processing clock
(``event_time: processing``: a record's event time is its unit's processing time, the
watermark is the clock, or the host's under ``watermark="external"``) and under a source
watermark (``strategy: source``: only ``advance_watermark`` moves it) and with idle advance
(``watermark.idle_advance``: the watermark also moves with the clock from its last base) must be
indistinguishable from the general engine: the same panes (retractions included), late lines
and ``emitted_at`` in the same order, the same late counts, open windows, watermark and max
event time after every unit and clock tick, across a snapshot/restore in the middle, and
through replay in every arrival mode."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import msgspec
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import PROCESSING, Definition, Watermark
from jobs.engine import make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.engine import Engine
from jobs.engine.state import EngineState
from jobs.engine.vectorized.triggered import TriggeredEngine, qualifies_triggered
from jobs.engine.vectorized.triggered_state import load_table, table_state
from jobs.replay import replay_lines
from tests.engine_vectorized.strategies import Instant, instants
from tests.engine_vectorized.test_triggered_vs_engine import (
    _lines,
    _replay_definition,
    triggered_definitions,
)
from tests.engine_vectorized.test_vs_engine import observe
from tests.engine_vectorized.test_vs_reference import batch_of, canon

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _clocked(defn: Definition) -> Definition:
    """``defn`` on the processing clock (what a user can write with it: no delay, no
    allowed lateness, window basis, global scope, no idle advance)."""
    return dataclasses.replace(defn, event_time=PROCESSING, watermark=Watermark(delay=0),
                               allowed_lateness=0, lateness_basis="window")


def _sourced(defn: Definition) -> Definition:
    return dataclasses.replace(defn, watermark=Watermark(strategy="source"))


@st.composite
def source_definitions(draw: st.DrawFn) -> Definition:
    return _sourced(draw(triggered_definitions()))


@st.composite
def idle_definitions(draw: st.DrawFn) -> Definition:
    defn = draw(triggered_definitions())
    return dataclasses.replace(defn, watermark=dataclasses.replace(defn.watermark,
                                                                   idle_advance=True))


@st.composite
def clock_definitions(draw: st.DrawFn) -> Definition:
    return _clocked(draw(triggered_definitions()))


def run(defn: Definition, insts: list[Instant], ticks: list[int | None],
        restore_at: int | None, triggered: bool, mode: str = "internal",
        marks: list[int | None] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Feed ``insts``; after unit ``i`` the host hands in ``marks[i]`` (external mode) and
    the clock moves ``ticks[i]`` ms past the unit's processing time."""
    eng: Any = TriggeredEngine(defn, watermark=mode) if triggered else Engine(
        defn, watermark=mode)  # type: ignore[arg-type]
    out: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    for i, inst in enumerate(insts):
        if triggered and i == restore_at:
            snap = json.loads(json.dumps(eng.state.snapshot()))
            eng = make_engine(defn, EngineState.restore(snap), watermark=mode)  # type: ignore[arg-type]
            assert isinstance(eng, TriggeredEngine)
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        seen.append(observe(eng))
        if marks is not None and marks[i] is not None:
            out.extend(e.to_json() for e in eng.advance_watermark(marks[i]))
            seen.append(observe(eng))
        tick = ticks[i]
        if tick is not None:
            out.extend(e.to_json() for e in eng.advance_processing_time(
                inst.processing_time + tick))
            seen.append(observe(eng))
    out.extend(e.to_json() for e in eng.end_of_input())
    seen.append(observe(eng))
    return canon(out), seen


def _ticks(data: st.DataObject, n: int) -> list[int | None]:
    return [data.draw(st.one_of(st.none(), st.sampled_from([0, 1, 7, 30, 100]))) for _ in range(n)]


def check_same_as_general(defn: Definition, insts: list[Instant], data: st.DataObject,
                          mode: str = "internal", marks_in: tuple[int, int] | None = None) -> None:
    """Both engines on the same units, clock ticks and (with ``marks_in``) watermarks handed
    in after units, drawn from that range; the compiled one snapshotted and restored at a
    drawn unit: the same output and observations after every unit."""
    ticks = _ticks(data, len(insts))
    marks = None
    if marks_in is not None:
        marks = [data.draw(st.one_of(st.none(), st.integers(*marks_in))) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    t = run(defn, insts, ticks, restore_at, triggered=True, mode=mode, marks=marks)
    g = run(defn, insts, ticks, None, triggered=False, mode=mode, marks=marks)
    assert t == g


@SETTINGS
@given(defn=clock_definitions(), insts=instants(), data=st.data())
def test_processing_clock_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    assert qualifies_triggered(defn)
    check_same_as_general(defn, insts, data)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=clock_definitions(), insts=instants(), data=st.data())
def test_processing_clock_with_external_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """The Spark host drives the watermark; records still take the clock as event time, so
    a host watermark ahead of the clock makes them late."""
    check_same_as_general(defn, insts, data, "external", marks_in=(900, 1500))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=clock_definitions(), insts=instants(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_processing_clock_replay_in_every_arrival_mode_equals_general(
    defn: Definition, insts: list[Instant], arrival: str
) -> None:
    t = defn.trigger
    assume(t.emit == "current" or t.early is not None or t.on_time or t.late is not None)
    rdefn = _clocked(_replay_definition(defn))
    assert qualifies_triggered(rdefn)
    lines = _lines(insts)
    mode = Arrival.parse(arrival)
    auto = list(replay_lines(rdefn, lines, engine="auto", arrival=mode))
    general = list(replay_lines(rdefn, lines, engine="general", arrival=mode))
    assert canon(auto) == canon(general)


def test_a_processing_clock_job_with_early_panes_runs_compiled() -> None:
    """A hand-checked case: early ``count: 2`` on a 10 ms tumbling window on the clock; the
    event times in the data are ignored and the clock passing the window's end fires it."""
    defn = load_definition({
        "name": "clocked", "key": "k", "event_time": "processing",
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
        "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True},
        "accumulation": "accumulating",
    })
    eng = make_engine(defn)
    assert isinstance(eng, TriggeredEngine)
    (early,) = eng.ingest(batch_of(defn, Instant(103, [("a", 999, 1), ("a", -5, 2)])))
    assert (early.timing, early.window_start, early.values) == ("EARLY", 100, {"n": 2})
    assert eng.ingest(batch_of(defn, Instant(105, [("a", 7, 1)]))) == []
    assert eng.advance_processing_time(109) == []
    (pane,) = eng.advance_processing_time(111)  # the clock passes the end of [100, 110)
    assert (pane.timing, pane.window_start, pane.values) == ("ON_TIME", 100, {"n": 3})
    assert pane.emitted_at == 111 and pane.watermark == 111
    assert eng.general is None


@SETTINGS
@given(defn=source_definitions(), insts=instants(), data=st.data())
def test_source_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """Records never move a source watermark; the source's marks do (processing-time
    triggers still fire on clock ticks)."""
    assert qualifies_triggered(defn)
    check_same_as_general(defn, insts, data, marks_in=(-30, 150))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=source_definitions(), insts=instants(), data=st.data(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_source_watermark_replay_equals_general(
    defn: Definition, insts: list[Instant], data: st.DataObject, arrival: str
) -> None:
    t = defn.trigger
    assume(t.emit == "current" or t.early is not None or t.on_time or t.late is not None)
    rdefn = _sourced(_replay_definition(defn))
    assert qualifies_triggered(rdefn)
    lines = []
    for line in _lines(insts):
        lines.append(line)
        if line.startswith('{"$processing_time"') and data.draw(st.booleans()):
            lines.append(json.dumps({"$watermark": data.draw(st.integers(-30, 150))}))
    mode = Arrival.parse(arrival)
    auto = list(replay_lines(rdefn, lines, engine="auto", arrival=mode))
    general = list(replay_lines(rdefn, lines, engine="general", arrival=mode))
    assert canon(auto) == canon(general)


@SETTINGS
@given(defn=idle_definitions(), insts=instants(), data=st.data())
def test_idle_advance_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """Clock ticks move the watermark from the last record's candidate, firing on-time and
    late panes and expiring windows between units; idle bases survive a snapshot."""
    assert qualifies_triggered(defn)
    check_same_as_general(defn, insts, data)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=idle_definitions(), insts=instants(), data=st.data())
def test_idle_advance_with_external_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """The Spark host's mode: the host's watermarks are the idle bases."""
    check_same_as_general(defn, insts, data, "external", marks_in=(-30, 150))


def test_idle_base_survives_the_spark_table_form() -> None:
    """The idle base travels in the table form the Spark host stores (through MessagePack):
    the resumed engine's clock moves the watermark from the same base as the general
    engine's; a table written without the idle fields still loads (no base yet)."""
    defn = load_definition({
        "name": "idle", "key": "k", "event_time": "t",
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
        "watermark": {"delay": 0, "idle_advance": True},
        "trigger": {"emit": "custom", "early": {"count": 1}, "on_time": True},
        "accumulation": "retracting",
    })
    eng, ref = make_engine(defn), Engine(defn)
    assert isinstance(eng, TriggeredEngine)
    first = Instant(1000, [("a", 3, 1), ("a", 8, 1)])
    assert [e.to_json() for e in eng.ingest(batch_of(defn, first))] == [
        e.to_json() for e in ref.ingest(batch_of(defn, first))]
    data = msgspec.msgpack.decode(msgspec.msgpack.encode(table_state(eng)))
    resumed = TriggeredEngine(defn)
    load_table(resumed, data)
    assert resumed.advance_processing_time(1001) == ref.advance_processing_time(1001) == []
    # the base 8 at 1000: at 1002 the watermark is 10 and passes [0, 10)
    got, want = resumed.advance_processing_time(1002), ref.advance_processing_time(1002)
    assert [e.to_json() for e in got] == [e.to_json() for e in want]
    assert [(p.timing, p.retraction, p.values, p.watermark) for p in got] == [
        ("EARLY", True, {"n": 2}, 10), ("ON_TIME", False, {"n": 2}, 10)]
    old = {k: v for k, v in data.items() if k not in ("idle_base", "idle_base_pt")}
    older = TriggeredEngine(defn)
    load_table(older, old)
    assert older.advance_processing_time(5000) == []  # no base: the clock moves nothing
