"""Differential tests: session windows on the processing clock (``event_time: processing``:
a record happens at its unit's processing time, and the watermark is processing time itself)
run on the compiled session engine, final or triggered, and must be indistinguishable from the
general engine: replay lines, and after every unit and clock tick the state snapshot, open
windows and late counts; across a snapshot/restore, from a general engine's state, and with
the Spark host's external watermark (which can make records late)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    PROCESSING,
    Aggregation,
    Definition,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import make_engine
from jobs.engine.kernels import SessionKernelEngine, qualification_problems
from tests.engine_kernels.strategies import (
    event_logs,
    session_definitions,
    triggered_session_definitions,
)
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
def clock_definitions(draw: st.DrawFn) -> Definition:
    """Session definitions (final, count or processing-time triggers) on the processing
    clock, with the settings a definition on it may have."""
    base = draw(st.one_of(session_definitions(), triggered_session_definitions(),
                          timed_session_definitions()))
    return replace(base, event_time=PROCESSING, watermark=Watermark(), allowed_lateness=0,
                   lateness_basis="window")


@SETTINGS
@given(defn=clock_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


@SETTINGS
@given(defn=clock_definitions(), us=units(), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit_and_tick(
    defn: Definition, us: list[Unit], external: bool, data: st.DataObject
) -> None:
    assert check_ticking(defn, us, external, data).general is None


@SETTINGS
@given(defn=clock_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def test_a_session_on_the_processing_clock_closes_when_the_clock_passes_its_gap() -> None:
    defn = Definition(name="s", key="k", window=Window("session", gap=10),
                      aggregations=(Aggregation("n", "count"),), trigger=Trigger(emit="final"))
    assert defn.uses_processing_time and qualification_problems(defn) == []
    eng = make_engine(defn)
    assert isinstance(eng, SessionKernelEngine)
    # event times in the batch are ignored: the records happen at 100 and 105
    assert eng.ingest(_batch(defn, (100, [("a", 0, None), ("a", 999, None)]))) == []
    assert eng.ingest(_batch(defn, (105, [("a", -5, None)]))) == []
    assert eng.advance_processing_time(114) == []
    (pane,) = eng.advance_processing_time(115)
    assert (pane.window_start, pane.window_end, pane.values, pane.watermark,
            pane.emitted_at) == (100, 115, {"n": 3}, 115, 115)
    assert eng.max_event_time == 105
