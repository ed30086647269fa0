"""The dense slice store (jobs.engine.vectorized.dense) must be invisible: the same engine run on
the sparse store gives the same output bit for bit (float sums included, since both add in the
same order), across a switch to the sparse store when the cell budget is exceeded, across
snapshot/restore (dense -> sparse JSON -> dense) and hand-over to the general engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import INFINITE, Aggregation, Definition, Trigger, Watermark, Window
from jobs.engine.engine import Engine
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized import VectorizedEngine
from jobs.engine.vectorized import dense as dense_mod
from jobs.engine.vectorized.dense import DenseStore
from jobs.engine.vectorized.engine import VectorizedState
from jobs.engine.vectorized.store import SliceStore
from tests.engine_vectorized.strategies import AGG_CHOICES, KEYS, Instant, definitions
from tests.engine_vectorized.test_vs_engine import observe
from tests.engine_vectorized.test_vs_reference import batch_of, canon


@contextmanager
def sparse_only() -> Iterator[None]:
    with mock.patch("jobs.engine.vectorized.engine.dense_eligible", lambda geo, ks: False):
        yield


@contextmanager
def cell_budget(cells: int) -> Iterator[None]:
    with mock.patch.object(dense_mod, "DENSE_MAX_CELLS", cells):
        yield


def run(
    defn: Definition, insts: list[Instant], restore_at: int | None
) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    eng = VectorizedEngine(defn)
    out: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    stores: list[str] = []
    for i, inst in enumerate(insts):
        if i == restore_at:
            snap = json.loads(json.dumps(eng.state.snapshot()))
            if snap.get("engine") == "vectorized":
                eng = VectorizedEngine(defn, state=VectorizedState.restore(snap))
            else:
                eng = VectorizedEngine(defn, state=snap)
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        seen.append(observe(eng))
        stores.append(type(eng.store).__name__)
    out.extend(e.to_json() for e in eng.end_of_input())
    seen.append(observe(eng))
    return canon(out), seen, stores


# floats that are not exactly representable: any change of summation order shows
FLOATS = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
VALUES = st.one_of(st.integers(-50, 50), FLOATS, st.none(), st.sampled_from([0.1, 0.2, 0.3, -0.0]))


@st.composite
def many_window_definitions(draw: st.DrawFn) -> Definition:
    """Hopping windows of up to 16 slices (size a multiple of the step, or not)."""
    step = draw(st.integers(1, 6))
    size = step * draw(st.integers(1, 16)) + draw(st.sampled_from([0, 0, 1]))
    aggs = draw(st.lists(st.sampled_from(AGG_CHOICES), min_size=1, max_size=6, unique_by=lambda a: a.name))
    return Definition(
        name="dense", window=Window("hopping", size=size, step=step, align_to=draw(st.integers(-3, 3))),
        aggregations=tuple(aggs), key="k", event_time="t",
        watermark=Watermark(delay=draw(st.sampled_from([0, 1, 3, 10, INFINITE]))),
        allowed_lateness=draw(st.sampled_from([0, 2, 5, 30, INFINITE])),
        lateness_basis=draw(st.sampled_from(["window", "event"])), trigger=Trigger(emit="final"),
    )


@st.composite
def float_instants(draw: st.DrawFn, max_instants: int = 8) -> list[Instant]:
    out = []
    pt, base = draw(st.integers(0, 100)), draw(st.integers(-20, 20))
    for _ in range(draw(st.integers(1, max_instants))):
        pt += draw(st.integers(0, 50))
        rows = draw(st.lists(
            st.tuples(st.sampled_from(KEYS), st.integers(base, base + 60), VALUES), max_size=14,
        ))
        base += draw(st.integers(0, 12))
        out.append(Instant(pt, rows))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    defn=st.one_of(definitions(), many_window_definitions()),
    insts=float_instants(),
    budget=st.sampled_from([64, 128, 256, 1 << 20]),
    data=st.data(),
)
def test_dense_store_is_bit_identical_to_sparse_store(
    defn: Definition, insts: list[Instant], budget: int, data: st.DataObject
) -> None:
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    with cell_budget(budget):
        d_out, d_seen, _ = run(defn, insts, restore_at)
    with sparse_only():
        s_out, s_seen, stores = run(defn, insts, None)
    assert set(stores) <= {"SliceStore"}
    assert d_out == s_out
    assert d_seen == s_seen


def zipf_batches(n: int, n_keys: int, batch: int, floats: bool, seed: int = 3) -> list[RecordBatch]:
    """The replay benchmark's input shape, small: hot keys and a long tail, out-of-order times,
    stragglers (some accepted late, some dropped)."""
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.integers(0, 3_600_000, n))
    delay = rng.exponential(2_000, n).astype(np.int64)
    strag = rng.random(n) < 0.02
    delay[strag] = rng.integers(0, 300_000, int(strag.sum()))
    et = arrival - delay
    kid = (rng.zipf(1.3, n) - 1) % n_keys
    v: Any = rng.normal(0, 1000, n) if floats else rng.integers(-1000, 1000, n)
    out = []
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        col = v[lo:hi].copy()
        out.append(RecordBatch(
            keys=[f"k{int(i)}" for i in kid[lo:hi]], event_times=et[lo:hi].copy(),
            columns={"total": col, "lo": col, "hi": col, "avg": col},
            processing_time=int(arrival[hi - 1]),
        ))
    return out


def bench_defn(window: Window) -> Definition:
    return Definition(
        name="b", window=window, key="user", event_time="et", watermark=Watermark(delay=10_000),
        allowed_lateness=30_000, trigger=Trigger(emit="final"),
        aggregations=(Aggregation("total", "sum", "v"), Aggregation("n", "count"),
                      Aggregation("lo", "min", "v"), Aggregation("hi", "max", "v"),
                      Aggregation("avg", "mean", "v")),
    )


def drive(eng: Any, batches: list[RecordBatch]) -> list[str]:
    out = [e.to_json() for b in batches for e in eng.ingest(b)]
    out.extend(e.to_json() for e in eng.end_of_input())
    return canon(out)


WINDOWS = [
    Window("tumbling", size=900_000),
    Window("hopping", size=1_200_000, step=300_000),
    Window("hopping", size=1_000_000, step=300_000),  # slices of 100 s, 10 per window
    Window("global"),
]


def test_benchmark_shapes_run_dense_and_match_sparse_and_general() -> None:
    for window in WINDOWS:
        defn = bench_defn(window)
        for floats in (False, True):
            batches = zipf_batches(20_000, 500, 2_000, floats)
            eng = VectorizedEngine(defn)
            dense_out = drive_no_end(eng, batches[:3])
            assert isinstance(eng.store, DenseStore)
            dense_out += drive(eng, batches[3:])
            with sparse_only():
                sparse_out = drive(VectorizedEngine(defn), batches)
            assert dense_out == sparse_out, (window, floats)
            if not floats or window.type != "hopping":  # hopping float sums: see docs
                assert dense_out == drive(Engine(defn), batches), (window, floats)


def test_over_budget_switches_to_sparse_and_keeps_the_output() -> None:
    defn = bench_defn(Window("hopping", size=1_200_000, step=300_000))
    batches = zipf_batches(20_000, 500, 2_000, True)
    with sparse_only():
        want = drive(VectorizedEngine(defn), batches)
    with cell_budget(2_000):  # 500 keys: fits a few slots, not all of them
        eng = VectorizedEngine(defn)
        got = drive(eng, batches)
    assert isinstance(eng.store, SliceStore)
    assert got == want


def test_snapshot_of_dense_store_restores_dense_or_sparse() -> None:
    defn = bench_defn(Window("hopping", size=1_200_000, step=300_000))
    batches = zipf_batches(10_000, 300, 1_000, True)
    eng = VectorizedEngine(defn)
    first = drive_no_end(eng, batches[:5])
    snap = json.loads(json.dumps(eng.state.snapshot()))
    assert isinstance(eng.store, DenseStore) and snap["store"]["key"]
    restored = VectorizedEngine(defn, state=VectorizedState.restore(snap))
    assert isinstance(restored.store, DenseStore)
    assert restored.open_windows() == eng.open_windows()
    with cell_budget(64):  # too small for the restored state: it stays sparse
        small = VectorizedEngine(defn, state=VectorizedState.restore(snap))
        assert isinstance(small.store, SliceStore)
        rest_small = drive(small, batches[5:])
    rest = drive(restored, batches[5:])
    assert rest == rest_small
    with sparse_only():
        ref = VectorizedEngine(defn)
        assert first == drive_no_end(ref, batches[:5])
        assert rest == drive(ref, batches[5:])


def drive_no_end(eng: Any, batches: list[RecordBatch]) -> list[str]:
    return canon([e.to_json() for b in batches for e in eng.ingest(b)])


def test_far_apart_slices_in_one_batch_and_growing_keys() -> None:
    """Slices spread wider than the slot range table (np.unique path), negative times, and
    key capacity re-laid out while slots hold state."""
    defn = bench_defn(Window("hopping", size=40, step=10, align_to=3))
    big = 10**12
    insts = [
        RecordBatch(keys=["a", "b", "a"], event_times=np.array([-5, big, 7]),
                    columns={n: np.array([1, 2, 3]) for n in ("total", "lo", "hi", "avg")},
                    processing_time=1),
        RecordBatch(keys=[f"k{i}" for i in range(200)], event_times=np.arange(200) * 3 - 50,
                    columns={n: np.linspace(-1, 1, 200) for n in ("total", "lo", "hi", "avg")},
                    processing_time=2),
        RecordBatch(keys=["z", "a"], event_times=np.array([big + 15, big + 100]),
                    columns={n: np.array([0.1, 0.2]) for n in ("total", "lo", "hi", "avg")},
                    processing_time=3),
    ]
    eng = VectorizedEngine(defn)
    got = drive(eng, insts)
    assert isinstance(eng.store, DenseStore)
    with sparse_only():
        want = drive(VectorizedEngine(defn), insts)
    assert got == want
    assert got == drive(Engine(defn), insts)


def test_new_key_with_only_dropped_records_beyond_key_capacity() -> None:
    """(Found by hypothesis) a key coded after the last capacity growth, all of whose records
    were dropped, has no cells: firing must not index past the capacity."""
    defn = Definition(
        name="cap", window=Window("tumbling", size=1), aggregations=(Aggregation("n", "count"),),
        key="k", event_time="t", watermark=Watermark(delay=0), allowed_lateness=0,
        trigger=Trigger(emit="final"),
    )
    insts = [Instant(0, [("a", 0, 17), ("a", 1, None)]), Instant(0, [("b", 0, None)])]
    with cell_budget(64):
        d_out, d_seen, _ = run(defn, insts, None)
    with sparse_only():
        s_out, s_seen, _ = run(defn, insts, None)
    assert (d_out, d_seen) == (s_out, s_seen)
