"""Differential tests: ``collect`` and ``count_distinct`` on the compiled session engine
(``emit: final``) give the general engine's replay lines, and after every arrival unit its
snapshot, open windows and late counts: mixed values (ints, floats equal to ints, strings,
null, bools, lists), out-of-order merges, late records, a snapshot/restore mid-stream and a
start from a general engine's state."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition, Trigger, Watermark, Window
from jobs.engine import make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.kernels import SessionKernelEngine
from jobs.replay import replay_lines
from tests.engine_kernels.strategies import KEYS, session_definitions
from tests.engine_kernels.test_session_vs_engine import (
    check_general_state_resumes,
    check_replay_lines,
    check_state_and_observations,
    units,
)

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

MIXED = st.one_of(
    st.integers(-3, 3), st.integers(-3, 3).map(float), st.sampled_from(["a", "b", "1", ""]),
    st.none(), st.booleans(), st.sampled_from([0.5, -0.0, [1, "a"], {"z": 1}]),
)
SIDE_AGGS = [Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x")]


@st.composite
def collect_definitions(draw: st.DrawFn) -> Definition:
    base = draw(session_definitions())
    side = draw(st.lists(st.sampled_from(SIDE_AGGS), min_size=1, max_size=2,
                         unique_by=lambda a: a.name))
    # the others keep to first/last/count: numeric aggregates hand mixed values over
    others = [a for a in base.aggregations if a.fn in ("count", "first", "last")]
    return replace(base, aggregations=(*side, *others))


@st.composite
def mixed_logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    base = draw(st.integers(-30, 30))
    for _ in range(draw(st.integers(1, 30))):
        if draw(st.integers(0, 9)) == 0:
            out.append({"$watermark": base + draw(st.integers(-10, 20))})
            continue
        out.append({"k": draw(st.sampled_from(KEYS)), "t": base + draw(st.integers(-40, 25)),
                    "x": draw(MIXED)})
        base += draw(st.integers(0, 4))
    return out


def _lines(defn: Definition, log: list[dict[str, Any]], engine: Any, arrival: Arrival) -> list[str]:
    return [json.dumps(o, sort_keys=True)
            for o in replay_lines(defn, log, engine=engine, arrival=arrival)]


@SETTINGS
@given(defn=collect_definitions(), log=mixed_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


@SETTINGS
@given(defn=collect_definitions(), us=units(MIXED), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    check_state_and_observations(defn, us, external, data, on_arrays=True)


@SETTINGS
@given(defn=collect_definitions(), us=units(MIXED), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def test_a_bridging_record_merges_the_lists_in_event_time_order() -> None:
    from tests.engine_kernels.test_session_vs_engine import _batch

    defn = Definition(name="s", key="k", event_time="t", window=Window("session", gap=10),
                      aggregations=(Aggregation("c", "collect", "x"),
                                    Aggregation("d", "count_distinct", "x")),
                      watermark=Watermark(delay=100), trigger=Trigger(emit="final"))
    eng = SessionKernelEngine(defn)
    eng.ingest(_batch(defn, (1, [("a", 15, "late"), ("a", 0, 1)])))
    eng.ingest(_batch(defn, (2, [("a", 7, 1.0), ("a", 16, True)])))
    (pane,) = eng.end_of_input()
    assert (pane.window_start, pane.window_end) == (0, 26)
    assert pane.values == {"c": [1, 1.0, "late", True], "d": 3}


def test_triggered_sessions_with_collect_run_compiled_in_every_accumulation_mode() -> None:
    defn = Definition(name="s", key="k", event_time="t", window=Window("session", gap=10),
                      aggregations=(Aggregation("c", "collect", "x"),),
                      trigger=Trigger(emit="current"), accumulation="discarding")
    for mode in ("discarding", "accumulating", "retracting"):
        assert type(make_engine(replace(defn, accumulation=mode))) is SessionKernelEngine
