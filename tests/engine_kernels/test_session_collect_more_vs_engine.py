"""Differential tests of ``collect`` / ``count_distinct`` in the compiled session engine with
triggers under per-key watermarks (with and without idle advance) and in discarding mode,
against the general engine: the same replay lines (out-of-order merges, late records, every
accumulation mode and lateness basis), and after every arrival unit and clock tick the same
snapshot and observations, across a snapshot/restore, from a general engine's state and
through the Spark state blob."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, given, settings
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
from jobs.engine.errors import EngineError
from jobs.engine.kernels import SessionKernelEngine, qualification_problems
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.test_session_collect_vs_engine import (
    MIXED,
    SETTINGS,
    SIDE_AGGS,
    mixed_logs,
)
from tests.engine_kernels.test_session_key_triggers_vs_engine import key_triggered_definitions
from tests.engine_kernels.test_session_timers_vs_engine import check_ticking
from tests.engine_kernels.test_session_vs_engine import (
    _batch,
    _run,
    check_general_state_resumes,
    check_replay_lines,
    units,
)


@st.composite
def more_collect_definitions(draw: st.DrawFn) -> Definition:
    """Triggered session definitions (count or processing-time parts, every accumulation
    mode, both lateness bases) under a key or global watermark scope, with or without idle
    advance, with one or both of collect / count_distinct."""
    base = draw(key_triggered_definitions())
    side = draw(st.lists(st.sampled_from(SIDE_AGGS), min_size=1, max_size=2,
                         unique_by=lambda a: a.name))
    others = [a for a in base.aggregations if a.fn in ("count", "first", "last")]
    return replace(base, aggregations=(*side, *others))


DEFNS = more_collect_definitions()


@SETTINGS
@given(defn=DEFNS, log=mixed_logs(), arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


@SETTINGS
@given(defn=DEFNS, us=units(MIXED), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit_and_tick(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    assert check_ticking(defn, us, external, data).general is None


@SETTINGS
@given(defn=DEFNS, us=units(MIXED), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def _defn(accumulation: str, scope: WatermarkScope = "key", idle: bool = False,
          gap: int = 10) -> Definition:
    return Definition(
        name="s", key="k", event_time="t", window=Window("session", gap=gap),
        aggregations=(Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x"),
                      Aggregation("n", "count")),
        accumulation=accumulation, watermark=Watermark(scope=scope, idle_advance=idle),
        allowed_lateness=5,
        trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=1), on_time=True,
                        late=LateTrigger("count", count=1)))


def _values(out: list[Any]) -> list[tuple[Any, ...]]:
    return [(p.key, p.window_start, p.timing, p.retraction, p.values["c"], p.values["d"])
            for p in out]


def test_a_discarding_pane_of_merged_sessions_shows_what_neither_had_shown() -> None:
    """The general engine resets a session's accumulators at each pane, and a merge joins
    the accumulators of the sessions it replaces: the merged session's discarding pane shows
    the values neither session had shown yet (the bridging record's included), in event
    time order, and a distinct count over those alone."""
    defn = _defn("discarding", scope="global")
    unit = (1, [("a", 0, 1), ("a", 15, 2), ("a", 16, 1), ("a", 8, 3)])
    out = SessionKernelEngine(defn).ingest(_batch(defn, unit))
    assert _values(out) == [
        ("a", 0, "EARLY", False, [1], 1), ("a", 15, "EARLY", False, [2], 1),
        ("a", 15, "EARLY", False, [1], 1), ("a", 0, "EARLY", False, [3], 1)]
    assert _values(Engine(defn).ingest(_batch(defn, unit))) == _values(out)


def test_a_keys_own_watermark_fires_collect_panes_between_two_records() -> None:
    """``a`` running ahead passes its own session right after the record that moved its
    watermark: the on-time pane shows the session's values as of that record, retracting
    the early pane; ``b``'s session stays open."""
    defn = _defn("retracting")
    unit = (1, [("a", 0, 1), ("b", 0, 2), ("a", 3, 1), ("a", 100, 4)])
    out = SessionKernelEngine(defn).ingest(_batch(defn, unit))
    assert _values(out)[-2:] == [("a", 0, "EARLY", True, [1, 1], 1),
                                 ("a", 0, "ON_TIME", False, [1, 1], 1)]
    assert _values(Engine(defn).ingest(_batch(defn, unit))) == _values(out)


def _long_units(seed: int) -> list[Any]:
    """80 units of 40 records over 12 keys, each key's time running at its own pace (keys'
    watermarks differ), a fifth of the records up to 120 ms behind, values mixed."""
    rng = np.random.default_rng(seed)
    pace = rng.integers(5, 25, size=12)
    out: list[Any] = []
    for u in range(80):
        rows = []
        for _ in range(40):
            k = int(rng.integers(0, 12))
            lag = int(rng.integers(0, 120)) if rng.random() < 0.2 else int(rng.integers(0, 8))
            rows.append((f"k{k}", int(pace[k]) * u - lag,
                         [int(rng.integers(0, 6)), "a", None][int(rng.integers(0, 3))]))
        out.append((u * 10, rows))
    return out


@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 2**16),
       accumulation=st.sampled_from(["accumulating", "retracting", "discarding", "final"]),
       idle=st.booleans(), swap_at=st.integers(10, 70))
def test_a_long_per_key_stream_keeps_the_general_engines_output_and_forgets_entries(
    seed: int, accumulation: str, idle: bool, swap_at: int
) -> None:
    """Long enough that sessions expire under their keys' watermarks many times, and late
    records open sessions over the times of sessions that expired earlier in the same unit
    (``final``: ``emit: final``): the same lines and observations as the general engine after
    every unit, with a snapshot/restore in between, on the arrays all along; the entries kept
    all lie in open sessions."""
    defn = _defn("accumulating" if accumulation == "final" else accumulation, idle=idle, gap=6)
    if accumulation == "final":
        defn = replace(defn, trigger=Trigger(emit="final"))
    assert not qualification_problems(defn)
    us = _long_units(seed)
    kernels: list[SessionKernelEngine] = []

    def restore(state: Any) -> SessionKernelEngine:
        kernels.append(SessionKernelEngine(defn, state=state))
        return kernels[-1]

    k_out, k_seen = _run(SessionKernelEngine(defn), defn, us, False, swap_at, restore)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert all(k.general is None for k in kernels)
    eng = kernels[-1]
    slots = np.flatnonzero(eng.used)
    for entries in eng.side.values():
        assert (entries.locate(eng.wkey[slots], eng.first[slots], eng.last[slots]) >= 0).all()


def test_a_spark_blob_of_per_key_discarding_collect_resumes_in_either_direction() -> None:
    """The blob of either engine carries the entries not shown yet (the general engine's
    discarding accumulators) and resumes on the other with the same panes."""
    defn = _defn("discarding", idle=True)
    probe = type(make_engine(defn, None, "external").state)
    units_ = [(5, [("a", 0, 1), ("b", 3, "x"), ("a", 4, 1), ("a", 30, None)]),
              (20, [("b", 5, "y"), ("a", 31, 2), ("a", 2, 7)])]
    for first in (Engine(defn, watermark="external"),
                  SessionKernelEngine(defn, watermark="external")):
        ref = Engine(defn, watermark="external")
        for eng in (first, ref):
            eng.ingest(_batch(defn, units_[0]))
            eng.advance_watermark(12)
        blob, _ = encode_state(first.state)
        resumed = make_engine(defn, decode_state(blob, probe), "external")
        assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
        assert resumed.state.snapshot() == ref.state.snapshot()
        for eng in (resumed, ref):
            eng.ingest(_batch(defn, units_[1]))
        assert [json.dumps(e.to_json()) for e in resumed.advance_processing_time(40)] == [
            json.dumps(e.to_json()) for e in ref.advance_processing_time(40)]
        assert [e.to_json() for e in resumed.end_of_input()] == [
            e.to_json() for e in ref.end_of_input()]


def test_a_0_ms_gap_is_refused_as_the_general_engine_refuses_it() -> None:
    """A window built in code with ``gap: 0`` (parsing refuses it): the compiled engine
    ``make_engine`` picks raises the general engine's error, naming the field."""
    defn = _defn("accumulating", gap=0)
    with pytest.raises(EngineError) as general:
        Engine(defn)
    with pytest.raises(EngineError) as compiled:
        make_engine(defn)
    assert str(compiled.value) == str(general.value) == "window.gap: must be greater than 0"


def test_a_session_that_expires_without_a_pane_leaves_no_values_behind() -> None:
    """``a``'s first session shows its early pane, then expires at ``a``'s watermark with
    nothing pending (no pane); a chain of late records, each joining the live session, then
    stretches that session back over the expired one's times: its panes show none of the
    expired session's values, as in the general engine."""
    defn = replace(_defn("accumulating"), trigger=Trigger(
        emit="custom", early=EarlyTrigger("count", count=2), on_time=False))
    us = [(1, [("a", 0, 1), ("a", 1, 2)]), (2, [("a", 100, 3)]),
          (3, [("a", t, t) for t in range(91, 0, -9)])]
    kernel, general = SessionKernelEngine(defn), Engine(defn)
    for u in us:
        assert _values(kernel.ingest(_batch(defn, u))) == _values(
            general.ingest(_batch(defn, u)))
    (w,) = kernel.open_windows()
    assert (w["window_start"], w["values"]["c"]) == (1, [1, 10, 19, 28, 37, 46, 55, 64, 73,
                                                         82, 91, 3])
