"""Differential tests: ``collect`` and ``count_distinct`` on the compiled sliding engine
(``emit: final``) give the general engine's replay lines, and after every arrival unit its
snapshot, open windows and late counts: mixed values (ints, floats equal to ints, strings,
null, bools, lists), records out of order (a record joins several windows, each lists it at
its event-time place), late records under both lateness bases, a snapshot/restore mid-stream,
a start from a general engine's state, and a Spark state blob round trip. Triggered sliding
windows and the processing clock run them on the trigger engine."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import (
    PROCESSING,
    Aggregation,
    Definition,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingKernelEngine, SlidingTriggerEngine
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.records import RecordBatch
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.test_session_collect_vs_engine import MIXED, SIDE_AGGS, mixed_logs
from tests.engine_kernels.test_session_vs_engine import check_replay_lines
from tests.engine_kernels.test_sliding_vs_engine import (
    ODD,
    Unit,
    _batch,
    _run,
    sliding_definitions,
    units,
)

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def collect_definitions(draw: st.DrawFn) -> Definition:
    base = draw(sliding_definitions())
    side = draw(st.lists(st.sampled_from(SIDE_AGGS), min_size=1, max_size=2,
                         unique_by=lambda a: a.name))
    # the others keep to first/last/count: numeric aggregates hand mixed values over
    others = [a for a in base.aggregations if a.fn in ("count", "first", "last")]
    return replace(base, aggregations=(*side, *others))


@SETTINGS
@given(defn=collect_definitions(), log=mixed_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingKernelEngine)


@SETTINGS
@given(defn=collect_definitions(), us=units(MIXED), external=st.booleans(),
       drain=st.booleans(), data=st.data())
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
    assert kernel.general is None


@SETTINGS
@given(defn=collect_definitions(), us=units(MIXED), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(us)))
    g = Engine(defn)
    for u in us[:cut]:
        g.ingest(_batch(defn, u))
    resumed = make_engine(defn, state=g.state.snapshot())
    assert isinstance(resumed, SlidingKernelEngine)
    assert resumed.general is None
    k_out, k_seen = _run(resumed, defn, us[cut:], False, None, None)
    g_out, g_seen = _run(g, defn, us[cut:], False, None, None)
    assert k_out == g_out and k_seen == g_seen


@SETTINGS
@given(us=units(ODD))
def test_a_hand_over_carries_the_lists_and_sets(us: list[Unit]) -> None:
    """A min input the arrays cannot hold (a string, an int beyond 2**53) hands the state over
    to the general engine, lists and sets included, with the same output."""
    defn = replace(DEFN, aggregations=(*DEFN.aggregations, Aggregation("lo", "min", "x")),
                   watermark=Watermark(delay=5))
    k_out, k_seen = _run(SlidingKernelEngine(defn), defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out and k_seen == g_seen


DEFN = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                  aggregations=(Aggregation("c", "collect", "x"),
                                Aggregation("d", "count_distinct", "x")),
                  watermark=Watermark(delay=100), allowed_lateness=50,
                  trigger=Trigger(emit="final"))


def test_an_out_of_order_record_takes_its_event_time_place_in_every_window() -> None:
    eng = SlidingKernelEngine(DEFN)
    eng.ingest(_batch(DEFN, (1, [("a", 0, "x0"), ("a", 8, 1)])))
    eng.ingest(_batch(DEFN, (2, [("a", 5, 1.0), ("a", 5, None), ("a", 12, [1, "a"])])))
    panes = {(p.window_start, p.window_end): p.values for p in eng.end_of_input()}
    assert panes[(-10, 0)] == {"c": ["x0"], "d": 1}
    assert panes[(-2, 8)] == {"c": ["x0", 1.0, 1], "d": 2}  # 1 and 1.0 are one value
    assert panes[(2, 12)] == {"c": [1.0, 1, [1, "a"]], "d": 2}


def check_blob_round_trip(defn: Definition, engine_type: type) -> None:
    """Through the Spark state blob and back mid-stream, the compiled engine (an
    ``engine_type``, never handed over) keeps the general engine's output and state."""
    eng = make_engine(defn, None, "external")
    ref = Engine(defn, watermark="external")
    assert isinstance(eng, engine_type)

    def drive(e: Any, rounds: range) -> list[str]:
        out: list[str] = []
        for i in rounds:
            batch = RecordBatch(keys=["a", "b", "a", "a"],
                                event_times=np.array([3, 1, 0, 7]) + 6 * i,
                                columns={"c": ["u", 2, None, 2.0], "d": ["u", 2, None, 2.0]},
                                processing_time=i)
            out += [json.dumps(x.to_json()) for x in e.ingest(batch)]
            out += [json.dumps(x.to_json()) for x in e.advance_watermark(6 * i - 12)]
        return out

    assert drive(eng, range(3)) == drive(ref, range(3))
    blob, _ = encode_state(eng.state)
    probe = type(make_engine(defn, None, "external").state)
    resumed = make_engine(defn, decode_state(blob, probe), "external")
    assert isinstance(resumed, engine_type) and resumed.general is None
    assert resumed.state.snapshot() == ref.state.snapshot()
    assert drive(resumed, range(3, 5)) == drive(ref, range(3, 5))
    assert [e.to_json() for e in resumed.end_of_input()] == [
        e.to_json() for e in ref.end_of_input()]


def test_a_state_blob_carries_the_lists_and_sets() -> None:
    check_blob_round_trip(DEFN, SlidingKernelEngine)


def test_triggered_sliding_windows_and_the_processing_clock_run_on_the_trigger_engine() -> None:
    """(Their differential tests: test_sliding_trigger_collect_vs_engine.py.)"""
    for other in (replace(DEFN, trigger=Trigger(emit="current")),
                  replace(DEFN, event_time=PROCESSING)):
        assert qualification_problems(other) == []
        assert isinstance(make_engine(other), SlidingTriggerEngine)


class _Compacting(SlidingKernelEngine):
    """Compacts its objects and distinct values after every unit (the engine does it past
    65536 objects)."""

    def ingest_columns(self, batch: RecordBatch) -> Any:
        out = super().ingest_columns(batch)
        self._compact_objs()
        return out


@SETTINGS
@given(us=units(MIXED), data=st.data())
def test_compacting_the_objects_and_distinct_values_changes_nothing(
    us: list[Unit], data: st.DataObject
) -> None:
    defn = replace(DEFN, watermark=Watermark(delay=data.draw(st.sampled_from([0, 5]))),
                   allowed_lateness=data.draw(st.sampled_from([0, 10])))
    eng = _Compacting(defn)
    k_out, k_seen = _run(eng, defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out and k_seen == g_seen


def test_distinct_values_of_expired_records_are_forgotten() -> None:
    defn = replace(DEFN, watermark=Watermark(delay=0), allowed_lateness=0)
    eng = _Compacting(defn)
    for i in range(20):
        eng.ingest(_batch(defn, (i, [("a", 100 * i, f"v{i}-{k}") for k in range(10)])))
    assert len(eng.distinct) <= 40  # 200 without compaction
