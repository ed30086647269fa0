"""Differential tests: sliding windows that fire more than once (count and processing-time
triggers, every accumulation mode and lateness basis, collect / count_distinct) under per-key
watermarks (``watermark.scope: key``), with and without idle advance, run on the compiled
sliding trigger engine and must be indistinguishable from the general engine: replay lines,
and after every unit and clock tick the state snapshot (each key's watermark and idle base,
timers, panes to retract), open windows, late counts; across a snapshot/restore, from a
general engine's state, through the Spark state blob, and with the host's external
watermark."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    Trigger,
    Watermark,
    WatermarkScope,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingTriggerEngine, qualification_problems
from tests.engine_kernels.strategies import event_logs
from tests.engine_kernels.test_session_collect_vs_engine import mixed_logs
from tests.engine_kernels.test_session_vs_engine import check_replay_lines
from tests.engine_kernels.test_sliding_collect_vs_engine import SETTINGS
from tests.engine_kernels.test_sliding_key_scope_vs_engine import (
    _line,
    _run,
    _ticks,
    check_blob_carries_key_watermarks,
    check_general_state_resumes,
)
from tests.engine_kernels.test_sliding_timers_vs_engine import (
    check_ticking,
    timed_sliding_definitions,
)
from tests.engine_kernels.test_sliding_trigger_collect_vs_engine import _with_side
from tests.engine_kernels.test_sliding_triggers_vs_engine import triggered_sliding_definitions
from tests.engine_kernels.test_sliding_vs_engine import Unit, _batch, units

SETTINGS = settings(SETTINGS, max_examples=20)


@st.composite
def _key_scoped(draw: st.DrawFn, defs: st.SearchStrategy[Definition]) -> Definition:
    """``defs`` under a key watermark scope (or, now and then, the global one), with or
    without idle advance; now and then a ``source`` watermark (the global one there)."""
    base = draw(defs)
    scope: WatermarkScope = draw(st.sampled_from(["key", "key", "key", "global"]))
    source = draw(st.integers(0, 5)) == 0
    idle = draw(st.booleans()) if scope == "key" and not source else False
    return replace(base, watermark=replace(base.watermark, scope=scope, idle_advance=idle,
                                           strategy="source" if source else "bounded"))


PLAIN = st.one_of(triggered_sliding_definitions(), timed_sliding_definitions())
KEYED = _key_scoped(PLAIN)
KEYED_SIDE = _key_scoped(st.one_of(_with_side(triggered_sliding_definitions()),
                                   _with_side(timed_sliding_definitions())))


@SETTINGS
@given(defn=KEYED, log=event_logs(), arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingTriggerEngine)


@SETTINGS
@given(defn=KEYED_SIDE, log=mixed_logs(), arrival=st.sampled_from(["record", "batch:3"]))
def test_collect_and_count_distinct_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingTriggerEngine)


@SETTINGS
@given(defn=st.one_of(KEYED, KEYED_SIDE), us=units(), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit_and_tick(
    defn: Definition, us: list[Unit], external: bool, data: st.DataObject
) -> None:
    """Clock ticks before the units, a snapshot/restore at a drawn unit; a host-driven
    watermark is the one watermark (``scope: key`` has no effect there)."""
    assert check_ticking(defn, us, external, data).general is None


@SETTINGS
@given(defn=st.one_of(KEYED, KEYED_SIDE), us=units(), data=st.data())
def test_ticks_after_units_and_a_restore_match(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    ticks = _ticks(data, us)
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    kernel = SlidingTriggerEngine(defn)
    k_out, k_seen = _run(kernel, defn, us, ticks, swap_at,
                         lambda s: SlidingTriggerEngine(defn, state=s))
    g_out, g_seen = _run(Engine(defn), defn, us, ticks, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert kernel.general is None


@SETTINGS
@given(defn=st.one_of(KEYED, KEYED_SIDE), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_compiled_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    """Mid-stream general state (per-key watermarks and idle bases, timers, windows passed
    at their key's watermark) runs on, line for line."""
    check_general_state_resumes(defn, us, data, SlidingTriggerEngine)


def _key_defn(trigger: Trigger, **wm: Any) -> Definition:
    return Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"), Aggregation("c", "collect", "x")),
                      trigger=trigger, watermark=Watermark(scope="key", **wm))


def test_a_records_raise_fires_its_keys_panes_after_its_own_count_pane() -> None:
    """``a``@100 fires its own EARLY pane at the watermark it met (0 - 0 = 0), then the
    ON_TIME panes its raise to 100 passes; ``b``'s window stays open at its own watermark."""
    defn = _key_defn(Trigger(emit="custom", early=EarlyTrigger("count", count=1), on_time=True))
    assert qualification_problems(defn) == []
    eng, gen = make_engine(defn), Engine(defn)
    assert isinstance(eng, SlidingTriggerEngine)
    unit = (1, [("a", 0, 1), ("b", 0, 2), ("a", 100, 3)])
    out = [_line(e) for e in eng.ingest(_batch(defn, unit))]
    assert out == [_line(e) for e in gen.ingest(_batch(defn, unit))]
    a = [(p["window_start"], p["timing"], p["watermark"]) for p in map(json.loads, out)
         if p["key"] == "a"]
    assert a == [(-10, "EARLY", None), (90, "EARLY", 0), (-10, "ON_TIME", 100)]
    assert eng.watermark is None
    assert {kj: ks["watermark"] for kj, ks in eng.state.snapshot()["keys"].items()} == {
        '"a"': 100, '"b"': 0}
    assert eng.state.snapshot() == gen.state.snapshot()


def test_an_idle_keys_watermark_fires_its_on_time_pane() -> None:
    defn = _key_defn(Trigger(emit="custom", early=EarlyTrigger("count", count=5)),
                     idle_advance=True, delay=5)
    eng = make_engine(defn)
    assert isinstance(eng, SlidingTriggerEngine)
    eng.ingest(_batch(defn, (1000, [("a", 0, 1)])))  # the key's watermark: -5
    assert eng.advance_processing_time(1005) == []
    (pane,) = eng.advance_processing_time(1006)  # it reaches the window's end + 1
    assert (pane.key, pane.window_end, pane.timing, pane.watermark, pane.emitted_at) == (
        "a", 0, "ON_TIME", 1, 1006)


def test_a_state_blob_carries_the_key_watermarks_in_either_direction() -> None:
    defn = replace(_key_defn(Trigger(emit="current"), idle_advance=True, delay=2),
                   accumulation="retracting")
    check_blob_carries_key_watermarks(defn, SlidingTriggerEngine, "idle_base")


def test_values_the_arrays_cannot_hold_hand_the_key_watermarks_over() -> None:
    """An int beyond 2**53 mid-stream: the general engine goes on from the converted state
    (each key's watermark and idle base inside) with the same lines."""
    defn = replace(_key_defn(Trigger(emit="current"), idle_advance=True, delay=2),
                   aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")))
    us = [(5, [("a", 0, 1), ("b", 3, 2), ("a", 30, 3)]), (20, [("a", 25, 2**70), ("b", 40, 1)]),
          (30, [("a", 50, 1)])]
    eng, gen = make_engine(defn), Engine(defn)
    assert isinstance(eng, SlidingTriggerEngine)
    for u in us:
        assert [_line(e) for e in eng.ingest(_batch(defn, u))] == [
            _line(e) for e in gen.ingest(_batch(defn, u))]
        assert [_line(e) for e in eng.advance_processing_time(u[0] + 7)] == [
            _line(e) for e in gen.advance_processing_time(u[0] + 7)]
        assert eng.state.snapshot() == gen.state.snapshot()
    assert [_line(e) for e in eng.end_of_input()] == [_line(e) for e in gen.end_of_input()]
    assert eng.general is not None
