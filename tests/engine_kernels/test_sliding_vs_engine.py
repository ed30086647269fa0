"""Differential tests: the compiled sliding (KIP-450) engine must be indistinguishable from the
general engine on every definition it runs: the same replay output lines (panes, late records,
``emitted_at``, watermarks) under every arrival model, and after every arrival unit the same
state snapshot (held records, windows, late counts), open windows, late counts, watermark and
max event time, also across a snapshot/restore and when it starts from a general engine's
state."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, cast

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    INFINITE,
    Aggregation,
    Definition,
    Trigger,
    Watermark,
    WatermarkStrategy,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingKernelEngine, SlidingTriggerEngine
from jobs.engine.records import RecordBatch
from tests.engine_kernels.strategies import AGG_CHOICES, KEYS, VALUES, event_logs
from tests.engine_kernels.test_session_vs_engine import check_replay_lines

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def sliding_definitions(draw: st.DrawFn) -> Definition:
    aggs = draw(st.lists(st.sampled_from(AGG_CHOICES), min_size=1, max_size=8,
                         unique_by=lambda a: a.name))
    strategy = cast(WatermarkStrategy, draw(st.sampled_from(["bounded", "bounded", "source"])))
    return Definition(
        name="slide",
        window=Window("sliding", size=draw(st.sampled_from([1, 2, 5, 10, 20]))),
        aggregations=tuple(aggs),
        key="k",
        event_time="t",
        watermark=Watermark(strategy=strategy,
                            delay=draw(st.sampled_from([0, 0, 1, 3, 10, INFINITE]))),
        allowed_lateness=draw(st.sampled_from([0, 0, 2, 5, 30, INFINITE])),
        lateness_basis=draw(st.sampled_from(["window", "event"])),
        trigger=Trigger(emit="final"),
        accumulation=draw(st.sampled_from(["discarding", "accumulating", "retracting"])),
    )


@SETTINGS
@given(defn=sliding_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingKernelEngine)


Unit = tuple[int, list[tuple[Any, int, Any]]]


@st.composite
def units(draw: st.DrawFn, values: st.SearchStrategy[Any] = VALUES) -> list[Unit]:
    """Arrival units of records around a rising time, out of order by up to 30 ms, with
    repeated event times (sliding windows tie on them)."""
    out: list[Unit] = []
    pt, base = draw(st.integers(0, 50)), draw(st.integers(-20, 20))
    for _ in range(draw(st.integers(1, 8))):
        pt += draw(st.integers(0, 20))
        rows = draw(st.lists(st.tuples(st.sampled_from(KEYS[:4]),
                                       st.integers(base - 30, base + 30), values),
                             max_size=14))
        base += draw(st.integers(0, 15))
        out.append((pt, rows))
    return out


def _batch(defn: Definition, unit: Unit) -> RecordBatch:
    pt, rows = unit
    return RecordBatch(
        keys=[r[0] for r in rows], event_times=np.array([r[1] for r in rows], dtype=np.int64),
        columns={a.name: [r[2] for r in rows] for a in defn.aggregations if a.of is not None},
        records=[{"k": r[0], "t": r[1], "x": r[2]} for r in rows], processing_time=pt,
    )


def _observe(eng: Any) -> dict[str, Any]:
    return {
        "open": json.dumps(eng.open_windows(), sort_keys=True),
        "late": json.dumps(eng.drain_late_counts(), sort_keys=True),
        "totals": json.dumps(eng.late_totals(), sort_keys=True),
        "wm": eng.watermark, "max_t": eng.max_event_time,
        "state": json.dumps(eng.state.snapshot(), sort_keys=True),
    }


def _run(eng: Any, defn: Definition, us: list[Unit], external: bool, swap_at: int | None,
         make: Any, drain: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    out: list[str] = []
    seen: list[dict[str, Any]] = []
    for i, u in enumerate(us):
        if i == swap_at:  # a stored snapshot (JSON), resumed by a new engine
            eng = make(json.loads(json.dumps(eng.state.snapshot())))
        out.extend(json.dumps(e.to_json(), sort_keys=True) for e in eng.ingest(_batch(defn, u)))
        if external and u[1]:
            out.extend(json.dumps(e.to_json(), sort_keys=True)
                       for e in eng.advance_watermark(max(r[1] for r in u[1]) - 5))
        seen.append(_observe(eng) if drain else {"state": json.dumps(eng.state.snapshot(),
                                                                     sort_keys=True)})
    out.extend(json.dumps(e.to_json(), sort_keys=True) for e in eng.end_of_input())
    seen.append(_observe(eng))
    return out, seen


@SETTINGS
@given(defn=sliding_definitions(), us=units(), external=st.booleans(), drain=st.booleans(),
       data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Unit], external: bool, drain: bool, data: st.DataObject
) -> None:
    mode: Any = "external" if external else "internal"
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    kernel = SlidingKernelEngine(defn, watermark=mode)
    k_out, k_seen = _run(kernel, defn, us, external, swap_at,
                         lambda s: SlidingKernelEngine(defn, state=s, watermark=mode), drain)
    g_out, g_seen = _run(Engine(defn, watermark=mode), defn, us, external, None, None, drain)
    assert k_out == g_out
    assert k_seen == g_seen


@SETTINGS
@given(defn=sliding_definitions(), us=units(st.integers(-50, 50) | st.none()), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(us)))
    g = Engine(defn)
    for u in us[:cut]:
        g.ingest(_batch(defn, u))
    resumed = make_engine(defn, state=g.state.snapshot())
    assert isinstance(resumed, SlidingKernelEngine)
    assert resumed.general is None  # int inputs: any order of additions gives the same state
    k_out, k_seen = _run(resumed, defn, us[cut:], False, None, None)
    g_out, g_seen = _run(g, defn, us[cut:], False, None, None)
    assert k_out == g_out and k_seen == g_seen


ODD = st.one_of(VALUES, st.booleans(), st.sampled_from([2**60, 2**70, "a", "zz"]))


@SETTINGS
@given(us=units(ODD), data=st.data())
def test_values_the_arrays_cannot_hold_hand_over_with_the_same_output(
    us: list[Unit], data: st.DataObject
) -> None:
    ordered = (Aggregation("nx", "count", "x"), Aggregation("f", "first", "x"),
               Aggregation("l", "last", "x"))
    numeric = (Aggregation("lo", "min", "x"), Aggregation("hi", "max", "x"))
    only_ordered = data.draw(st.booleans())
    defn = Definition(
        name="odd", key="k", event_time="t", window=Window("sliding", size=7),
        aggregations=ordered if only_ordered else numeric + ordered,
        watermark=Watermark(delay=data.draw(st.sampled_from([0, 5]))),
        allowed_lateness=data.draw(st.sampled_from([0, 10])), trigger=Trigger(emit="final"),
    )
    kernel = SlidingKernelEngine(defn)
    k_out, k_seen = _run(kernel, defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out and k_seen == g_seen
    if only_ordered:  # count/first/last hold any value: no hand-over
        assert kernel.general is None


def test_make_engine_picks_the_kernel_engine_only_for_what_it_runs() -> None:
    base = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"),), trigger=Trigger(emit="final"))
    assert isinstance(make_engine(base), SlidingKernelEngine)
    assert type(make_engine(base, vectorized=False)) is Engine
    # count triggers: the compiled engine of sliding windows with triggers
    assert isinstance(make_engine(replace(base, trigger=Trigger(emit="current"))),
                      SlidingTriggerEngine)
    assert isinstance(make_engine(replace(base, watermark=Watermark(scope="key"))),
                      SlidingKernelEngine)
    assert isinstance(make_engine(replace(base, aggregations=(Aggregation("c", "collect", "x"),),
                                          trigger=Trigger("current"))), SlidingTriggerEngine)
    assert isinstance(make_engine(replace(base, watermark=Watermark(scope="key"),
                                          trigger=Trigger(emit="current"))),
                      SlidingTriggerEngine)


def test_an_out_of_order_record_creates_its_windows_and_joins_the_others() -> None:
    """Records at 0 and 5 (size 10), then 3: the windows are KIP-450's for {0, 3, 5}: the left
    windows of each record and the non-empty right windows ([1,11] of 0, [4,14] of 3)."""
    defn = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")),
                      watermark=Watermark(delay=100), trigger=Trigger(emit="final"))
    eng = SlidingKernelEngine(defn)
    assert eng.ingest(_batch(defn, (1, [("a", 0, 1), ("a", 5, 2)]))) == []
    assert [(w["window_start"], w["values"]) for w in eng.open_windows()] == [
        (-10, {"n": 1, "s": 1}), (-5, {"n": 2, "s": 3}), (1, {"n": 1, "s": 2})]
    eng.ingest(_batch(defn, (2, [("a", 3, 4)])))
    panes = eng.end_of_input()
    assert [(p.window_start, p.window_end, p.values, p.first_event_time, p.last_event_time)
            for p in panes] == [
        (-10, 0, {"n": 1, "s": 1}, 0, 0), (-7, 3, {"n": 2, "s": 5}, 0, 3),
        (-5, 5, {"n": 3, "s": 7}, 0, 5), (1, 11, {"n": 2, "s": 6}, 3, 5),
        (4, 14, {"n": 1, "s": 2}, 5, 5)]
    assert {(p.timing, p.is_last, p.emitted_at) for p in panes} == {("ON_TIME", True, 2)}


def test_a_record_behind_the_watermark_gets_a_late_line_per_expired_window() -> None:
    defn = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"),),
                      watermark=Watermark(delay=0), trigger=Trigger(emit="final"))
    eng = SlidingKernelEngine(defn)
    eng.ingest(_batch(defn, (1, [("a", 0, None), ("a", 20, None)])))
    out = eng.ingest(_batch(defn, (2, [("a", 15, None)])))
    late = [(e.event_time, e.window_start, e.window_end, e.reason) for e in out
            if e.type == "late"]
    assert late == [(15, 5, 15, "expired")]  # [10, 20] (left window of 20) is still open
    assert eng.drain_late_counts() == [
        {"key": "a", "window_start": 5, "window_end": 15, "accepted": 0, "dropped": 1}]
    # it joins [10, 20] and opens its right window [16, 26] (holding 20)
    assert [(p.window_start, p.values) for p in eng.end_of_input()] == [
        (10, {"n": 2}), (16, {"n": 1})]


def test_input_objects_of_forgotten_records_are_released() -> None:
    """first/last inputs are kept as objects; the list is compacted once the records that
    refer to them are forgotten, and the open windows still read their own values."""
    defn = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("f", "first", "x"), Aggregation("l", "last", "x")),
                      trigger=Trigger(emit="final"))
    kernel, general = SlidingKernelEngine(defn), Engine(defn)
    k_out: list[Any] = []
    g_out: list[Any] = []
    n = 20_000
    for b in range(4):  # 50 keys, a record every 50 ms each: every window closes soon
        t = np.arange(n, dtype=np.int64) + 1_000_000 * b
        values = [f"v{i}" for i in t.tolist()]
        batch = RecordBatch(keys=[f"k{i % 50:02d}" for i in range(n)], event_times=t,
                            columns={"f": values, "l": values}, processing_time=b)
        k_out += [e.to_json() for e in kernel.ingest(batch)]
        g_out += [e.to_json() for e in general.ingest(batch)]
    assert len(kernel.objs) < 2 * n  # not the 160,000 inputs of the four units
    assert kernel.state.snapshot() == general.state.snapshot()
    k_end = [e.to_json() for e in kernel.end_of_input()]
    assert k_out + k_end == g_out + [e.to_json() for e in general.end_of_input()]
    assert k_end[-1]["values"] == {"f": f"v{3_000_000 + n - 1}", "l": f"v{3_000_000 + n - 1}"}
