"""Differential tests: final sliding windows under per-key watermarks (``watermark.scope:
key``), with and without idle advance, run on the compiled sliding engine and must be
indistinguishable from the general engine: replay lines, and after every unit and
processing-time tick the output, state snapshot (each key's watermark and idle base), open
windows, late counts; also across a snapshot/restore and from a general engine's state."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    Aggregation,
    Definition,
    Trigger,
    Watermark,
    WatermarkScope,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import (
    SlidingKernelEngine,
    SlidingTriggerEngine,
    qualification_problems,
    qualifies,
)
from jobs.engine.kernels.sliding_key import SlidingKeyScope
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.strategies import event_logs
from tests.engine_kernels.test_session_vs_engine import check_replay_lines
from tests.engine_kernels.test_sliding_vs_engine import (
    Unit,
    _batch,
    _observe,
    sliding_definitions,
    units,
)

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SIDE = (Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x"))


@st.composite
def key_definitions(draw: st.DrawFn) -> Definition:
    """Final sliding definitions (both lateness bases) under a key watermark scope (or, now
    and then, the global one), with or without idle advance, sometimes with collect /
    count_distinct."""
    base = draw(sliding_definitions())
    scope: WatermarkScope = draw(st.sampled_from(["key", "key", "key", "global"]))
    idle = draw(st.booleans()) if scope == "key" else False
    aggs = base.aggregations + (SIDE if draw(st.booleans()) else ())
    return replace(base, aggregations=aggs,
                   watermark=replace(base.watermark, strategy="bounded", scope=scope,
                                     idle_advance=idle))


def _line(e: Any) -> str:
    return json.dumps(e.to_json(), sort_keys=True)


def _run(eng: Any, defn: Definition, us: list[Unit], ticks: list[int], swap_at: int | None,
         make: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Each unit, then a processing-time tick ``ticks[i]`` ms after it (0: none), observing
    after both; a stored snapshot resumes a new engine at ``swap_at``."""
    out: list[str] = []
    seen: list[dict[str, Any]] = []
    for i, u in enumerate(us):
        if i == swap_at:
            eng = make(json.loads(json.dumps(eng.state.snapshot())))
        out.extend(_line(e) for e in eng.ingest(_batch(defn, u)))
        seen.append(_observe(eng))
        if ticks[i]:
            out.extend(_line(e) for e in eng.advance_processing_time(u[0] + ticks[i]))
            seen.append(_observe(eng))
    out.extend(_line(e) for e in eng.end_of_input())
    seen.append(_observe(eng))
    return out, seen


def _ticks(data: st.DataObject, us: list[Unit]) -> list[int]:
    return data.draw(st.lists(st.sampled_from([0, 0, 1, 5, 19]), min_size=len(us),
                              max_size=len(us)))


@SETTINGS
@given(defn=key_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingKernelEngine)


@SETTINGS
@given(defn=key_definitions(), us=units(), data=st.data())
def test_state_and_observations_match_after_every_unit_and_tick(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    ticks = _ticks(data, us)
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    kernel = SlidingKernelEngine(defn)
    k_out, k_seen = _run(kernel, defn, us, ticks, swap_at,
                         lambda s: SlidingKernelEngine(defn, state=s))
    g_out, g_seen = _run(Engine(defn), defn, us, ticks, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert kernel.general is None


@SETTINGS
@given(defn=key_definitions(), us=units(st.integers(-50, 50) | st.none()), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data, SlidingKernelEngine)


def _key_defn(**wm: Any) -> Definition:
    return Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                      aggregations=(Aggregation("n", "count"), Aggregation("c", "collect", "x")),
                      trigger=Trigger(emit="final"), watermark=Watermark(scope="key", **wm))


def test_a_record_fires_the_windows_its_own_keys_watermark_expires() -> None:
    """Key ``a`` running ahead fires its own window right after the record that moved its
    watermark, before the next record's late line; ``b``'s window stays open."""
    defn = _key_defn()
    eng, gen = SlidingKernelEngine(defn), Engine(defn)
    unit = (1, [("a", 0, 1), ("b", 0, 2), ("a", 100, 3), ("a", 5, 4)])
    out = eng.ingest(_batch(defn, unit))
    assert [_line(e) for e in out] == [_line(e) for e in gen.ingest(_batch(defn, unit))]
    pane, late = (e.to_json() for e in out)
    assert (pane["key"], pane["window_end"], pane["watermark"], pane["values"]) == (
        "a", 0, 100, {"n": 1, "c": [1]})
    assert late["record"] == {"k": "a", "t": 5, "x": 4}
    assert eng.watermark is None
    assert ("b", -10) in [(w["key"], w["window_start"]) for w in eng.open_windows()]
    assert eng.state.snapshot() == gen.state.snapshot()


def test_an_idle_keys_watermark_moves_with_processing_time() -> None:
    defn = _key_defn(idle_advance=True, delay=5)
    eng = SlidingKernelEngine(defn)
    eng.ingest(_batch(defn, (1000, [("a", 0, 1)])))  # the key's watermark: -5
    assert eng.advance_processing_time(1005) == []
    (pane,) = eng.advance_processing_time(1006)  # it reaches the window's end + 1
    assert (pane.key, pane.window_end, pane.watermark, pane.emitted_at) == ("a", 0, 1, 1006)


def test_triggered_sliding_windows_take_per_key_watermarks_on_the_trigger_engine() -> None:
    defn = replace(_key_defn(), aggregations=(Aggregation("n", "count"),),
                   trigger=Trigger(emit="current"))
    assert qualification_problems(defn) == []
    assert type(make_engine(defn)) is SlidingTriggerEngine
    glob = replace(_key_defn(idle_advance=True), watermark=Watermark(idle_advance=True))
    assert qualification_problems(glob) == []  # one watermark: test_sliding_idle_vs_engine
    assert qualifies(_key_defn(idle_advance=True))
    assert issubclass(SlidingKernelEngine, SlidingKeyScope)


def test_a_record_held_after_its_keys_window_fired_is_not_in_that_pane() -> None:
    """``a``@15 moves the key's watermark past [1, 11]; ``a``@7 then joins the live [5, 15]
    (held) with a late line for an expired window: the pane of [1, 11] shows the key's
    records as they were when it fired."""
    defn = replace(_key_defn(), aggregations=(
        Aggregation("n", "count"), Aggregation("s", "sum", "x"), Aggregation("c", "collect", "x"),
        Aggregation("l", "last", "x"), Aggregation("d", "count_distinct", "x")))
    unit = (1, [("a", 0, 1), ("a", 5, 2), ("a", 15, 3), ("a", 7, 4)])
    eng, gen = SlidingKernelEngine(defn), Engine(defn)
    out = [_line(e) for e in eng.ingest(_batch(defn, unit))]
    assert out == [_line(e) for e in gen.ingest(_batch(defn, unit))]
    panes = {(p["window_start"], p["watermark"]): p["values"]
             for p in map(json.loads, out) if p["type"] == "pane"}
    assert panes[(1, 15)] == {"n": 1, "s": 2, "c": [2], "l": 2, "d": 1}
    assert eng.state.snapshot() == gen.state.snapshot()


def test_a_state_blob_carries_the_key_watermarks_in_either_direction() -> None:
    """The blob of either engine (each key's watermark and idle base inside) resumes on the
    compiled engine, which goes on as the general engine does."""
    check_blob_carries_key_watermarks(_key_defn(idle_advance=True, delay=2),
                                      SlidingKernelEngine, "watermark")


def test_a_hand_over_and_a_host_driven_watermark_keep_the_general_engines_output() -> None:
    """Values the arrays cannot hold hand the key watermarks over to the general engine, and
    a host-driven watermark with idle advance (global there) too."""
    defn = replace(_key_defn(idle_advance=True, delay=2), allowed_lateness=3,
                   aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")))
    us = [(5, [("a", 0, 1), ("b", 3, 2), ("a", 30, 3)]), (20, [("a", 25, 2**70), ("b", 40, 1)]),
          (30, [("a", 50, 1)])]
    for mode in ("internal", "external"):
        eng: Any = make_engine(defn, watermark=mode)
        assert isinstance(eng, SlidingKernelEngine)
        gen = Engine(defn, watermark=mode)
        for u in us:
            assert [_line(e) for e in eng.ingest(_batch(defn, u))] == [
                _line(e) for e in gen.ingest(_batch(defn, u))]
            if mode == "external":
                assert [_line(e) for e in eng.advance_watermark(u[1][0][1])] == [
                    _line(e) for e in gen.advance_watermark(u[1][0][1])]
            assert [_line(e) for e in eng.advance_processing_time(u[0] + 7)] == [
                _line(e) for e in gen.advance_processing_time(u[0] + 7)]
            assert eng.state.snapshot() == gen.state.snapshot()
        assert [_line(e) for e in eng.end_of_input()] == [_line(e) for e in gen.end_of_input()]
        assert eng.general is not None


def check_general_state_resumes(defn: Definition, us: list[Unit], data: st.DataObject,
                                cls: type) -> None:
    """A general engine's state after a drawn number of units and ticks (through JSON, as a
    checkpoint holds it) resumes on the compiled engine ``cls`` without handing over, and both
    go on line for line."""
    ticks = _ticks(data, us)
    cut = data.draw(st.integers(0, len(us)))
    g = Engine(defn)
    for u, tick in zip(us[:cut], ticks, strict=False):
        g.ingest(_batch(defn, u))
        if tick:
            g.advance_processing_time(u[0] + tick)
    resumed = make_engine(defn, state=json.loads(json.dumps(g.state.snapshot())))
    assert isinstance(resumed, cls) and resumed.general is None
    k_out, k_seen = _run(resumed, defn, us[cut:], ticks[cut:], None, None)
    g_out, g_seen = _run(g, defn, us[cut:], ticks[cut:], None, None)
    assert k_out == g_out and k_seen == g_seen


def check_blob_carries_key_watermarks(defn: Definition, cls: type, field: str) -> None:
    """The Spark state blob of the general engine and of the compiled engine ``cls`` after one
    unit resumes on ``cls`` with each key's ``field`` (watermark or idle base) inside, and
    goes on (a unit, then a processing-time tick) as the general engine does."""
    probe = type(make_engine(defn).state)
    for first in (Engine(defn), cls(defn)):
        ref = Engine(defn)
        for eng in (first, ref):
            eng.ingest(_batch(defn, (5, [("a", 0, 1), ("b", 3, 2), ("a", 30, 3), ("b", 4, 4)])))
        resumed = make_engine(defn, decode_state(encode_state(first.state)[0], probe))
        assert isinstance(resumed, cls) and resumed.general is None
        assert resumed.state.snapshot() == ref.state.snapshot()
        assert {kj: ks[field] for kj, ks in resumed.state.snapshot()["keys"].items()} == {
            '"a"': 28, '"b"': 2}
        unit = (20, [("b", 5, 5), ("a", 31, 6), ("b", 1, 7)])
        assert [_line(e) for e in resumed.ingest(_batch(defn, unit))] == [
            _line(e) for e in ref.ingest(_batch(defn, unit))]
        assert [_line(e) for e in resumed.advance_processing_time(40)] == [
            _line(e) for e in ref.advance_processing_time(40)]
        assert resumed.state.snapshot() == ref.state.snapshot()
