"""Differential tests: the compiled session engine must be indistinguishable from the general
engine on every definition it runs: the same replay output lines (panes, late records,
``emitted_at``, watermarks) under every arrival model, and after every arrival unit the same
state snapshot, open windows, late counts, watermark and max event time, also across a
snapshot/restore and when it starts from a general engine's state."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.kernels import SessionKernelEngine, qualifies
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized import VectorizedEngine
from jobs.replay import replay_lines
from tests.engine_kernels.strategies import KEYS, VALUES, event_logs, session_definitions

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _lines(defn: Definition, log: list[dict[str, Any]], engine: Any, arrival: Arrival) -> list[str]:
    return [json.dumps(o, sort_keys=True)
            for o in replay_lines(defn, log, engine=engine, arrival=arrival)]


def check_replay_lines(defn: Definition, log: list[dict[str, Any]], arrival: str,
                       engine_class: type = SessionKernelEngine) -> None:
    """``make_engine`` picks the compiled engine for ``defn``, and replay through it writes
    the general engine's lines under the arrival model ``arrival``."""
    assert qualifies(defn)
    assert isinstance(make_engine(defn), engine_class)
    mode = Arrival.parse(arrival)
    assert _lines(defn, log, "auto", mode) == _lines(defn, log, "general", mode)


@SETTINGS
@given(defn=session_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


Unit = tuple[int, list[tuple[Any, int, Any]]]


@st.composite
def units(draw: st.DrawFn, values: st.SearchStrategy[Any] = VALUES) -> list[Unit]:
    out: list[Unit] = []
    pt, base = draw(st.integers(0, 50)), draw(st.integers(-20, 20))
    for _ in range(draw(st.integers(1, 8))):
        pt += draw(st.integers(0, 20))
        rows = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.integers(base - 30, base + 30),
                                       values), max_size=12))
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
         make: Any) -> tuple[list[str], list[dict[str, Any]]]:
    out: list[str] = []
    seen: list[dict[str, Any]] = []
    for i, u in enumerate(us):
        if i == swap_at:  # a stored snapshot (JSON), resumed by a new engine
            eng = make(json.loads(json.dumps(eng.state.snapshot())))
        out.extend(json.dumps(e.to_json(), sort_keys=True) for e in eng.ingest(_batch(defn, u)))
        if external and u[1]:
            out.extend(json.dumps(e.to_json(), sort_keys=True)
                       for e in eng.advance_watermark(max(r[1] for r in u[1]) - 5))
        seen.append(_observe(eng))
    out.extend(json.dumps(e.to_json(), sort_keys=True) for e in eng.end_of_input())
    seen.append(_observe(eng))
    return out, seen


def check_state_and_observations(defn: Definition, us: list[Any], external: bool,
                                 data: st.DataObject, on_arrays: bool = False) -> SessionKernelEngine:
    """The kernel engine (restored from its own snapshot at a drawn unit) and the general
    engine give the same output and observations after every unit; ``on_arrays``: the kernel
    engine also never handed over to the general engine."""
    mode: Any = "external" if external else "internal"
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    kernel = SessionKernelEngine(defn, watermark=mode)
    k_out, k_seen = _run(kernel, defn, us, external, swap_at,
                         lambda s: SessionKernelEngine(defn, state=s, watermark=mode))
    g_out, g_seen = _run(Engine(defn, watermark=mode), defn, us, external, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    if on_arrays:
        assert kernel.general is None
    return kernel


@SETTINGS
@given(defn=session_definitions(), us=units(), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Unit], external: bool, data: st.DataObject
) -> None:
    check_state_and_observations(defn, us, external, data)


@SETTINGS
@given(defn=session_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


def check_general_state_resumes(defn: Definition, us: list[Any], cut: int) -> None:
    """The general engine's state after ``us[:cut]`` resumes on the kernel engine (picked by
    ``make_engine``, on its own arrays): the rest gives the general engine's output and
    observations."""
    g = Engine(defn)
    for u in us[:cut]:
        g.ingest(_batch(defn, u))
    resumed = make_engine(defn, state=g.state.snapshot())
    assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
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
        name="odd", key="k", event_time="t", window=Window("session", gap=7),
        aggregations=ordered if only_ordered else numeric + ordered,
        watermark=Watermark(delay=data.draw(st.sampled_from([0, 5]))),
        allowed_lateness=data.draw(st.sampled_from([0, 10])), trigger=Trigger(emit="final"),
    )
    kernel = SessionKernelEngine(defn)
    k_out, k_seen = _run(kernel, defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out and k_seen == g_seen
    if only_ordered:  # first/last hold any value: no hand-over
        assert kernel.general is None


def test_make_engine_picks_the_kernel_engine_only_for_what_it_runs() -> None:
    base = Definition(name="s", key="k", event_time="t", window=Window("session", gap=10),
                      aggregations=(Aggregation("n", "count"),), trigger=Trigger(emit="final"))
    assert isinstance(make_engine(base), SessionKernelEngine)
    assert type(make_engine(base, vectorized=False)) is Engine
    for trigger in (Trigger(emit="current"),
                    Trigger(emit="custom", early=EarlyTrigger("after", duration=5))):
        assert isinstance(make_engine(replace(base, trigger=trigger)), SessionKernelEngine)
    for other in (
        replace(base, window=Window("session", gap=2**61)),
    ):
        assert type(make_engine(other)) is Engine
    collect = replace(base, aggregations=(Aggregation("c", "collect", "x"),),
                      trigger=Trigger(emit="current"))
    for accumulation in ("accumulating", "retracting", "discarding"):
        assert isinstance(make_engine(replace(collect, accumulation=accumulation)),
                          SessionKernelEngine)
    assert isinstance(make_engine(replace(collect, watermark=Watermark(scope="key"))),
                      SessionKernelEngine)
    tumbling = replace(base, window=Window("tumbling", size=10))
    assert isinstance(make_engine(tumbling), VectorizedEngine)


def test_an_out_of_order_record_merges_two_sessions() -> None:
    defn = Definition(name="s", key="k", event_time="t", window=Window("session", gap=10),
                      aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")),
                      watermark=Watermark(delay=100), trigger=Trigger(emit="final"))
    eng = SessionKernelEngine(defn)
    eng.ingest(_batch(defn, (1, [("a", 0, 1), ("a", 15, 2.5)])))
    assert [(w["window_start"], w["window_end"]) for w in eng.open_windows()] == [(0, 10),
                                                                                  (15, 25)]
    eng.ingest(_batch(defn, (2, [("a", 7, 3)])))  # bridges the gap: one session [0, 25]
    (pane,) = eng.end_of_input()
    assert (pane.window_start, pane.window_end, pane.values) == (0, 25, {"n": 3, "s": 6.5})
    assert (pane.first_event_time, pane.last_event_time, pane.emitted_at) == (0, 15, 2)


def test_first_and_last_values_of_closed_sessions_are_released() -> None:
    """The list of first/last input values is compacted as sessions close; what stays open
    still reads its own values."""
    defn = Definition(name="s", key="k", event_time="t", window=Window("session", gap=100),
                      aggregations=(Aggregation("f", "first", "x"), Aggregation("l", "last", "x")),
                      trigger=Trigger(emit="final"))
    kernel, general = SessionKernelEngine(defn), Engine(defn)
    k_out: list[Any] = []
    g_out: list[Any] = []
    n = 25_000
    for b in range(4):  # each batch: one session per key (50 keys), closing at the next one
        t = np.arange(n, dtype=np.int64) + 1_000_000 * b
        values = [f"v{i}" for i in t.tolist()]
        batch = RecordBatch(keys=[f"k{i % 50:02d}" for i in range(n)], event_times=t,
                            columns={"f": values, "l": values}, processing_time=b)
        k_out += [e.to_json() for e in kernel.ingest(batch)]
        g_out += [e.to_json() for e in general.ingest(batch)]
    # compacted: the open sessions' values, not those of all 100,000 records
    assert len(kernel.objs) < 2 * n
    k_end = [e.to_json() for e in kernel.end_of_input()]
    assert k_out + k_end == g_out + [e.to_json() for e in general.end_of_input()]
    assert len(k_end) == 50
    assert k_end[-1]["key"] == "k49"
    assert k_end[-1]["values"] == {"f": "v3000049", "l": "v3024999"}
