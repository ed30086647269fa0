"""Differential tests of the compiled session engine with count triggers (early, on time,
late; ``emit: current``) against the general engine: the same replay output lines (panes,
retractions of merged sessions, late records, ``emitted_at``) under every arrival model, every
accumulation mode and lateness basis; after every arrival unit the same snapshot, open
windows, late counts, watermark and max event time, across a snapshot/restore mid-stream, from
a general engine's state, through the Spark host's state blob and across a hand-over."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobs.definition import load_definition
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
from jobs.engine.kernels import SessionKernelEngine, qualification_problems
from jobs.spark.engine_path.state_blob import decode_state, encode_state
from tests.engine_kernels.strategies import event_logs, triggered_session_definitions
from tests.engine_kernels.test_session_vs_engine import (
    ODD,
    SETTINGS,
    Unit,
    _batch,
    _run,
    check_general_state_resumes,
    check_replay_lines,
    check_state_and_observations,
    units,
)


@SETTINGS
@given(defn=triggered_session_definitions(), log=event_logs(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


@SETTINGS
@given(defn=triggered_session_definitions(), us=units(), external=st.booleans(),
       data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Unit], external: bool, data: st.DataObject
) -> None:
    check_state_and_observations(defn, us, external, data)


@SETTINGS
@given(defn=triggered_session_definitions(), us=units(), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Unit], data: st.DataObject
) -> None:
    """Mid-stream general state: emitted panes, pending counts, panes to retract."""
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))


@SETTINGS
@given(defn=triggered_session_definitions(), us=units(ODD))
def test_values_the_arrays_cannot_hold_hand_over_with_the_same_output(
    defn: Definition, us: list[Unit]
) -> None:
    defn = replace(defn, aggregations=(Aggregation("n", "count"), Aggregation("hi", "max", "x"),
                                       Aggregation("l", "last", "x")))
    k_out, k_seen = _run(SessionKernelEngine(defn), defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out and k_seen == g_seen


def _sessions(accumulation: Any) -> Definition:
    return Definition(
        name="s", key="k", event_time="t", window=Window("session", gap=10),
        aggregations=(Aggregation("n", "count"), Aggregation("s", "sum", "x")),
        watermark=Watermark(delay=100), accumulation=accumulation,
        trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=1), on_time=True),
    )


def _panes(out: list[Any]) -> list[tuple[Any, ...]]:
    return [(p.window_start, p.window_end, p.timing, p.pane_index, p.retraction,
             p.values) for p in out]


def test_a_record_bridging_two_sessions_retracts_both_of_their_panes() -> None:
    defn = _sessions("retracting")
    eng = SessionKernelEngine(defn)
    first = eng.ingest(_batch(defn, (1, [("a", 0, 1), ("a", 15, 2)])))
    assert _panes(first) == [(0, 10, "EARLY", 0, False, {"n": 1, "s": 1}),
                             (15, 25, "EARLY", 0, False, {"n": 1, "s": 2})]
    bridged = eng.ingest(_batch(defn, (2, [("a", 7, 3)])))
    assert _panes(bridged) == [
        (0, 10, "EARLY", 0, True, {"n": 1, "s": 1}),
        (15, 25, "EARLY", 0, True, {"n": 1, "s": 2}),
        (0, 25, "EARLY", 0, False, {"n": 3, "s": 6}),
    ]
    assert bridged[-1].emitted_at == 2
    (retraction, on_time) = eng.end_of_input()
    assert _panes([retraction, on_time]) == [(0, 25, "EARLY", 0, True, {"n": 3, "s": 6}),
                                             (0, 25, "ON_TIME", 1, False, {"n": 3, "s": 6})]
    assert on_time.is_last


def test_discarding_panes_hold_what_arrived_since_the_last_pane() -> None:
    defn = _sessions("discarding")
    eng = SessionKernelEngine(defn)
    eng.ingest(_batch(defn, (1, [("a", 0, 1), ("a", 15, 2)])))
    (merged,) = eng.ingest(_batch(defn, (2, [("a", 7, 3)])))
    assert _panes([merged]) == [(0, 25, "EARLY", 0, False, {"n": 1, "s": 3})]
    (on_time,) = eng.end_of_input()
    assert _panes([on_time]) == [(0, 25, "ON_TIME", 1, False, {"n": 0, "s": 0})]


def test_processing_time_triggers_run_on_the_kernel_engine() -> None:
    base = _sessions("accumulating")
    for trigger in (Trigger(emit="custom", early=EarlyTrigger("after", duration=5)),
                    Trigger(emit="custom", early=EarlyTrigger("every", duration=5)),
                    Trigger(emit="custom", late=LateTrigger("after", duration=5))):
        defn = replace(base, trigger=trigger, allowed_lateness=10)
        assert qualification_problems(defn) == []
        assert isinstance(make_engine(defn), SessionKernelEngine)


BLOB_DEFN = {
    "name": "s", "key": "team", "event_time": "et", "window": {"type": "session", "gap": "5s"},
    "watermark": {"strategy": "bounded", "delay": "1s"}, "allowed_lateness": "3s",
    "trigger": {"emit": "custom", "early": {"count": 2}, "late": {"count": 1}},
    "accumulation": "retracting",
    "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "v"}],
}


def _drive(eng: Any, defn: Definition, rounds: range) -> list[str]:
    out: list[str] = []
    for i in rounds:
        rows = [("a", 1000 + 3000 * i, 1), ("b", 9000 + 3000 * i, 2.5),
                ("a", 4000 + 3000 * i, 4), ("a", 500 + 3000 * i, 1)]
        out += [json.dumps(e.to_json()) for e in eng.ingest(_batch(defn, (100 * i, rows)))]
        out += [json.dumps(e.to_json()) for e in eng.advance_watermark(2000 * i)]
    return out


def test_spark_state_blobs_resume_in_either_direction() -> None:
    """A blob the general engine wrote (a job's checkpoint from before) resumes on the kernel
    engine, and the kernel engine's blob resumes exactly."""
    defn = load_definition(BLOB_DEFN)
    ref = Engine(defn, watermark="external")
    _drive(ref, defn, range(3))
    probe = type(make_engine(defn, None, "external").state)
    resumed = make_engine(defn, decode_state(encode_state(ref.state)[0], probe), "external")
    assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
    assert any(w.retract or w.last_pane for ks in ref.state.keys.values()
               for w in ks.windows.values())
    assert _drive(resumed, defn, range(3, 6)) == _drive(ref, defn, range(3, 6))
    again = make_engine(defn, decode_state(encode_state(resumed.state)[0], probe), "external")
    assert isinstance(again, SessionKernelEngine) and again.general is None
    assert again.state.snapshot() == ref.state.snapshot()
    assert _drive(again, defn, range(6, 9)) == _drive(ref, defn, range(6, 9))
    assert [e.to_json() for e in again.end_of_input()] == [
        e.to_json() for e in ref.end_of_input()]
