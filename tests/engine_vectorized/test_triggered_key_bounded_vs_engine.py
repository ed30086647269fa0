"""Differential tests: the compiled triggered engine under per-key bounded watermarks
(``watermark.scope: key``, ``strategy: bounded``, with and without idle advance) must be
indistinguishable from the general engine: each key's watermark moves with its own records
inside a unit and fires that key's on-time / late / expiry panes between its records, so
panes (retractions included), late lines and ``emitted_at`` come in the same order, with the
same late counts, open windows, watermark and max event time after every unit and clock
tick, across a snapshot/restore, and through the Spark host's table form."""

from __future__ import annotations

import dataclasses

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.engine import Engine
from jobs.engine.vectorized.triggered import TriggeredEngine, qualifies_triggered
from jobs.engine.vectorized.triggered_qualify import SIDE_FNS, triggered_problems
from jobs.engine.vectorized.triggered_state import load_table, table_state
from jobs.replay import replay_lines
from jobs.spark.engine_path.state_blob import encode_engine, general_state, restore_engine
from tests.engine_vectorized.strategies import Instant, instants
from tests.engine_vectorized.test_triggered_key_clock_vs_engine import check_same_as_general
from tests.engine_vectorized.test_triggered_vs_engine import (
    _lines,
    _replay_definition,
    triggered_definitions,
)
from tests.engine_vectorized.test_vs_reference import batch_of, canon

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _key_scoped(defn: Definition, idle: bool) -> Definition:
    aggs = tuple(a for a in defn.aggregations if a.fn not in SIDE_FNS)
    wm = dataclasses.replace(defn.watermark, scope="key", idle_advance=idle)
    return dataclasses.replace(defn, watermark=wm, aggregations=aggs or defn.aggregations[:0])


@st.composite
def key_definitions(draw: st.DrawFn, idle: bool) -> Definition:
    defn = _key_scoped(draw(triggered_definitions()), idle)
    if not defn.aggregations:
        defn = dataclasses.replace(defn, aggregations=draw(triggered_definitions()).aggregations)
        defn = _key_scoped(defn, idle)
    return defn


@SETTINGS
@given(defn=key_definitions(idle=False), insts=instants(), data=st.data())
def test_key_bounded_watermarks_match_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """Tumbling / hopping / global x count / after / every x every accumulation mode and
    lateness basis, clock ticks firing processing-time timers at each key's watermark."""
    if not qualifies_triggered(defn):
        assert any("aggregations." in p for p in triggered_problems(defn))
        return
    check_same_as_general(defn, insts, data)


@SETTINGS
@given(defn=key_definitions(idle=True), insts=instants(), data=st.data())
def test_key_bounded_idle_advance_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """Clock ticks move every key's watermark from its own last base."""
    if not qualifies_triggered(defn):
        assert any("aggregations." in p for p in triggered_problems(defn))
        return
    check_same_as_general(defn, insts, data)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=key_definitions(idle=False), insts=instants(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_key_bounded_replay_in_every_arrival_mode_equals_general(
    defn: Definition, insts: list[Instant], arrival: str
) -> None:
    rdefn = _key_scoped(_replay_definition(defn), False)
    if not qualifies_triggered(rdefn):
        return
    assert isinstance(make_engine(rdefn), TriggeredEngine)
    lines = _lines(insts)
    mode = Arrival.parse(arrival)
    auto = list(replay_lines(rdefn, lines, engine="auto", arrival=mode))
    general = list(replay_lines(rdefn, lines, engine="general", arrival=mode))
    assert canon(auto) == canon(general)


def _hand_checked(idle: bool) -> Definition:
    return load_definition({
        "name": "keyed", "key": "k", "event_time": "t",
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
        "watermark": {"delay": 0, "scope": "key", "idle_advance": idle},
        "allowed_lateness": 5,
        "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True,
                    "late": {"count": 1}},
        "accumulation": "accumulating",
    })


def test_a_key_watermark_fires_between_the_records_of_one_unit() -> None:
    """Key a's record at 12 passes a's [0, 10) before a's next record of the unit (late for
    a, pane LATE); key b's watermark is its own, so b's record at 3 is on time."""
    defn = _hand_checked(False)
    eng = make_engine(defn)
    assert isinstance(eng, TriggeredEngine)
    unit = Instant(100, [("a", 1, 1), ("a", 12, 1), ("b", 3, 1), ("a", 4, 1)])
    got = [(e.key, e.timing, e.window_start, e.values, e.watermark)
           for e in eng.ingest(batch_of(defn, unit))]
    assert got == [("a", "ON_TIME", 0, {"n": 1}, 12), ("a", "LATE", 0, {"n": 2}, 12)]
    assert eng.general is None


def test_key_watermarks_survive_the_spark_table_form() -> None:
    """Per-key watermarks and idle bases travel in the table form (through MessagePack):
    the resumed engine judges records and moves watermarks as the general engine does."""
    defn = _hand_checked(True)
    eng, ref = make_engine(defn), Engine(defn)
    assert isinstance(eng, TriggeredEngine)
    first = Instant(1000, [("a", 3, 1), ("a", 8, 1), ("b", 15, 1)])
    assert [e.to_json() for e in eng.ingest(batch_of(defn, first))] == [
        e.to_json() for e in ref.ingest(batch_of(defn, first))]
    data = msgspec.msgpack.decode(msgspec.msgpack.encode(table_state(eng)))
    resumed = TriggeredEngine(defn)
    load_table(resumed, data)
    assert resumed.state.snapshot() == ref.state.snapshot()
    later = Instant(1001, [("b", 12, 1), ("a", 9, 1), ("a", 2, 1)])
    want = [e.to_json() for e in ref.ingest(batch_of(defn, later))]
    assert [e.to_json() for e in resumed.ingest(batch_of(defn, later))] == want
    assert want  # b's 12 is late for b alone; a's 9 and 2 are on time for a
    got, exp = resumed.advance_processing_time(1004), ref.advance_processing_time(1004)
    assert [e.to_json() for e in got] == [e.to_json() for e in exp] != []


def test_key_watermarks_survive_the_spark_state_blob() -> None:
    """The Spark host's blob (the table form, tag 3) resumes the compiled engine with every
    key's watermark, and its converter to the general format (``general_state``, read in
    external mode) still reports them."""
    defn = _hand_checked(False)
    eng, ref = make_engine(defn), Engine(defn)
    first = Instant(1000, [("a", 3, 1), ("a", 18, 1), ("b", 15, 1), ("c", 1, 1)])
    eng.ingest(batch_of(defn, first))
    ref.ingest(batch_of(defn, first))
    blob, _ = encode_engine(eng)
    assert blob[:1] == b"\x03"
    resumed = restore_engine(defn, blob, "internal")
    assert isinstance(resumed, TriggeredEngine) and resumed.general is None
    assert general_state(defn, blob).snapshot() == ref.state.snapshot()
    later = Instant(1001, [("a", 9, 1), ("b", 9, 1), ("c", 9, 1), ("c", 30, 1)])
    want = [e.to_json() for e in ref.ingest(batch_of(defn, later))]
    assert [e.to_json() for e in resumed.ingest(batch_of(defn, later))] == want
    # a's and b's watermarks (18, 15) expired their [0, 10); c's (1) had not, so c's 9 counts
    # and c's 30 closes it
    assert [(w["type"], w["key"], w.get("reason") or w.get("timing")) for w in want] == [
        ("late", "a", "expired"), ("late", "b", "expired"), ("pane", "c", "EARLY"),
        ("pane", "c", "ON_TIME")]


def test_one_record_expiring_many_windows_of_its_key() -> None:
    """A record that moves its key's watermark past a hundred late-born windows fires them
    all, in window order, right after itself (the window table and the output grow
    mid-unit); the other key's windows wait for their own watermark."""
    defn = load_definition({
        "name": "many", "key": "k", "event_time": "t",
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
        "watermark": {"delay": 0, "scope": "key"},
        "trigger": {"emit": "custom", "on_time": True, "late": {"count": 5}},
        "allowed_lateness": 2000,
        "accumulation": "discarding",
    })
    eng, ref = make_engine(defn), Engine(defn)
    assert isinstance(eng, TriggeredEngine)
    units = [Instant(1, [("a", 1000, 1), ("b", 5, 1)]),
             Instant(2, [("a", t, 1) for t in range(0, 1000, 10)] + [("b", 7, 1)]),
             Instant(3, [("b", 8, 1), ("a", 5000, 1), ("b", 9, 1)])]
    got = []
    for unit in units:
        got = eng.ingest(batch_of(defn, unit))
        assert [e.to_json() for e in got] == [
            e.to_json() for e in ref.ingest(batch_of(defn, unit))]
    assert [(p.key, p.window_start) for p in got] == [("a", s) for s in range(0, 1010, 10)]
    assert [e.to_json() for e in eng.end_of_input()] == [
        e.to_json() for e in ref.end_of_input()]
    assert eng.general is None
