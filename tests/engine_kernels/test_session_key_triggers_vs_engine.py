"""Differential tests: session windows that fire more than once (count and processing-time
triggers, every accumulation mode and lateness basis) under per-key watermarks
(``watermark.scope: key``) and idle advance run on the compiled session engine and must be
indistinguishable from the general engine: replay lines, and after every unit and clock tick
the state snapshot (each key's watermark and idle base, timers, panes to retract), open
windows, late counts; across a snapshot/restore, from a general engine's state, and with the
Spark host's external watermark."""

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
    WatermarkScope,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SessionKernelEngine, qualification_problems
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.strategies import event_logs, triggered_session_definitions
from tests.engine_kernels.test_session_timers_vs_engine import (
    check_ticking,
    timed_session_definitions,
)
from tests.engine_kernels.test_session_vs_engine import (
    SETTINGS,
    Unit,
    _batch,
    check_general_state_resumes,
    check_replay_lines,
    units,
)

SETTINGS = settings(SETTINGS, max_examples=30)


@st.composite
def key_triggered_definitions(draw: st.DrawFn) -> Definition:
    """Triggered session definitions (count or processing-time parts) under a key or global
    watermark scope, with or without idle advance."""
    base = draw(st.one_of(triggered_session_definitions(), timed_session_definitions()))
    scope: WatermarkScope = draw(st.sampled_from(["key", "key", "global"]))
    idle = draw(st.booleans()) if scope == "key" else True
    return replace(base, watermark=replace(base.watermark, scope=scope, idle_advance=idle))


@SETTINGS
@given(defn=key_triggered_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


@SETTINGS
@given(defn=key_triggered_definitions(), us=units(), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit_and_tick(
    defn: Definition, us: list[Unit], external: bool, data: st.DataObject
) -> None:
    assert check_ticking(defn, us, external, data).general is None


@SETTINGS
@given(defn=key_triggered_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    """Mid-stream general state: per-key watermarks and idle bases, windows passed at their
    own key's watermark, pending counts, timers, panes to retract."""
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def _defn(**wm: Any) -> Definition:
    return Definition(
        name="s", key="k", event_time="t", window=Window("session", gap=10),
        aggregations=(Aggregation("n", "count"),), accumulation="retracting",
        watermark=Watermark(scope="key", **wm), allowed_lateness=5,
        trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=1), on_time=True,
                        late=LateTrigger("count", count=1)),
    )


def _panes(out: list[Any]) -> list[tuple[Any, ...]]:
    return [(p.key, p.window_start, p.timing, p.pane_index, p.retraction, p.watermark)
            for p in out]


def test_a_keys_own_watermark_fires_its_on_time_pane_between_two_records() -> None:
    """``a`` running ahead passes its own session at once, after the early pane of the
    record that moved its watermark (the session's early pane retracted, then the on-time
    one, showing ``a``'s new watermark); ``b``'s session stays early."""
    defn = _defn()
    eng = SessionKernelEngine(defn)
    unit = (1, [("a", 0, None), ("b", 0, None), ("a", 100, None)])
    out = eng.ingest(_batch(defn, unit))
    assert _panes(out) == [
        ("a", 0, "EARLY", 0, False, None), ("b", 0, "EARLY", 0, False, None),
        ("a", 100, "EARLY", 0, False, 0),
        ("a", 0, "EARLY", 0, True, 100), ("a", 0, "ON_TIME", 1, False, 100)]
    assert _panes(Engine(defn).ingest(_batch(defn, unit))) == _panes(out)
    assert eng.watermark is None
    assert eng.state.snapshot() == Engine(defn, state=eng.to_engine_state()).state.snapshot()


def test_an_idle_keys_watermark_passes_and_expires_its_session() -> None:
    defn = _defn(idle_advance=True)
    eng = SessionKernelEngine(defn)
    eng.ingest(_batch(defn, (1000, [("a", 0, None)])))
    assert eng.advance_processing_time(1009) == []
    assert _panes(eng.advance_processing_time(1010)) == [  # a's watermark at 0 + gap
        ("a", 0, "EARLY", 0, True, 10), ("a", 0, "ON_TIME", 1, False, 10)]
    late = eng.ingest(_batch(defn, (1012, [("a", 0, None)])))  # the watermark is 12
    assert _panes(late) == [("a", 0, "ON_TIME", 1, True, 12), ("a", 0, "LATE", 2, False, 12)]
    assert eng.advance_processing_time(1014) == []
    assert _panes(eng.advance_processing_time(1015)) == []  # expired, nothing pending
    assert eng.open_windows() == []


def test_triggered_sessions_take_per_key_watermarks_and_idle_advance() -> None:
    defn = _defn(idle_advance=True)
    assert qualification_problems(defn) == []
    assert isinstance(make_engine(defn), SessionKernelEngine)
    sliding = replace(defn, window=Window("sliding", size=10))  # triggered sliding windows
    assert qualification_problems(sliding) == []


def test_a_spark_state_blob_with_key_watermarks_resumes_in_either_direction() -> None:
    """The Spark host drives a global watermark (``scope: key`` falls back to it there, as
    in the general engine); the blob of either engine resumes on the other."""
    defn = _defn(idle_advance=True)
    probe = type(make_engine(defn, None, "external").state)
    for first in (Engine(defn, watermark="external"),
                  SessionKernelEngine(defn, watermark="external")):
        ref = Engine(defn, watermark="external")
        for eng in (first, ref):
            eng.ingest(_batch(defn, (5, [("a", 0, None), ("b", 3, None), ("a", 30, None)])))
            eng.advance_watermark(12)
        resumed = make_engine(defn, decode_state(encode_state(first.state)[0], probe),
                              "external")
        assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
        for eng in (resumed, ref):
            eng.ingest(_batch(defn, (20, [("b", 5, None), ("a", 31, None)])))
        assert [json.dumps(e.to_json()) for e in resumed.advance_processing_time(40)] == [
            json.dumps(e.to_json()) for e in ref.advance_processing_time(40)]
        assert resumed.state.snapshot() == ref.state.snapshot()
