"""Differential tests: final session windows under per-key watermarks (``watermark.scope:
key``) and idle advance run on the compiled session engine and must be indistinguishable from
the general engine: replay lines, and after every unit (processing-time ticks included) the
state snapshot (each key's watermark and idle base), open windows, late counts; also across a
snapshot/restore, from a general engine's state, and with a host-driven watermark."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    INFINITE,
    Aggregation,
    Definition,
    Trigger,
    Watermark,
    WatermarkScope,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.kernels import SessionKernelEngine, qualification_problems, qualifies
from jobs.replay import replay_lines
from tests.engine_kernels.strategies import event_logs, session_definitions
from tests.engine_kernels.test_session_vs_engine import (
    _batch,
    check_general_state_resumes,
    check_state_and_observations,
    units,
)

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SIDE = (Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x"))


@st.composite
def key_definitions(draw: st.DrawFn) -> Definition:
    """Final session definitions with a key or global watermark scope, with or without idle
    advance (and sometimes collect / count_distinct)."""
    base = draw(session_definitions())
    scope: WatermarkScope = draw(st.sampled_from(["key", "key", "global"]))
    idle = draw(st.booleans()) if scope == "key" else True
    aggs = base.aggregations + (SIDE if draw(st.booleans()) else ())
    return replace(base, aggregations=aggs,
                   watermark=replace(base.watermark, scope=scope, idle_advance=idle))


@SETTINGS
@given(defn=key_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    assert qualifies(defn)
    assert isinstance(make_engine(defn), SessionKernelEngine)
    mode = Arrival.parse(arrival)
    kernel = [json.dumps(o, sort_keys=True)
              for o in replay_lines(defn, log, engine="auto", arrival=mode)]
    general = [json.dumps(o, sort_keys=True)
               for o in replay_lines(defn, log, engine="general", arrival=mode)]
    assert kernel == general


@SETTINGS
@given(defn=key_definitions(), us=units(), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    check_state_and_observations(defn, us, external, data, on_arrays=True)


@SETTINGS
@given(defn=key_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def _key_defn(**wm: Any) -> Definition:
    return Definition(name="s", key="k", event_time="t", window=Window("session", gap=10),
                      aggregations=(Aggregation("n", "count"),), trigger=Trigger(emit="final"),
                      watermark=Watermark(scope="key", **wm))


def test_a_record_fires_the_sessions_its_own_keys_watermark_passes() -> None:
    """Key ``a`` running ahead closes its own session at once; ``b``'s stays open."""
    defn = _key_defn()
    eng = SessionKernelEngine(defn)
    out = eng.ingest(_batch(defn, (1, [("a", 0, 1), ("b", 0, 1), ("a", 100, 1)])))
    assert [(p.to_json()["key"], p.to_json()["window_start"], p.to_json()["watermark"])
            for p in out] == [("a", 0, 100)]
    assert eng.watermark is None
    assert [(w["key"], w["window_start"]) for w in eng.open_windows()] == [("a", 100),
                                                                           ("b", 0)]
    snap = eng.state.snapshot()
    assert snap == Engine(defn, state=eng.to_engine_state()).state.snapshot()


def test_an_idle_keys_watermark_moves_with_processing_time() -> None:
    defn = _key_defn(idle_advance=True)
    eng = SessionKernelEngine(defn)
    eng.ingest(_batch(defn, (1000, [("a", 0, 1)])))
    assert eng.advance_processing_time(1009) == []
    (pane,) = eng.advance_processing_time(1010)  # the key's watermark reaches 0 + gap
    assert (pane.key, pane.window_end, pane.watermark, pane.emitted_at) == ("a", 10, 10, 1010)


def test_per_key_watermarks_stay_on_the_general_engine_for_other_definitions() -> None:
    defn = _key_defn()
    collect = replace(defn, trigger=Trigger(emit="current"),
                      aggregations=(Aggregation("c", "collect", "x"),))
    assert qualification_problems(collect) == []  # triggered session collect: compiled
    assert type(make_engine(collect)) is SessionKernelEngine
    sliding = replace(defn, window=Window("sliding", size=10), trigger=Trigger(emit="current"))
    assert qualification_problems(sliding) == []  # the sliding trigger engine's


def test_a_key_watermark_an_infinite_delay_left_resumes_on_the_arrays() -> None:
    """Under ``delay: INFINITE`` a key's watermark is its event time minus 2**62: a state
    holding it stays on the kernel engine's arrays (the general engine's output follows)."""
    defn = _key_defn(delay=INFINITE)
    check_general_state_resumes(defn, [(0, [("a", 0, None)]), (0, [("a", 5, None)])], 1)
