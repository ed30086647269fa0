"""Differential tests: the compiled engine of sliding windows with count triggers must be
indistinguishable from the general engine: the same replay lines under every arrival model,
and after every arrival unit the same state snapshot, open windows, late counts, watermark and
max event time, also across a snapshot/restore and from a general engine's state."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingTriggerEngine, qualification_problems
from tests.engine_kernels.strategies import TRIGGERS, event_logs
from tests.engine_kernels.test_session_vs_engine import _batch, _run, check_replay_lines
from tests.engine_kernels.test_sliding_vs_engine import sliding_definitions, units

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def triggered_sliding_definitions(draw: st.DrawFn) -> Definition:
    """Sliding definitions that fire more than once: ``emit: current`` or count-based early /
    late parts with or without ON_TIME, every accumulation mode and lateness basis."""
    return replace(draw(sliding_definitions()), trigger=draw(TRIGGERS))


@SETTINGS
@given(defn=triggered_sliding_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingTriggerEngine)


@SETTINGS
@given(defn=triggered_sliding_definitions(), us=units(), external=st.booleans(),
       data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    mode: Any = "external" if external else "internal"
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    eng = SlidingTriggerEngine(defn, watermark=mode)
    k_out, k_seen = _run(eng, defn, us, external, swap_at,
                         lambda s: SlidingTriggerEngine(defn, state=s, watermark=mode))
    g_out, g_seen = _run(Engine(defn, watermark=mode), defn, us, external, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert eng.general is None


def check_general_state_resumes(defn: Definition, us: list[Any], data: st.DataObject) -> None:
    """A general engine's state after a drawn number of units, restored by ``make_engine``,
    runs on the compiled engine (no hand-over) and continues line for line as the general
    engine does."""
    cut = data.draw(st.integers(0, len(us)))
    g = Engine(defn)
    for u in us[:cut]:
        g.ingest(_batch(defn, u))
    resumed = make_engine(defn, state=json.loads(json.dumps(g.state.snapshot())))
    assert isinstance(resumed, SlidingTriggerEngine) and resumed.general is None
    k_out, k_seen = _run(resumed, defn, us[cut:], False, None, None)
    g_out, g_seen = _run(g, defn, us[cut:], False, None, None)
    assert k_out == g_out and k_seen == g_seen


@SETTINGS
@given(defn=triggered_sliding_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_compiled_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data)


def test_every_function_runs_on_the_compiled_engine() -> None:
    base = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"),), trigger=Trigger(emit="current"))
    assert isinstance(make_engine(base), SlidingTriggerEngine)
    counted = replace(base, trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=3),
                                            late=LateTrigger("count", count=2)))
    assert isinstance(make_engine(counted), SlidingTriggerEngine)
    side = replace(counted, aggregations=(Aggregation("c", "collect", "x"),
                                          Aggregation("d", "count_distinct", "x")))
    assert qualification_problems(side) == []
    assert isinstance(make_engine(side), SlidingTriggerEngine)
