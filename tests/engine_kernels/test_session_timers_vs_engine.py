"""Differential tests of the compiled session engine with processing-time triggers (early
``{after: D}`` / ``{every: D}``, late ``{after: D}``, mixed with count parts) against the
general engine: the same replay output lines under every arrival model (clock lines fire the
timers), and after every arrival unit the same snapshot (timers included), across a
snapshot/restore, from a general engine's state and through the Spark host's state blob."""

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
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SessionKernelEngine
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.strategies import event_logs, session_definitions
from tests.engine_kernels.test_session_vs_engine import (
    SETTINGS,
    Unit,
    _batch,
    _observe,
    check_general_state_resumes,
    check_replay_lines,
    units,
)

EARLY = st.one_of(
    st.none(),
    st.integers(1, 3).map(lambda n: EarlyTrigger(kind="count", count=n)),
    st.integers(0, 25).map(lambda d: EarlyTrigger(kind="after", duration=d)),
    st.tuples(st.integers(1, 25), st.integers(-10, 10)).map(
        lambda p: EarlyTrigger(kind="every", duration=p[0], align_to=p[1])),
)
SETTINGS = settings(SETTINGS, max_examples=40)
"""Half the examples of the count-trigger tests: these share their paths."""
LATE = st.one_of(
    st.none(),
    st.integers(1, 3).map(lambda n: LateTrigger(kind="count", count=n)),
    st.integers(0, 25).map(lambda d: LateTrigger(kind="after", duration=d)),
)


@st.composite
def timed_session_definitions(draw: st.DrawFn) -> Definition:
    """Session definitions with at least one processing-time part."""
    early, late = draw(EARLY), draw(LATE)
    if not any(p is not None and p.kind != "count" for p in (early, late)):
        early = EarlyTrigger(kind="after", duration=draw(st.integers(0, 25)))
    trigger = Trigger(emit="custom", early=early, on_time=draw(st.booleans()), late=late)
    return replace(draw(session_definitions()), trigger=trigger)


@SETTINGS
@given(defn=timed_session_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


def _ticking(eng: Any, defn: Definition, us: list[Unit], external: bool, swap_at: int | None,
             make: Any, ticks: list[int]) -> tuple[list[str], list[dict[str, Any]]]:
    """``_run`` with a clock tick (``advance_processing_time``) before each unit, so timers
    fire on ticks as well as on units' processing times."""
    out: list[str] = []
    seen: list[dict[str, Any]] = []
    for i, u in enumerate(us):
        if i == swap_at:  # a stored snapshot (JSON), resumed by a new engine
            eng = make(json.loads(json.dumps(eng.state.snapshot())))
        out.extend(_json(eng.advance_processing_time(u[0] - ticks[i])))
        out.extend(_json(eng.ingest(_batch(defn, u))))
        if external and u[1]:
            out.extend(_json(eng.advance_watermark(max(r[1] for r in u[1]) - 5)))
        seen.append(_observe(eng))
    out.extend(_json(eng.end_of_input()))
    seen.append(_observe(eng))
    return out, seen


def check_ticking(defn: Definition, us: list[Unit], external: bool,
                  data: st.DataObject, engine: Any = SessionKernelEngine) -> Any:
    """Drive the kernel and the general engine through ``us`` with clock ticks between the
    units (and a snapshot/restore of the kernel at a drawn unit): the same output and, after
    every unit and tick, the same observations. Returns the kernel engine (of class
    ``engine``: the sliding timer tests drive theirs through this too)."""
    mode: Any = "external" if external else "internal"
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    ticks = data.draw(st.lists(st.integers(0, 15), min_size=len(us), max_size=len(us)))
    kernel = engine(defn, watermark=mode)
    k_out, k_seen = _ticking(kernel, defn, us, external, swap_at,
                             lambda s: engine(defn, state=s, watermark=mode), ticks)
    g_out, g_seen = _ticking(Engine(defn, watermark=mode), defn, us, external, None, None,
                             ticks)
    assert k_out == g_out
    assert k_seen == g_seen
    return kernel


def _json(out: list[Any]) -> list[str]:
    return [json.dumps(e.to_json(), sort_keys=True) for e in out]


@SETTINGS
@given(defn=timed_session_definitions(), us=units(), external=st.booleans(),
       data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Unit], external: bool, data: st.DataObject
) -> None:
    check_ticking(defn, us, external, data)


@SETTINGS
@given(defn=timed_session_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_with_timers_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def _early_after(accumulation: Any) -> Definition:
    return Definition(
        name="s", key="k", event_time="t", window=Window("session", gap=10),
        aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")),
        watermark=Watermark(delay=100), accumulation=accumulation, allowed_lateness=50,
        trigger=Trigger(emit="custom", early=EarlyTrigger("after", duration=60), on_time=True,
                        late=LateTrigger("after", duration=5)),
    )


def _panes(out: list[Any]) -> list[tuple[Any, ...]]:
    return [(p.window_start, p.window_end, p.timing, p.pane_index, p.retraction, p.values,
             p.emitted_at) for p in out]


def test_a_merged_session_keeps_the_earliest_timer_of_the_sessions_it_replaced() -> None:
    defn = _early_after("retracting")
    eng = SessionKernelEngine(defn)
    assert eng.ingest(_batch(defn, (0, [("a", 0, 1)]))) == []  # timer at 60
    assert eng.ingest(_batch(defn, (30, [("a", 15, 2)]))) == []  # its own timer at 90
    assert eng.ingest(_batch(defn, (40, [("a", 7, 3)]))) == []  # merged: timer at 60
    assert [(w.start, w.timer) for ks in eng.to_engine_state().keys.values()
            for w in ks.windows.values()] == [(0, 60)]
    assert eng.advance_processing_time(59) == []
    assert _panes(eng.advance_processing_time(60)) == [
        (0, 25, "EARLY", 0, False, {"n": 3, "s": 6}, 60)]
    assert eng.advance_processing_time(200) == []  # nothing pending since
    # watermark 100 passes the session: its early pane retracted, then the on-time pane
    assert _panes(eng.ingest(_batch(defn, (210, [("a", 200, 4)])))) == [
        (0, 25, "EARLY", 0, True, {"n": 3, "s": 6}, 210),
        (0, 25, "ON_TIME", 1, False, {"n": 3, "s": 6}, 210)]


def test_a_timer_survives_the_spark_state_blob_both_ways() -> None:
    defn = _early_after("accumulating")
    probe = type(make_engine(defn, None, "external").state)
    for first in (Engine(defn, watermark="external"),
                  SessionKernelEngine(defn, watermark="external")):
        ref = Engine(defn, watermark="external")
        for eng in (first, ref):
            eng.ingest(_batch(defn, (5, [("a", 0, 1), ("b", 3, 2)])))
        resumed = make_engine(defn, decode_state(encode_state(first.state)[0], probe),
                              "external")
        assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
        assert [w.timer for ks in resumed.to_engine_state().keys.values()
                for w in ks.windows.values()] == [65, 65]
        assert _panes(resumed.advance_processing_time(70)) == _panes(
            ref.advance_processing_time(70))
        assert resumed.state.snapshot() == ref.state.snapshot()
