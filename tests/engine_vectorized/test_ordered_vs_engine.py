"""Differential tests for the aggregations over arbitrary JSON values (``first``, ``last``)
in the vectorized final engine: the general engine's output line for line (panes, late lines,
late counts, open windows, ``emitted_at``), across snapshot/restore and across a hand-over
forced by a value the numeric aggregates cannot hold."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition
from jobs.engine.vectorized import qualifies
from tests.engine_vectorized.strategies import Instant, definitions, instants
from tests.engine_vectorized.test_vs_engine import NUMBERS_ODD, run

OBJECT_AGGS = [
    Aggregation("f", "first", "x"),
    Aggregation("l", "last", "x"),
]
NUMERIC_AGGS = [Aggregation("n", "count"), Aggregation("total", "sum", "x")]

JSON_VALUES = st.one_of(
    st.none(), st.integers(-3, 3), st.sampled_from([1.0, 0.5, -0.0, True, False]),
    st.sampled_from(["a", "b", "", "ü"]),
    st.lists(st.integers(0, 2), max_size=2), st.sampled_from([{"a": 1}, {"a": 1.0}, {}]),
)


@st.composite
def object_definitions(draw: st.DrawFn) -> Definition:
    base = draw(definitions())
    objs = draw(st.lists(st.sampled_from(OBJECT_AGGS), min_size=1, max_size=len(OBJECT_AGGS),
                         unique_by=lambda a: a.name))
    nums = draw(st.lists(st.sampled_from(NUMERIC_AGGS), max_size=2, unique_by=lambda a: a.name))
    aggs = draw(st.permutations(objs + nums))
    return dataclasses.replace(base, aggregations=tuple(aggs))


@st.composite
def object_instants(draw: st.DrawFn, has_sum: bool) -> list[Instant]:
    """Instants whose x is any JSON value; while a sum reads x, numbers, sometimes ones the
    arrays cannot hold (booleans, huge ints), which make the vectorized engine hand over."""
    insts = draw(instants(max_instants=7))
    values = NUMBERS_ODD if has_sum else JSON_VALUES
    for inst in insts:
        if draw(st.booleans()):
            inst.rows = [(k, t, draw(values)) for k, t, _ in inst.rows]
    return insts


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=object_definitions(), data=st.data())
def test_first_last_match_general_engine(defn: Definition, data: st.DataObject) -> None:
    assert qualifies(defn) or defn.watermark.scope == "key"
    insts = data.draw(object_instants(any(a.fn == "sum" for a in defn.aggregations)))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v_out, v_seen = run(defn, insts, restore_at, vectorized=True)
    g_out, g_seen = run(defn, insts, None, vectorized=False)
    assert v_out == g_out
    assert v_seen == g_seen


def test_first_last_ties_on_event_time_go_by_arrival() -> None:
    """Equal event times: first is the earliest arrival, last the latest, across instants."""
    from jobs.definition.model import Trigger, Watermark, Window

    defn = Definition(
        name="ties", window=Window("tumbling", size=10), aggregations=tuple(OBJECT_AGGS),
        key="k", event_time="t", watermark=Watermark(delay=5), trigger=Trigger(emit="final"),
    )
    insts = [Instant(1, [("a", 3, "p"), ("a", 3, "q")]), Instant(2, [("a", 3, "r"), ("a", 4, None)])]
    v_out, _ = run(defn, insts, 1, vectorized=True)
    g_out, _ = run(defn, insts, None, vectorized=False)
    assert v_out == g_out
    assert '"f": "p"' in v_out[0] and '"l": "r"' in v_out[0]
