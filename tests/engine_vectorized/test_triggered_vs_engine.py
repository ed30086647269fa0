"""Differential tests: the compiled triggered engine (tumbling / hopping / global windows with
early count / after / every, on-time and late count / after firings) must be
indistinguishable from the general engine on every definition it is picked for: the same
panes (retractions included), late lines and ``emitted_at`` in the same order, the same late
counts, open windows, watermark and max event time after every arrival unit and processing
time tick, across a snapshot/restore (through JSON) in the middle (pending timers included),
across a hand-over to the general engine, under an externally driven watermark, and through
replay in every arrival mode."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import (
    INFINITE,
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
)
from jobs.engine import make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.engine import Engine
from jobs.engine.state import EngineState
from jobs.engine.vectorized.triggered import TriggeredEngine, qualifies_triggered
from jobs.replay import replay_lines
from tests.engine_vectorized.strategies import Instant, definitions, instants, record_of
from tests.engine_vectorized.test_vs_engine import observe, odd_instants
from tests.engine_vectorized.test_vs_reference import batch_of, canon
from tests.engine_vectorized.transcripts import transcripts

COUNTS = st.integers(1, 3)
DURATIONS = st.integers(1, 80)
"""Processing-time durations (ms): the instants' processing time moves 0-50 ms a unit, so
timers fire on some units and not on others."""
EARLY = st.one_of(
    st.none(),
    COUNTS.map(lambda n: EarlyTrigger("count", count=n)),
    DURATIONS.map(lambda d: EarlyTrigger("after", duration=d)),
    st.builds(lambda d, a: EarlyTrigger("every", duration=d, align_to=a),
              DURATIONS, st.integers(-100, 100)),
)
LATE = st.one_of(
    st.none(),
    COUNTS.map(lambda n: LateTrigger("count", count=n)),
    DURATIONS.map(lambda d: LateTrigger("after", duration=d)),
)


@st.composite
def triggers(draw: st.DrawFn) -> Trigger:
    if draw(st.integers(0, 4)) == 0:
        return Trigger(emit="current")
    early, late = draw(EARLY), draw(LATE)
    # a custom trigger that fires nothing is refused by validation: keep its on-time firing
    on_time = draw(st.booleans()) or (early is None and late is None)
    return Trigger(emit="custom", early=early, on_time=on_time, late=late)


ORDERED = [Aggregation("first_x", "first", "x"), Aggregation("last_x", "last", "x")]
"""Aggregations the triggered engine runs beyond the vectorized engine's (ties in event time
are broken by arrival order)."""


@st.composite
def triggered_definitions(draw: st.DrawFn) -> Definition:
    base = draw(definitions())
    extra = draw(st.lists(st.sampled_from(ORDERED), max_size=2, unique_by=lambda a: a.name))
    return Definition(
        name=base.name, window=base.window, aggregations=(*base.aggregations, *extra),
        key=base.key,
        event_time=base.event_time,
        watermark=Watermark(delay=base.watermark.delay),  # global scope
        allowed_lateness=base.allowed_lateness, lateness_basis=base.lateness_basis,
        trigger=draw(triggers()), accumulation=base.accumulation,
    )


def run(defn: Definition, insts: list[Instant], restore_at: int | None, triggered: bool,
        ticks: list[int] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Feed ``insts``; ``ticks[i]`` (ms, 0 = none) moves processing time by that much after
    unit ``i`` through ``advance_processing_time``, as the Spark host's timers do."""
    eng: Any = TriggeredEngine(defn) if triggered else Engine(defn)
    out: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    for i, inst in enumerate(insts):
        if triggered and i == restore_at:
            snap = json.loads(json.dumps(eng.state.snapshot()))
            eng = make_engine(defn, EngineState.restore(snap))
            assert isinstance(eng, TriggeredEngine)
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        seen.append(observe(eng))
        if ticks and ticks[i]:
            now = eng.state.processing_time + ticks[i]
            out.extend(e.to_json() for e in eng.advance_processing_time(now))
            seen.append(observe(eng))
    out.extend(e.to_json() for e in eng.end_of_input())
    seen.append(observe(eng))
    return canon(out), seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_same_observable_behaviour_as_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    assert qualifies_triggered(defn)
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    t_out, t_seen = run(defn, insts, restore_at, triggered=True)
    g_out, g_seen = run(defn, insts, None, triggered=False)
    assert t_out == g_out
    assert t_seen == g_seen


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_processing_time_ticks_match_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """``advance_processing_time`` between units fires the due timers (``after`` /
    ``every``) with the same panes, ``emitted_at`` and order; pending timers survive a
    snapshot/restore."""
    ticks = [data.draw(st.sampled_from([0, 0, 1, 7, 30, 100])) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    t_out, t_seen = run(defn, insts, restore_at, triggered=True, ticks=ticks)
    g_out, g_seen = run(defn, insts, None, triggered=False, ticks=ticks)
    assert t_out == g_out
    assert t_seen == g_seen


def test_timers_fire_on_ticks_with_their_processing_time() -> None:
    """A hand-checked case: early ``after: 10`` on a 100 ms tumbling window, retracting."""
    defn = load_definition({
        "name": "d", "key": "k", "event_time": "t",
        "window": {"type": "tumbling", "size": 100},
        "aggregations": [{"name": "n", "fn": "count"}],
        "watermark": {"delay": 0},
        "trigger": {"emit": "custom", "early": {"after": 10}, "on_time": True},
        "accumulation": "retracting",
    })
    eng = make_engine(defn)
    assert isinstance(eng, TriggeredEngine)
    assert eng.ingest(batch_of(defn, Instant(1000, [("a", 5, 1)]))) == []
    assert eng.advance_processing_time(1009) == []  # due at 1010
    (p1,) = eng.advance_processing_time(1010)
    assert (p1.timing, p1.pane_index, p1.values, p1.emitted_at) == ("EARLY", 0, {"n": 1}, 1010)
    assert eng.ingest(batch_of(defn, Instant(1012, [("a", 6, 1), ("a", 7, 1)]))) == []
    retract, p2 = eng.advance_processing_time(1030)
    assert (retract.retraction, retract.values, retract.emitted_at) == (True, {"n": 1}, 1030)
    assert (p2.timing, p2.pane_index, p2.values) == ("EARLY", 1, {"n": 3})
    assert eng.ingest(batch_of(defn, Instant(1031, [("a", 8, 1)]))) == []
    # the watermark passes the window: on time; its pending early timer is dropped
    out = eng.ingest(batch_of(defn, Instant(1032, [("b", 150, 1)])))
    assert [(p.timing, p.retraction, p.values) for p in out] == [
        ("EARLY", True, {"n": 3}), ("ON_TIME", False, {"n": 4})]
    assert [p.key for p in eng.advance_processing_time(5000)] == ["b"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), data=st.data())
def test_hand_over_to_general_engine_keeps_output_identical(
    defn: Definition, data: st.DataObject
) -> None:
    """Strings, booleans and huge ints make the engine hand its state to the general engine
    mid-stream; nothing observable may change."""
    insts = data.draw(odd_instants(defn))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    t_out, t_seen = run(defn, insts, restore_at, triggered=True)
    g_out, g_seen = run(defn, insts, None, triggered=False)
    assert t_out == g_out
    assert t_seen == g_seen


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_externally_driven_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """The Spark host's mode: ingest never moves the watermark, advance_watermark does."""
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    results = []
    for cls in (TriggeredEngine, Engine):
        eng: Any = cls(defn, watermark="external")
        out: list[dict[str, Any]] = []
        seen = []
        for inst, mark in zip(insts, marks, strict=True):
            out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
            if mark is not None:
                out.extend(e.to_json() for e in eng.advance_watermark(mark))
            seen.append(observe(eng))
        out.extend(e.to_json() for e in eng.end_of_input())
        results.append((canon(out), seen))
    assert results[0] == results[1]


def _lines(insts: list[Instant]) -> list[str]:
    lines = []
    for inst in insts:
        lines.append(json.dumps({"$processing_time": inst.processing_time}))
        lines.extend(json.dumps(record_of(r)) for r in inst.rows)
    return lines


def _replay_definition(defn: Definition) -> Definition:
    """``defn`` reading the replay records' fields (``x`` for every aggregation input)."""
    raw: dict[str, Any] = {
        "name": "replay", "key": "k", "event_time": "t",
        "window": {"type": defn.window.type},
        "aggregations": [
            {"name": a.name, "fn": a.fn, **({"of": "x"} if a.of is not None else {})}
            for a in defn.aggregations
        ],
        "watermark": {"delay": defn.watermark.delay},
        "allowed_lateness": defn.allowed_lateness,
        "lateness_basis": defn.lateness_basis,
        "accumulation": defn.accumulation,
    }
    w = defn.window
    if w.type != "global":
        raw["window"].update({"size": w.size, "align_to": w.align_to})
        if w.type == "hopping":
            raw["window"]["step"] = w.step
    t = defn.trigger
    if t.emit == "current":
        raw["trigger"] = {"emit": "current"}
    else:
        trig: dict[str, Any] = {"emit": "custom", "on_time": t.on_time}
        e, late = t.early, t.late
        if e is not None:
            trig["early"] = (
                {"count": e.count} if e.kind == "count" else {"after": e.duration}
                if e.kind == "after" else {"every": e.duration, "align_to": e.align_to})
        if late is not None:
            trig["late"] = ({"count": late.count} if late.kind == "count"
                            else {"after": late.duration})
        raw["trigger"] = trig
    return load_definition(_millis(raw))


def _millis(raw: dict[str, Any]) -> dict[str, Any]:
    """Durations in the definition format (integer milliseconds, or ``infinite``)."""
    def dur(v: int) -> int | str:
        return "infinite" if v >= INFINITE else v
    raw["watermark"]["delay"] = dur(raw["watermark"]["delay"])
    raw["allowed_lateness"] = dur(raw["allowed_lateness"])
    return raw


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_replay_in_every_arrival_mode_equals_general(
    defn: Definition, insts: list[Instant], arrival: str
) -> None:
    t = defn.trigger
    # a custom trigger that never fires is not a valid definition
    assume(t.emit == "current" or t.early is not None or t.on_time or t.late is not None)
    rdefn = _replay_definition(defn)
    assert qualifies_triggered(rdefn)
    lines = _lines(insts)
    mode = Arrival.parse(arrival)
    auto = list(replay_lines(rdefn, lines, engine="auto", arrival=mode))
    general = list(replay_lines(rdefn, lines, engine="general", arrival=mode))
    assert canon(auto) == canon(general)


def _qualifying_transcripts() -> list[tuple[str, Definition, dict[str, Any]]]:
    return transcripts(qualifies_triggered)


TRANSCRIPTS = _qualifying_transcripts()


def test_some_transcripts_pick_the_triggered_engine() -> None:
    assert len(TRANSCRIPTS) >= 5


@pytest.mark.parametrize(("name", "defn", "doc"), TRANSCRIPTS, ids=[c[0] for c in TRANSCRIPTS])
def test_transcript_replay_equals_general(name: str, defn: Definition, doc: dict[str, Any]
                                          ) -> None:
    lines = [json.dumps(x, default=str) for x in doc["input"]]
    eof = doc.get("eof_flush", True)
    arrival = Arrival.parse(str(doc.get("arrival", "record")))
    general = list(replay_lines(defn, lines, eof_flush=eof, engine="general", arrival=arrival))
    auto = list(replay_lines(defn, lines, eof_flush=eof, engine="auto", arrival=arrival))
    assert auto == general


def test_make_engine_picks_triggered_only_where_exact() -> None:
    base = {"name": "d", "key": "k", "event_time": "t",
            "window": {"type": "tumbling", "size": "1m"},
            "aggregations": [{"name": "n", "fn": "count"}]}
    picked = load_definition({**base, "trigger": {"emit": "custom", "early": {"count": 10}}})
    assert isinstance(make_engine(picked), TriggeredEngine)
    timers = load_definition({**base, "trigger": {"emit": "custom", "early": {"after": "1s"},
                                                  "late": {"after": "5s"}}})
    assert isinstance(make_engine(timers), TriggeredEngine)
    idle = load_definition({**base, "trigger": {"emit": "current"},
                            "watermark": {"delay": "1s", "idle_advance": True}})
    assert isinstance(make_engine(idle), TriggeredEngine)
    key_scope = load_definition({**base, "trigger": {"emit": "current"},
                                 "watermark": {"delay": "1s", "scope": "key"}})
    assert isinstance(make_engine(key_scope), TriggeredEngine)
    key_collect = load_definition({
        **base, "trigger": {"emit": "current"}, "watermark": {"delay": "1s", "scope": "key"},
        "aggregations": [{"name": "xs", "fn": "collect", "of": "x"}]})
    assert isinstance(make_engine(key_collect), TriggeredEngine)
    sliding = load_definition({**base, "window": {"type": "sliding", "size": "1m"},
                               "trigger": {"emit": "current"}, "watermark": {"scope": "key"},
                               "aggregations": [{"name": "xs", "fn": "collect", "of": "x"}]})
    assert not isinstance(make_engine(sliding), TriggeredEngine)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_resumes_a_checkpoint_the_general_engine_wrote(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    """A store written by the general engine (the engine path before this engine existed)
    restores into the triggered engine and continues exactly as the general engine would."""
    cut = data.draw(st.integers(0, len(insts)))
    results = []
    for switch in (True, False):
        eng: Any = Engine(defn)
        out: list[dict[str, Any]] = []
        for i, inst in enumerate(insts):
            if switch and i == cut:
                snap = json.loads(json.dumps(eng.state.snapshot()))
                eng = make_engine(defn, EngineState.restore(snap))
                assert isinstance(eng, TriggeredEngine)
            out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        out.extend(e.to_json() for e in eng.end_of_input())
        results.append((canon(out), observe(eng)))
    assert results[0] == results[1]


def test_hopping_windows_of_a_record_when_size_is_not_a_multiple_of_step() -> None:
    """A record's hopping windows come from one division (the last window, then back by the
    windows per record, or one fewer): size 10, step 4 gives a record 2 or 3 windows, around
    an offset alignment and negative event times."""
    defn = load_definition({
        "name": "d", "key": "k", "event_time": "t",
        "window": {"type": "hopping", "size": 10, "step": 4, "align_to": 3},
        "aggregations": [{"name": "n", "fn": "count"}],
        "watermark": {"delay": 0},
        "trigger": {"emit": "custom", "early": {"count": 1}, "on_time": True},
        "accumulation": "retracting",
    })
    eng = make_engine(defn)
    assert isinstance(eng, TriggeredEngine)
    out = eng.ingest(batch_of(defn, Instant(1000, [("a", 3, 1)])))
    # windows [k*4 + 3, k*4 + 13) holding 3: k = -2, -1, 0 (3 windows)
    assert [(p.window_start, p.window_end) for p in out] == [(-5, 5), (-1, 9), (3, 13)]
    out = eng.ingest(batch_of(defn, Instant(1001, [("b", -6, 1)])))
    # -6 is before the watermark (3): late, in [-13, -3) and [-9, 1) (2 windows)
    assert [(p.type, p.window_start) for p in out] == [("late", -13), ("late", -9)]
    insts = [Instant(1000 + i, [("a", t, 1), ("b", t + 1, 1)])
             for i, t in enumerate([-21, -8, -7, 0, 1, 2, 6, 7, 12, 13, 30])]
    assert run(defn, insts, None, triggered=True) == run(defn, insts, None, triggered=False)


def test_hopping_count_triggers_fire_per_record_and_window() -> None:
    """A hand-checked case: hopping 20 / step 10, early ``count: 2``, on time, late
    ``count: 1``, retracting. A record fires only the windows whose count it completes (by
    window start), an accepted-late record fires its passed window at once, and the general
    engine agrees line for line."""
    defn = load_definition({
        "name": "d", "key": "k", "event_time": "t",
        "window": {"type": "hopping", "size": 20, "step": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
        "watermark": {"delay": 0}, "allowed_lateness": 100,
        "trigger": {"emit": "custom", "early": {"count": 2}, "on_time": True,
                    "late": {"count": 1}},
        "accumulation": "retracting",
    })
    units = [Instant(1000, [("a", 12, 1), ("a", 15, 1), ("a", 18, 1)]),
             Instant(1001, [("b", 25, 1)]), Instant(1002, [("a", 19, 1)])]
    eng = make_engine(defn)
    assert isinstance(eng, TriggeredEngine)
    general = Engine(defn)

    def lines(out: list[Any]) -> list[tuple[Any, ...]]:
        return [(p.key, p.window_start, p.timing, p.pane_index, p.retraction, p.values)
                for p in out]

    got = [eng.ingest(batch_of(defn, u)) for u in units]
    assert lines(got[0]) == [("a", 0, "EARLY", 0, False, {"n": 2}),
                             ("a", 10, "EARLY", 0, False, {"n": 2})]
    assert lines(got[1]) == [("a", 0, "EARLY", 0, True, {"n": 2}),
                             ("a", 0, "ON_TIME", 1, False, {"n": 3})]
    assert lines(got[2]) == [("a", 0, "ON_TIME", 1, True, {"n": 3}),
                             ("a", 0, "LATE", 2, False, {"n": 4}),
                             ("a", 10, "EARLY", 0, True, {"n": 2}),
                             ("a", 10, "EARLY", 1, False, {"n": 4})]
    got.append(eng.end_of_input())
    expected = [general.ingest(batch_of(defn, u)) for u in units] + [general.end_of_input()]
    assert [[e.to_json() for e in o] for o in got] == [[e.to_json() for e in o]
                                                       for o in expected]
