"""Differential tests for the aggregations over arbitrary JSON values (``first``, ``last``,
``collect``, ``count_distinct``)
in the vectorized final engine: the general engine's output line for line (panes, late lines,
late counts, open windows, ``emitted_at``), across snapshot/restore and across a hand-over
forced by a value the numeric aggregates cannot hold."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition, Trigger, Watermark, Window
from jobs.engine.engine import Engine
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized import VectorizedEngine, qualifies
from jobs.engine.vectorized.dense import DenseStore
from jobs.engine.vectorized.engine import VectorizedState
from tests.engine_vectorized.strategies import Instant, definitions, instants
from tests.engine_vectorized.test_dense_store import cell_budget
from tests.engine_vectorized.test_vs_engine import NUMBERS_ODD, run
from tests.engine_vectorized.test_vs_reference import batch_of, canon

OBJECT_AGGS = [
    Aggregation("f", "first", "x"),
    Aggregation("l", "last", "x"),
    Aggregation("xs", "collect", "x"),
    Aggregation("d", "count_distinct", "x"),
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=object_definitions(), data=st.data())
def test_object_aggregations_match_general_engine(defn: Definition, data: st.DataObject) -> None:
    assert qualifies(defn) or defn.watermark.scope == "key"
    insts = data.draw(object_instants(any(a.fn == "sum" for a in defn.aggregations)))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v_out, v_seen = run(defn, insts, restore_at, vectorized=True)
    g_out, g_seen = run(defn, insts, None, vectorized=False)
    assert v_out == g_out
    assert v_seen == g_seen


def test_first_last_ties_on_event_time_go_by_arrival() -> None:
    """Equal event times: first is the earliest arrival, last the latest, across instants."""
    defn = Definition(
        name="ties", window=Window("tumbling", size=10), aggregations=tuple(OBJECT_AGGS),
        key="k", event_time="t", watermark=Watermark(delay=5), trigger=Trigger(emit="final"),
    )
    insts = [Instant(1, [("a", 3, "p"), ("a", 3, "q")]), Instant(2, [("a", 3, "r"), ("a", 4, None)])]
    v_out, _ = run(defn, insts, 1, vectorized=True)
    g_out, _ = run(defn, insts, None, vectorized=False)
    assert v_out == g_out
    assert '"f": "p"' in v_out[0] and '"l": "r"' in v_out[0]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=object_definitions(), budget=st.sampled_from([64, 128, 1 << 20]), data=st.data())
def test_object_aggregations_across_dense_to_sparse_switch(
    defn: Definition, budget: int, data: st.DataObject
) -> None:
    """A small cell budget turns the dense store sparse mid-stream; the side tables move."""
    insts = data.draw(object_instants(any(a.fn == "sum" for a in defn.aggregations)))
    with cell_budget(budget):
        v_out, v_seen = run(defn, insts, None, vectorized=True)
    g_out, g_seen = run(defn, insts, None, vectorized=False)
    assert v_out == g_out
    assert v_seen == g_seen


def _many_key_batches(window: Window, n: int, n_keys: int, batch: int) -> list[RecordBatch]:
    """Hundreds of keys (the dense store's key capacity doubles, moving every cell), strings
    and ints, out-of-order times and stragglers (some late, some dropped)."""
    rng = np.random.default_rng(7)
    arrival = np.sort(rng.integers(0, 600_000, n))
    et = arrival - rng.exponential(2_000, n).astype(np.int64)
    strag = rng.random(n) < 0.03
    et[strag] -= rng.integers(0, 120_000, int(strag.sum()))
    kid = (rng.zipf(1.3, n) - 1) % n_keys
    words = np.array(["x", "y", "z", "ü", "w0"], dtype=object)[rng.integers(0, 5, n)]
    ints = rng.integers(0, 6, n)
    out = []
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        cols = {"f": words[lo:hi].tolist(), "l": ints[lo:hi], "xs": words[lo:hi].tolist(),
                "d": ints[lo:hi], "ds": words[lo:hi].tolist()}
        out.append(RecordBatch(
            keys=[f"k{int(i)}" for i in kid[lo:hi]], event_times=et[lo:hi].copy(),
            columns=cols, processing_time=int(arrival[hi - 1]),
        ))
    return out


def test_many_keys_dense_store_growth_and_snapshot_match_general() -> None:
    aggs = (Aggregation("f", "first", "w"), Aggregation("l", "last", "i"),
            Aggregation("xs", "collect", "w"), Aggregation("d", "count_distinct", "i"),
            Aggregation("ds", "count_distinct", "w"))
    for window in (Window("tumbling", size=60_000), Window("hopping", size=90_000, step=30_000)):
        defn = Definition(
            name="many", window=window, aggregations=aggs, key="k", event_time="t",
            watermark=Watermark(delay=5_000), allowed_lateness=20_000,
            trigger=Trigger(emit="final"),
        )
        batches = _many_key_batches(window, 4_000, 300, 400)
        eng = VectorizedEngine(defn)
        got = [e.to_json() for b in batches[:6] for e in eng.ingest(b)]
        assert isinstance(eng.store, DenseStore) and eng.store.cap >= 256
        snap = json.loads(json.dumps(eng.state.snapshot()))
        eng = VectorizedEngine(defn, state=VectorizedState.restore(snap))
        got += [e.to_json() for b in batches[6:] for e in eng.ingest(b)]
        got += [e.to_json() for e in eng.end_of_input()]
        general = Engine(defn)
        want = [e.to_json() for b in batches for e in general.ingest(b)]
        want += [e.to_json() for e in general.end_of_input()]
        assert canon(got) == canon(want), window
        assert any(o.get("type") != "pane" for o in want)  # late records took part


def test_general_engine_snapshot_of_a_now_qualifying_definition_resumes() -> None:
    """A state the general engine wrote for a collect definition (before it qualified here),
    restored the way hosts restore (the picked engine's state class), keeps its windows."""
    from jobs.engine import make_engine

    defn = Definition(
        name="old", window=Window("tumbling", size=10), aggregations=tuple(OBJECT_AGGS),
        key="k", event_time="t", watermark=Watermark(delay=0), trigger=Trigger(emit="final"),
    )
    insts = [Instant(1, [("a", 3, "p"), ("b", 4, [1])]), Instant(2, [("a", 12, "q")])]
    general = Engine(defn)
    want = [e.to_json() for e in general.ingest(batch_of(defn, insts[0]))]
    snap = json.loads(json.dumps(general.state.snapshot()))
    state_cls = type(make_engine(defn).state)
    assert state_cls is VectorizedState
    eng = make_engine(defn, state=state_cls.restore(snap))
    got = [e.to_json() for e in eng.ingest(batch_of(defn, insts[1]))]
    got += [e.to_json() for e in eng.end_of_input()]
    want += [e.to_json() for e in general.ingest(batch_of(defn, insts[1]))]
    want += [e.to_json() for e in general.end_of_input()]
    assert canon(got) == canon(want) and len(want) == 3
