"""The vectorized final engine under the processing clock (``event_time: processing``: event
time is the unit's processing time, the watermark is the clock) and under ``scope: key`` with
idle advance (each key's watermark moves with the clock from its own base): output (panes,
late lines, ``emitted_at``), late counts and open windows must be the general engine's, across
snapshot/restore, clock ticks and externally driven hosts."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import PROCESSING, Definition, Watermark
from jobs.engine import Engine, make_engine
from jobs.engine.vectorized import VectorizedEngine, qualifies
from tests.engine_vectorized.strategies import Instant, definitions, instants
from tests.engine_vectorized.test_idle_advance_vs_engine import run
from tests.engine_vectorized.test_vs_reference import batch_of


@st.composite
def clock_definitions(draw: st.DrawFn) -> Definition:
    """What a user can write with the processing clock (no delay, lateness or key scope)."""
    base = draw(definitions())
    return dataclasses.replace(
        base, event_time=PROCESSING, watermark=Watermark(delay=0), allowed_lateness=0,
        lateness_basis="window",
    )


@st.composite
def key_idle_definitions(draw: st.DrawFn) -> Definition:
    base = draw(definitions())
    wm = dataclasses.replace(base.watermark, idle_advance=True, scope="key")
    return dataclasses.replace(base, watermark=wm)


def _one_record_units(insts: list[Instant]) -> list[Instant]:
    """Each record its own unit at its instant's processing time (``--arrival record``)."""
    out = []
    for inst in insts:
        out.extend(Instant(inst.processing_time, [r]) for r in inst.rows)
        if not inst.rows:
            out.append(inst)
    return out


def _ticks(data: st.DataObject, n: int) -> list[int | None]:
    return [data.draw(st.one_of(st.none(), st.integers(0, 40))) for _ in range(n)]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=clock_definitions(), insts=instants(), data=st.data())
def test_processing_clock_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    assert qualifies(defn)
    ticks = _ticks(data, len(insts))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True)
    g = run(defn, insts, ticks, None, vectorized=False)
    assert v == g


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=clock_definitions(), insts=instants(), data=st.data())
def test_processing_clock_with_external_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """The Spark host drives the watermark; records still take the clock as event time, so
    a watermark ahead of the clock makes them late."""
    ticks = _ticks(data, len(insts))
    marks = [data.draw(st.one_of(st.none(), st.integers(900, 1500))) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True, mode="external", marks=marks)
    g = run(defn, insts, ticks, None, vectorized=False, mode="external", marks=marks)
    assert v == g


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=key_idle_definitions(), insts=instants(), data=st.data())
def test_key_scope_idle_advance_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """One record a unit runs on the arrays (each key's own base and clock); a unit of
    several records hands the state over, idle bases included."""
    if data.draw(st.booleans()):
        insts = _one_record_units(insts)
    ticks = _ticks(data, len(insts))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True)
    g = run(defn, insts, ticks, None, vectorized=False)
    assert v == g


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=key_idle_definitions(), insts=instants(), data=st.data())
def test_key_scope_idle_advance_with_external_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """A host-driven watermark is one watermark: the host's marks are the idle bases."""
    ticks = _ticks(data, len(insts))
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    v = run(defn, insts, ticks, None, vectorized=True, mode="external", marks=marks)
    g = run(defn, insts, ticks, None, vectorized=False, mode="external", marks=marks)
    assert v == g


def test_a_processing_clock_job_runs_vectorized_and_closes_its_window_by_the_clock() -> None:
    defn = load_definition({
        "name": "clocked", "key": "k", "event_time": "processing",
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}, {"name": "s", "fn": "sum", "of": "v"}],
    })
    eng = make_engine(defn)
    assert isinstance(eng, VectorizedEngine)
    rows = [("a", 999, 1), ("a", -5, 2)]  # event times in the data are ignored
    assert eng.ingest(batch_of(defn, Instant(103, rows))) == []
    assert eng.advance_processing_time(109) == []
    (pane,) = eng.advance_processing_time(111)  # the clock passes the end of [100, 110)
    assert (pane.window_start, pane.window_end, pane.values) == (100, 110, {"n": 2, "s": 3})
    assert pane.emitted_at == 111 and pane.watermark == 111


def test_each_key_moves_with_the_clock_from_its_own_base() -> None:
    defn = load_definition({
        "name": "keyed_idle", "key": "k", "event_time": "t",
        "watermark": {"strategy": "bounded", "delay": 0, "scope": "key", "idle_advance": True},
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
    })
    eng, ref = VectorizedEngine(defn), Engine(defn)
    seen = []
    for e in (eng, ref):
        out = e.ingest(batch_of(defn, Instant(1000, [("a", 8, None)])))
        out += e.ingest(batch_of(defn, Instant(1000, [("b", 2, None)])))
        # a's watermark 8 + 2 = 10 passes [0, 10); b's 2 + 2 does not
        out += e.advance_processing_time(1002)
        seen.append([p.to_json() for p in out])
    assert seen[0] == seen[1] and [p["key"] for p in seen[0]] == ["a"]
    assert eng.general is None  # ran on the arrays throughout


@st.composite
def key_definitions(draw: st.DrawFn) -> Definition:
    base = draw(definitions())
    wm = dataclasses.replace(base.watermark, idle_advance=draw(st.booleans()), scope="key")
    return dataclasses.replace(base, watermark=wm)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=key_definitions(), insts=instants(), data=st.data())
def test_key_scope_units_of_several_records_match_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """Within a unit a key's records move its watermark one at a time: late lines and the
    panes each record fires interleave in arrival order, each pane with its record's
    watermark; no hand-over."""
    assert qualifies(defn)
    ticks = _ticks(data, len(insts))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True)
    g = run(defn, insts, ticks, None, vectorized=False)
    assert v == g


def test_a_hand_over_keeps_each_keys_idle_base() -> None:
    """Input the arrays cannot hold (a string for ``max``) converts the state: each key's
    idle base and its time go with it, so the clock goes on moving every key as before."""
    defn = load_definition({
        "name": "keyed_idle", "key": "k", "event_time": "t",
        "watermark": {"strategy": "bounded", "delay": 0, "scope": "key", "idle_advance": True},
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "hi", "fn": "max", "of": "x"}],
    })
    eng, ref = VectorizedEngine(defn), Engine(defn)
    seen = []
    for e in (eng, ref):
        out = e.ingest(batch_of(defn, Instant(1000, [("a", 3, 1), ("b", 12, 2)])))
        out += e.ingest(batch_of(defn, Instant(1001, [("b", 14, "z")])))
        out += e.advance_processing_time(1006)  # a: 3 + 6 = 9, b: 14 + 5 = 19: nothing
        out += e.advance_processing_time(1008)  # a: 11 passes [0, 10), b: 21 passes [10, 20)
        seen.append([p.to_json() for p in out])
    assert eng.general is not None  # handed over at the string
    assert seen[0] == seen[1]
    assert [(p["key"], p["window_start"], p["emitted_at"]) for p in seen[0]] == [
        ("a", 0, 1008), ("b", 10, 1008)]
