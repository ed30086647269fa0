"""Differential tests: sliding windows with idle advance under one watermark (``watermark.
idle_advance: true``, ``scope: global``), ``emit: final`` and with triggers (count, after,
every; every accumulation mode), and ``scope: key`` where the general engine keeps one
watermark anyway (a source's, or the processing clock), run on the compiled sliding engines
and must be indistinguishable from the general engine: replay lines, and after every unit and
processing-time tick (with no record) the output, state snapshot (the idle base included), open
windows and late counts; also across a snapshot/restore, from a general engine's state, with a
host-driven watermark and through the Spark state blob."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import (
    SlidingKernelEngine,
    SlidingTriggerEngine,
    qualification_problems,
)
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.strategies import TRIGGERS, event_logs
from tests.engine_kernels.test_session_timers_vs_engine import check_ticking
from tests.engine_kernels.test_session_vs_engine import check_replay_lines
from tests.engine_kernels.test_sliding_key_scope_vs_engine import (
    SETTINGS,
    SIDE,
    _line,
    _run,
    _ticks,
    check_general_state_resumes,
)
from tests.engine_kernels.test_sliding_timers_vs_engine import timed_sliding_definitions
from tests.engine_kernels.test_sliding_vs_engine import (
    _batch,
    sliding_definitions,
    units,
)


def _engine_class(defn: Definition) -> type:
    final = defn.trigger.emit == "final" and not defn.uses_processing_time
    return SlidingKernelEngine if final else SlidingTriggerEngine


@st.composite
def idle_definitions(draw: st.DrawFn) -> Definition:
    """Sliding definitions with idle advance of the one (bounded) watermark: final, count
    triggers or processing-time triggers, any accumulation mode and lateness basis, sometimes
    with collect / count_distinct."""
    base = draw(sliding_definitions())
    trigger = draw(st.one_of(st.just(Trigger(emit="final")), TRIGGERS,
                             timed_sliding_definitions().map(lambda d: d.trigger)))
    aggs = base.aggregations + (SIDE if draw(st.booleans()) else ())
    return replace(base, trigger=trigger, aggregations=aggs,
                   watermark=replace(base.watermark, strategy="bounded", scope="global",
                                     idle_advance=True))


@st.composite
def one_watermark_key_definitions(draw: st.DrawFn) -> Definition:
    """``scope: key`` (with or without idle advance) where the general engine keeps one
    watermark: a source's, or the processing clock; any trigger."""
    base = draw(idle_definitions())
    wm = replace(base.watermark, scope="key", idle_advance=draw(st.booleans()))
    if draw(st.booleans()):
        return replace(base, watermark=replace(wm, strategy="source"))
    return replace(base, event_time="processing", watermark=wm)


@SETTINGS
@given(defn=idle_definitions() | one_watermark_key_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, _engine_class(defn))


@SETTINGS
@given(defn=idle_definitions() | one_watermark_key_definitions(), us=units(), data=st.data())
def test_state_and_observations_match_after_every_unit_and_tick(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    cls = _engine_class(defn)
    ticks = _ticks(data, us)
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    kernel = cls(defn)
    k_out, k_seen = _run(kernel, defn, us, ticks, swap_at, lambda s: cls(defn, state=s))
    g_out, g_seen = _run(Engine(defn), defn, us, ticks, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert kernel.general is None


@SETTINGS
@given(defn=idle_definitions(), us=units(), data=st.data())
def test_a_host_driven_watermark_moves_from_the_hosts_base(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    """External mode: each watermark the host hands in is the base the clock moves on from
    (clock ticks before the units, a snapshot/restore at a drawn unit)."""
    kernel = check_ticking(defn, us, True, data, _engine_class(defn))
    assert kernel.general is None


@SETTINGS
@given(defn=idle_definitions(), us=units(st.integers(-50, 50) | st.none()), data=st.data())
def test_a_general_engine_state_resumes_on_the_compiled_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data, _engine_class(defn))


FINAL = Trigger(emit="final")


def _defn(trigger: Trigger = FINAL, **wm: Any) -> Definition:
    return Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"), Aggregation("c", "collect", "x")),
                      trigger=trigger, watermark=Watermark(idle_advance=True, **wm))


def test_the_watermark_moves_with_processing_time_while_no_record_comes() -> None:
    """A record at 0 (delay 5) sets the base -5 at processing time 1000; one ms after the
    clock passes 1005 the watermark reaches the window's end + 1 and its pane fires then."""
    later = Trigger(emit="custom", early=EarlyTrigger("after", duration=100), on_time=True)
    for trigger in (Trigger(emit="final"), later):
        defn = _defn(trigger, delay=5)
        eng = make_engine(defn)
        assert isinstance(eng, _engine_class(defn))
        eng.ingest(_batch(defn, (1000, [("a", 0, 1)])))
        assert eng.advance_processing_time(1005) == []
        assert eng.watermark == 0
        fired = eng.advance_processing_time(1006)
        pane = fired[-1]
        assert (pane.key, pane.window_end, pane.watermark, pane.emitted_at) == (
            "a", 0, 1, 1006)
        assert pane.values == {"n": 1, "c": [1]}
        snap = eng.state.snapshot()
        assert (snap["idle_base"], snap["idle_base_pt"]) == (-5, 1000)


def test_a_record_ahead_of_the_idle_watermark_sets_a_new_base() -> None:
    """The idle-advanced watermark (20) is ahead of the next record's candidate (12): the
    record is judged against 20 (late for [2, 12]) and the base stays; a record at 40 sets the
    base 40 at its unit's processing time (25), from which the clock moves it on."""
    defn = replace(_defn(delay=0), allowed_lateness=0)
    eng, gen = make_engine(defn), Engine(defn)
    for call in ((0, [("a", 0, 1)]), 20, (20, [("a", 12, 2)]), (25, [("a", 40, 3)]), 30):
        if isinstance(call, int):
            k, g = eng.advance_processing_time(call), gen.advance_processing_time(call)
        else:
            k, g = eng.ingest(_batch(defn, call)), gen.ingest(_batch(defn, call))
        assert [_line(e) for e in k] == [_line(e) for e in g]
        assert eng.state.snapshot() == gen.state.snapshot()
    assert eng.watermark == 45
    assert (eng.state.snapshot()["idle_base"], eng.state.snapshot()["idle_base_pt"]) == (40, 25)
    assert eng.late_totals() == [{"key": "a", "accepted": 0, "dropped": 1}]


def test_idle_advance_qualifies_under_one_watermark_and_under_per_key_watermarks() -> None:
    every = Trigger(emit="custom", early=EarlyTrigger("every", duration=5), on_time=True)
    for trigger in (Trigger(emit="final"), Trigger(emit="current"), every):
        assert qualification_problems(_defn(trigger)) == []
        assert isinstance(make_engine(_defn(trigger)), _engine_class(_defn(trigger)))
        source = _defn(trigger, strategy="source", scope="key")
        assert isinstance(make_engine(source), _engine_class(source))
        clock = replace(_defn(trigger, scope="key"), event_time="processing")
        assert isinstance(make_engine(clock), SlidingTriggerEngine)
        keyed = _defn(trigger, scope="key")
        assert isinstance(make_engine(keyed), _engine_class(keyed))


def test_a_state_blob_carries_the_idle_base_in_either_direction() -> None:
    """The blob of either engine (the idle base inside) resumes on the compiled engine, which
    goes on moving the watermark from that base as the general engine does."""
    for trigger in (Trigger(emit="final"), Trigger(emit="custom", on_time=True,
                                                   early=EarlyTrigger("after", duration=3))):
        defn = replace(_defn(trigger, delay=2), accumulation="retracting")
        cls = _engine_class(defn)
        probe = type(make_engine(defn).state)
        for first in (Engine(defn), cls(defn)):
            ref = Engine(defn)
            for eng in (first, ref):
                eng.ingest(_batch(defn, (5, [("a", 0, 1), ("b", 3, 2), ("a", 8, 3)])))
            resumed = make_engine(defn, decode_state(encode_state(first.state)[0], probe))
            assert isinstance(resumed, cls) and resumed.general is None
            snap = resumed.state.snapshot()
            assert snap == ref.state.snapshot()
            assert (snap["idle_base"], snap["idle_base_pt"]) == (6, 5)
            for now in (9, 14, 30):
                assert [_line(e) for e in resumed.advance_processing_time(now)] == [
                    _line(e) for e in ref.advance_processing_time(now)]
            assert resumed.watermark == 31
            unit = (40, [("b", 5, 5), ("a", 60, 6)])
            assert [_line(e) for e in resumed.ingest(_batch(defn, unit))] == [
                _line(e) for e in ref.ingest(_batch(defn, unit))]
            assert resumed.state.snapshot() == ref.state.snapshot()
