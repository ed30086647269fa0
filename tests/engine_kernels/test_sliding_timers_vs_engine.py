"""Differential tests of the compiled sliding-window engine with processing-time triggers
(early ``{after: D}`` / ``{every: D}``, late ``{after: D}``, mixed with count parts) and on
the processing clock, against the general engine: the same replay lines under every arrival
model, and after every arrival unit and clock tick the same snapshot (timers included),
across a snapshot/restore and from a general engine's state."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
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
from jobs.engine import make_engine
from jobs.engine.errors import EngineError
from jobs.engine.kernels import SlidingKernelEngine, SlidingTriggerEngine
from tests.engine_kernels.strategies import TRIGGERS, event_logs
from tests.engine_kernels.test_session_timers_vs_engine import (
    EARLY,
    LATE,
    SETTINGS,
    _panes,
)
from tests.engine_kernels.test_session_timers_vs_engine import (
    check_ticking as check_session_ticking,
)
from tests.engine_kernels.test_session_vs_engine import _batch, check_replay_lines
from tests.engine_kernels.test_sliding_triggers_vs_engine import check_general_state_resumes
from tests.engine_kernels.test_sliding_vs_engine import sliding_definitions, units


@st.composite
def timed_sliding_definitions(draw: st.DrawFn) -> Definition:
    """Sliding definitions with at least one processing-time part."""
    early, late = draw(EARLY), draw(LATE)
    if not any(p is not None and p.kind != "count" for p in (early, late)):
        early = EarlyTrigger(kind="after", duration=draw(st.integers(0, 25)))
    trigger = Trigger(emit="custom", early=early, on_time=draw(st.booleans()), late=late)
    return replace(draw(sliding_definitions()), trigger=trigger)


@st.composite
def clocked_sliding_definitions(draw: st.DrawFn) -> Definition:
    """Sliding definitions on the processing clock, with any trigger (``final`` too)."""
    trigger = draw(st.one_of(st.just(Trigger(emit="final")), TRIGGERS,
                             timed_sliding_definitions().map(lambda d: d.trigger)))
    return replace(draw(sliding_definitions()), event_time="processing", trigger=trigger,
                   watermark=Watermark())


def check_ticking(defn: Definition, us: list[Any], external: bool,
                  data: st.DataObject) -> SlidingTriggerEngine:
    """The session timer tests' driver (clock ticks before the units, a snapshot/restore at a
    drawn unit, observations after every unit) on the compiled sliding engine."""
    kernel: SlidingTriggerEngine = check_session_ticking(defn, us, external, data,
                                                         SlidingTriggerEngine)
    return kernel


@SETTINGS
@given(defn=st.one_of(timed_sliding_definitions(), clocked_sliding_definitions()),
       log=event_logs(), arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingTriggerEngine)


@SETTINGS
@given(defn=timed_sliding_definitions(), us=units(), external=st.booleans(), data=st.data())
def test_timers_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    assert check_ticking(defn, us, external, data).general is None


@SETTINGS
@given(defn=clocked_sliding_definitions(), us=units(), data=st.data())
def test_processing_clock_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    assert check_ticking(defn, us, False, data).general is None


@SETTINGS
@given(defn=st.one_of(timed_sliding_definitions(), clocked_sliding_definitions()),
       us=units(), data=st.data())
def test_a_general_engine_state_with_timers_resumes_on_the_compiled_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data)


def test_an_early_timer_fires_the_windows_pane_at_its_due_time() -> None:
    defn = Definition(
        name="s", key="k", event_time="t", window=Window("sliding", size=10),
        aggregations=(Aggregation("n", "count"),), watermark=Watermark(delay=100),
        accumulation="accumulating",
        trigger=Trigger(emit="custom", early=EarlyTrigger("after", duration=60)),
    )
    eng = make_engine(defn)
    assert isinstance(eng, SlidingTriggerEngine)
    assert eng.ingest(_batch(defn, (0, [("a", 0, 1)]))) == []  # window [-10, 0]: timer 60
    assert eng.advance_processing_time(59) == []
    assert _panes(eng.advance_processing_time(60)) == [(-10, 0, "EARLY", 0, False, {"n": 1}, 60)]
    assert eng.advance_processing_time(200) == []  # nothing pending since


def test_the_final_only_sliding_engine_refuses_the_processing_clock_and_triggers() -> None:
    base = Definition(
        name="s", key="k", event_time="processing", window=Window("sliding", size=10),
        aggregations=(Aggregation("n", "count"),), watermark=Watermark(),
    )
    with pytest.raises(EngineError, match="event_time: the processing clock"):
        SlidingKernelEngine(base)
    triggered = replace(base, event_time="t", trigger=Trigger(
        emit="custom", early=EarlyTrigger("after", duration=60)))
    with pytest.raises(EngineError, match="trigger.emit: custom"):
        SlidingKernelEngine(triggered)
    assert isinstance(make_engine(base), SlidingTriggerEngine)
    assert isinstance(make_engine(triggered), SlidingTriggerEngine)
