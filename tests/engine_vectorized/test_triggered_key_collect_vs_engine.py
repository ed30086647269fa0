"""Differential tests: ``collect`` / ``count_distinct`` on the compiled triggered engine under
per-key bounded watermarks (``watermark.scope: key``, with and without idle advance). Each
record is judged at its own key's watermark as it meets it, so which records a pane shows,
which are late and which are dropped are the general engine's; panes (early, on-time, late,
expiry, each accumulation mode, retractions showing what they retract), late lines and counts
and the observations after every unit and clock tick are the same, across a snapshot/restore,
a general engine's state resumed, and the Spark state blob."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import make_engine
from jobs.engine.engine import Engine
from jobs.engine.state import EngineState
from jobs.engine.vectorized import triggered_side
from jobs.engine.vectorized.triggered import TriggeredEngine
from jobs.spark.engine_path.state_blob import encode_engine, general_state, restore_engine
from tests.engine_vectorized.strategies import Instant
from tests.engine_vectorized.test_triggered_collect import collect_definitions, mixed_instants
from tests.engine_vectorized.test_triggered_key_clock_vs_engine import (
    _ticks,
    check_same_as_general,
)
from tests.engine_vectorized.test_vs_engine import observe
from tests.engine_vectorized.test_vs_reference import batch_of, canon

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _key_scoped(defn: Definition, idle: bool) -> Definition:
    wm = dataclasses.replace(defn.watermark, scope="key", idle_advance=idle)
    return dataclasses.replace(defn, watermark=wm)


@st.composite
def key_collect_definitions(draw: st.DrawFn, idle: bool) -> Definition:
    return _key_scoped(draw(collect_definitions()), idle)


@SETTINGS
@given(defn=key_collect_definitions(idle=False), data=st.data())
def test_key_watermarks_with_collect_match_general_engine(
    defn: Definition, data: st.DataObject
) -> None:
    """Tumbling / hopping / global x count / after / every x every accumulation mode and
    lateness basis, values of mixed types, clock ticks, a snapshot/restore."""
    assert isinstance(make_engine(defn), TriggeredEngine)
    check_same_as_general(defn, data.draw(mixed_instants()), data)


@SETTINGS
@given(defn=key_collect_definitions(idle=True), data=st.data())
def test_key_watermarks_with_collect_and_idle_advance_match_general_engine(
    defn: Definition, data: st.DataObject
) -> None:
    """Clock ticks move every key's watermark from its own base, expiring its windows."""
    assert isinstance(make_engine(defn), TriggeredEngine)
    check_same_as_general(defn, data.draw(mixed_instants()), data)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=st.booleans().flatmap(lambda idle: key_collect_definitions(idle)), data=st.data())
def test_compacting_after_each_expiry_changes_nothing(
    defn: Definition, data: st.DataObject
) -> None:
    """With the side table compacted after every window its key's watermark expires (and
    every discarded pane), the output is still the general engine's."""
    saved = triggered_side._COMPACT_AT
    triggered_side._COMPACT_AT = 0
    try:
        check_same_as_general(defn, data.draw(mixed_instants()), data)
    finally:
        triggered_side._COMPACT_AT = saved


def _feed(eng: Any, defn: Definition, insts: list[Instant], ticks: list[int | None],
          out: list[dict[str, Any]], seen: list[dict[str, Any]]) -> None:
    for inst, tick in zip(insts, ticks, strict=True):
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
        seen.append(observe(eng))
        if tick is not None:
            out.extend(e.to_json() for e in eng.advance_processing_time(
                inst.processing_time + tick))
            seen.append(observe(eng))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=st.booleans().flatmap(lambda idle: key_collect_definitions(idle)), data=st.data())
def test_a_general_state_resumes_compiled(defn: Definition, data: st.DataObject) -> None:
    """The general engine runs the first units; the compiled engine resumes from its state
    (through JSON) and continues as the general engine that never stopped."""
    insts = data.draw(mixed_instants())
    ticks = _ticks(data, len(insts))
    cut = data.draw(st.integers(0, len(insts)))
    ref = Engine(defn)
    want: list[dict[str, Any]] = []
    want_seen: list[dict[str, Any]] = []
    _feed(ref, defn, insts, ticks, want, want_seen)
    want.extend(e.to_json() for e in ref.end_of_input())
    first = Engine(defn)
    got: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    _feed(first, defn, insts[:cut], ticks[:cut], got, seen)
    snap = json.loads(json.dumps(first.state.snapshot()))
    eng = make_engine(defn, EngineState.restore(snap))
    assert isinstance(eng, TriggeredEngine)
    _feed(eng, defn, insts[cut:], ticks[cut:], got, seen)
    got.extend(e.to_json() for e in eng.end_of_input())
    assert eng.general is None
    assert canon(got) == canon(want)
    assert seen == want_seen


def _by_start(snap: dict[str, Any]) -> dict[str, Any]:
    """A state snapshot with each key's windows by start (the general engine keeps them in
    creation order, the compiled engine's conversion by start; both restore alike), without
    the last pane's event-time bounds (shown only by session panes; the compiled engine
    writes the window's own)."""
    for ks in snap["keys"].values():
        ks["windows"].sort(key=lambda w: (w["start"] is not None, w["start"] or 0))
        for w in ks["windows"]:
            if w["last_pane"] is not None:
                w["last_pane"].pop("first_t")
                w["last_pane"].pop("last_t")
    return snap


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=st.booleans().flatmap(lambda idle: key_collect_definitions(idle)), data=st.data())
def test_the_spark_state_blob_carries_side_entries_and_key_watermarks(
    defn: Definition, data: st.DataObject
) -> None:
    """The blob (the table form) resumes the compiled engine with its side entries and each
    key's watermark; its converter to the general format reports the general engine's state."""
    insts = data.draw(mixed_instants())
    ticks = _ticks(data, len(insts))
    cut = data.draw(st.integers(0, len(insts)))
    ref = Engine(defn)
    want: list[dict[str, Any]] = []
    want_seen: list[dict[str, Any]] = []
    _feed(ref, defn, insts[:cut], ticks[:cut], want, want_seen)
    eng = make_engine(defn)
    got: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []
    _feed(eng, defn, insts[:cut], ticks[:cut], got, seen)
    blob, _ = encode_engine(eng)
    assert _by_start(general_state(defn, blob).snapshot()) == _by_start(ref.state.snapshot())
    resumed = restore_engine(defn, blob, "internal")
    assert isinstance(resumed, TriggeredEngine) and resumed.general is None
    _feed(resumed, defn, insts[cut:], ticks[cut:], got, seen)
    _feed(ref, defn, insts[cut:], ticks[cut:], want, want_seen)
    got.extend(e.to_json() for e in resumed.end_of_input())
    want.extend(e.to_json() for e in ref.end_of_input())
    assert canon(got) == canon(want)
    assert seen == want_seen


def test_each_key_keeps_its_own_late_and_dropped_values() -> None:
    """Key a's record at 12 passes a's [0, 10) (b's 3 stays on time for b): a's 4 is a late
    value of that window (window basis, lateness 5), a's 16 expires it, so a's 5 is
    dropped; the panes collect exactly what a's watermark let in."""
    defn = load_definition({
        "name": "keyed", "key": "k", "event_time": "t",
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "xs", "fn": "collect", "of": "x"},
                         {"name": "d", "fn": "count_distinct", "of": "x"}],
        "watermark": {"delay": 0, "scope": "key"},
        "allowed_lateness": 5, "lateness_basis": "window",
        "trigger": {"emit": "custom", "on_time": True, "late": {"count": 1}},
        "accumulation": "accumulating",
    })
    eng, ref = make_engine(defn), Engine(defn)
    assert isinstance(eng, TriggeredEngine)
    unit = Instant(100, [("a", 1, "p"), ("a", 12, "q"), ("b", 3, "r"), ("a", 4, "p"),
                         ("a", 16, "s"), ("a", 5, "t")])
    got = [(e.key, e.timing, e.window_start, e.values)
           for e in eng.ingest(batch_of(defn, unit)) if hasattr(e, "timing")]
    want = [(e.key, e.timing, e.window_start, e.values)
            for e in ref.ingest(batch_of(defn, unit)) if hasattr(e, "timing")]
    assert got == want == [("a", "ON_TIME", 0, {"xs": ["p"], "d": 1}),
                           ("a", "LATE", 0, {"xs": ["p", "p"], "d": 1})]
    assert eng.general is None
