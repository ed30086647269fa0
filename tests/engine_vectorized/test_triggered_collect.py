"""Differential tests: ``collect`` and ``count_distinct`` in the compiled triggered engine
(held in its side table) give the general engine's output line for line: panes (each
accumulation mode, retractions included), late lines and counts, open windows, across a
snapshot/restore through JSON and processing-time ticks, over values of mixed types (1 and 1.0
are one distinct value, ``true`` is not 1, null is skipped)."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import Aggregation, Definition
from jobs.engine import make_engine
from jobs.engine.engine import Engine
from jobs.engine.vectorized import triggered_side
from jobs.engine.vectorized.triggered import TriggeredEngine, qualifies_triggered
from jobs.engine.vectorized.triggered_state import load_table, table_state
from tests.engine_vectorized.strategies import Instant, instants
from tests.engine_vectorized.test_triggered_vs_engine import run, triggered_definitions
from tests.engine_vectorized.test_vs_engine import observe
from tests.engine_vectorized.test_vs_reference import batch_of, canon

SIDE_AGGS = [Aggregation("xs", "collect", "x"), Aggregation("d", "count_distinct", "x"),
             Aggregation("n", "count"), Aggregation("nx", "count", "x")]
MIXED = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from([1.0, 2.0, 0.5, True, False]),
                  st.sampled_from(["a", "b", "1"]))


@st.composite
def collect_definitions(draw: st.DrawFn) -> Definition:
    base = draw(triggered_definitions())
    side = draw(st.lists(st.sampled_from(SIDE_AGGS[:2]), min_size=1, max_size=2,
                         unique_by=lambda a: a.name))
    rest = draw(st.lists(st.sampled_from(SIDE_AGGS[2:]), max_size=2, unique_by=lambda a: a.name))
    return dataclasses.replace(base, aggregations=tuple(draw(st.permutations(side + rest))))


@st.composite
def mixed_instants(draw: st.DrawFn) -> list[Instant]:
    insts = draw(instants(max_instants=7))
    for inst in insts:
        inst.rows = [(k, t, draw(MIXED)) for k, t, _ in inst.rows]
    return insts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=collect_definitions(), data=st.data())
def test_collect_and_count_distinct_match_general_engine(
    defn: Definition, data: st.DataObject
) -> None:
    assert qualifies_triggered(defn)
    insts = data.draw(mixed_instants())
    ticks = [data.draw(st.sampled_from([0, 0, 7, 100])) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    t_out, t_seen = run(defn, insts, restore_at, triggered=True, ticks=ticks)
    g_out, g_seen = run(defn, insts, None, triggered=False, ticks=ticks)
    assert t_out == g_out
    assert t_seen == g_seen


def _panes(eng: Any, insts: list[Instant], defn: Definition) -> list[tuple[Any, ...]]:
    out = []
    for inst in insts:
        out.extend(eng.ingest(batch_of(defn, inst)))
    out.extend(eng.end_of_input())
    return [(p.timing, p.retraction, p.values) for p in out if hasattr(p, "timing")]


def test_retracting_early_counts_with_a_late_record() -> None:
    """A hand-checked case: early every record, retracting; a late record allowed by the
    lateness fires a late pane over everything the window holds."""
    defn = load_definition({
        "name": "d", "key": "k", "event_time": "t",
        "window": {"type": "tumbling", "size": 100},
        "aggregations": [{"name": "xs", "fn": "collect", "of": "x"},
                         {"name": "d", "fn": "count_distinct", "of": "x"}],
        "watermark": {"delay": 0}, "allowed_lateness": 100,
        "trigger": {"emit": "custom", "early": {"count": 1}, "on_time": True,
                    "late": {"count": 1}},
        "accumulation": "retracting",
    })
    insts = [Instant(1, [("a", 5, 1), ("a", 3, 1.0)]), Instant(2, [("b", 150, None)]),
             Instant(3, [("a", 7, "1")])]
    eng = make_engine(defn)
    assert isinstance(eng, TriggeredEngine)
    got = _panes(eng, insts, defn)
    assert got == _panes(Engine(defn), insts, defn)
    assert got[:4] == [("EARLY", False, {"xs": [1], "d": 1}),
                       ("EARLY", True, {"xs": [1], "d": 1}),
                       ("EARLY", False, {"xs": [1.0, 1], "d": 1}),
                       ("EARLY", False, {"xs": [], "d": 0})]
    assert ("LATE", False, {"xs": [1.0, 1, "1"], "d": 2}) in got


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=collect_definitions(), data=st.data())
def test_compacting_the_side_table_changes_nothing(defn: Definition, data: st.DataObject) -> None:
    """With compaction after every freed window or shown pane, the output and state are
    still the general engine's (compaction renumbers windows and entries)."""
    insts = data.draw(mixed_instants())
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    saved = triggered_side._COMPACT_AT
    triggered_side._COMPACT_AT = 0
    try:
        t_out, t_seen = run(defn, insts, restore_at, triggered=True)
    finally:
        triggered_side._COMPACT_AT = saved
    g_out, g_seen = run(defn, insts, None, triggered=False)
    assert t_out == g_out
    assert t_seen == g_seen


def _run_through_table(defn: Definition, insts: list[Instant], restore_at: int,
                       ticks: list[int]) -> tuple[list[str], list[dict[str, Any]]]:
    """``run`` with the engine resumed once from its table form through MessagePack, as the
    Spark host stores it."""
    eng = TriggeredEngine(defn)
    out: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    for i, inst in enumerate(insts):
        if i == restore_at:
            data = msgspec.msgpack.decode(msgspec.msgpack.encode(table_state(eng)))
            eng = TriggeredEngine(defn)
            load_table(eng, data)
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        seen.append(observe(eng))
        if ticks[i]:
            now = eng.state.processing_time + ticks[i]
            out.extend(e.to_json() for e in eng.advance_processing_time(now))
            seen.append(observe(eng))
    out.extend(e.to_json() for e in eng.end_of_input())
    seen.append(observe(eng))
    return canon(out), seen


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=collect_definitions(), data=st.data())
def test_table_form_round_trip_resumes_exactly(defn: Definition, data: st.DataObject) -> None:
    """The side table travels in the engine's table form (the Spark state blob): an engine
    resumed from it continues as the general engine that never stopped."""
    insts = data.draw(mixed_instants())
    ticks = [data.draw(st.sampled_from([0, 0, 7, 100])) for _ in insts]
    restore_at = data.draw(st.integers(0, len(insts) - 1))
    t_out, t_seen = _run_through_table(defn, insts, restore_at, ticks)
    g_out, g_seen = run(defn, insts, None, triggered=False, ticks=ticks)
    assert t_out == g_out
    assert t_seen == g_seen
