"""Differential tests: ``collect`` and ``count_distinct`` on the compiled engine of sliding
windows that fire more than once (``emit: current``; ``custom`` with count, ``after`` and
``every`` parts; discarding, accumulating, retracting) and on the processing clock give the
general engine's replay lines, and after every arrival unit and clock tick its snapshot, open
windows and late counts: mixed values (ints, floats equal to ints, strings, null, bools,
lists), records out of order, late records under both lateness bases, a snapshot/restore
mid-stream, a start from a general engine's state and a Spark state blob round trip."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingTriggerEngine
from tests.engine_kernels.test_session_collect_vs_engine import MIXED, SIDE_AGGS, mixed_logs
from tests.engine_kernels.test_session_vs_engine import _batch, _run, check_replay_lines
from tests.engine_kernels.test_sliding_collect_vs_engine import SETTINGS, check_blob_round_trip
from tests.engine_kernels.test_sliding_timers_vs_engine import (
    check_ticking,
    clocked_sliding_definitions,
    timed_sliding_definitions,
)
from tests.engine_kernels.test_sliding_triggers_vs_engine import (
    check_general_state_resumes,
    triggered_sliding_definitions,
)
from tests.engine_kernels.test_sliding_vs_engine import units


@st.composite
def _with_side(draw: st.DrawFn, defs: st.SearchStrategy[Definition]) -> Definition:
    """A drawn definition with one or two side aggregations; the others keep to
    count/first/last (numeric aggregates hand mixed values over)."""
    base = draw(defs)
    side = draw(st.lists(st.sampled_from(SIDE_AGGS), min_size=1, max_size=2,
                         unique_by=lambda a: a.name))
    others = [a for a in base.aggregations if a.fn in ("count", "first", "last")]
    return replace(base, aggregations=(*side, *others))


TRIGGERED = _with_side(triggered_sliding_definitions())
TIMED = _with_side(timed_sliding_definitions())
CLOCKED = _with_side(clocked_sliding_definitions())


@SETTINGS
@given(defn=st.one_of(TRIGGERED, TIMED, CLOCKED), log=mixed_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival, SlidingTriggerEngine)


@SETTINGS
@given(defn=TRIGGERED, us=units(MIXED), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    mode: Any = "external" if external else "internal"
    swap_at = data.draw(st.one_of(st.none(), st.integers(0, len(us) - 1)))
    eng = SlidingTriggerEngine(defn, watermark=mode)
    k_out, k_seen = _run(eng, defn, us, external, swap_at,
                         lambda s: SlidingTriggerEngine(defn, state=s, watermark=mode))
    g_out, g_seen = _run(Engine(defn, watermark=mode), defn, us, external, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert eng.general is None


@SETTINGS
@given(defn=TIMED, us=units(MIXED), external=st.booleans(), data=st.data())
def test_timers_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    assert check_ticking(defn, us, external, data).general is None


@SETTINGS
@given(defn=CLOCKED, us=units(MIXED), data=st.data())
def test_processing_clock_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    assert check_ticking(defn, us, False, data).general is None


@SETTINGS
@given(defn=st.one_of(TRIGGERED, TIMED, CLOCKED), us=units(MIXED), data=st.data())
def test_a_general_engine_state_resumes_on_the_compiled_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data)


DEFN = Definition(name="s", key="k", event_time="t", window=Window("sliding", size=10),
                  aggregations=(Aggregation("c", "collect", "x"),
                                Aggregation("d", "count_distinct", "x")),
                  watermark=Watermark(delay=100), allowed_lateness=20,
                  accumulation="discarding",
                  trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=2),
                                  late=LateTrigger("count", count=1)))


def test_discarding_panes_show_what_joined_since_the_last_pane() -> None:
    eng, ref = make_engine(DEFN), Engine(DEFN)
    assert isinstance(eng, SlidingTriggerEngine)
    panes: list[Any] = []
    for unit in [(1, [("a", 5, "u"), ("a", 3, 1)]), (2, [("a", 4, 1.0), ("a", 2, None)])]:
        out = eng.ingest(_batch(DEFN, unit))
        assert [e.to_json() for e in out] == [e.to_json() for e in ref.ingest(_batch(DEFN, unit))]
        panes += out
    # window [-5, 5] holds 5 and 3, then 4 and 2 (null): the second pane lists only 4's value
    assert [p.values for p in panes if p.window_start == -5] == [
        {"c": [1, "u"], "d": 2}, {"c": [1.0], "d": 1}]


def test_a_state_blob_carries_what_the_last_pane_showed() -> None:
    check_blob_round_trip(DEFN, SlidingTriggerEngine)


class _Compacting(SlidingTriggerEngine):
    """Compacts its distinct values at every firing (the engine does it past 65536)."""

    def _fire(self, touched: Any) -> Any:
        self._distinct_limit = -1
        return super()._fire(touched)


@SETTINGS
@given(defn=st.one_of(TRIGGERED, CLOCKED), us=units(MIXED))
def test_compacting_the_distinct_values_changes_nothing(defn: Definition, us: list[Any]) -> None:
    k_out, k_seen = _run(_Compacting(defn), defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out and k_seen == g_seen


def test_distinct_values_of_forgotten_records_are_forgotten() -> None:
    defn = replace(DEFN, watermark=Watermark(delay=0), allowed_lateness=0)
    eng = _Compacting(defn)
    for i in range(20):
        eng.ingest(_batch(defn, (i, [("a", 100 * i, f"v{i}-{k}") for k in range(10)])))
    assert len(eng._distinct) <= 40  # 200 without compaction


def test_compacting_the_objects_keeps_the_lists() -> None:
    """Past its limit the engine's list of input objects is compacted (the records' refs
    renumbered): the panes still list the same values."""
    defn = replace(DEFN, watermark=Watermark(delay=0), allowed_lateness=5)
    us = [(u, [("a", 500 * u + i, f"v{i % 7}") for i in range(500)]) for u in range(10)]
    eng = make_engine(defn)
    assert isinstance(eng, SlidingTriggerEngine)
    eng._objs_limit = 4096
    k_out, _ = _run(eng, defn, us, False, None, None)
    g_out, _ = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out
    assert eng.general is None
    live = SlidingTriggerEngine(defn)
    live._objs_limit = 4096
    for u in us:
        live.ingest(_batch(defn, u))
    assert len(live.objs) < 2 * 5000  # each record holds two objects: without compaction 10000
