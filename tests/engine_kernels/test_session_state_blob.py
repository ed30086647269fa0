"""The Spark host's state blobs with the compiled session engine: what it writes resumes
exactly, and a blob the general engine wrote for the same definition resumes on it (a job
whose definition now picks the kernel engine keeps its state)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SessionKernelEngine
from jobs.engine.records import RecordBatch
from jobs.spark.engine_path.state_blob import decode_state, encode_state

DEFN = {
    "name": "s", "key": "team", "event_time": "et", "window": {"type": "session", "gap": "5s"},
    "watermark": {"strategy": "bounded", "delay": "1s"}, "allowed_lateness": "3s",
    "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "v"},
                     {"name": "avg", "fn": "mean", "of": "v"}],
}


def _drive(eng: Any, defn: Definition, rounds: range) -> list[str]:
    out: list[str] = []
    for i in rounds:
        batch = RecordBatch(
            keys=["a", "b", "é", "a"], event_times=np.array([1000, 9000, 3000, 2500]) + 4000 * i,
            columns={"total": [1, 2.5, -0.0, 4], "avg": [1, 2.5, None, 4]},
            processing_time=100 * (i + 1))
        out += [json.dumps(e.to_json()) for e in eng.ingest(batch)]
        out += [json.dumps(e.to_json())
                for e in eng.advance_watermark(3000 * i)]
    return out


def test_kernel_engine_state_blob_resumes_exactly() -> None:
    defn = load_definition(DEFN)
    eng = make_engine(defn, None, "external")
    assert isinstance(eng, SessionKernelEngine)
    ref = Engine(defn, watermark="external")
    assert _drive(eng, defn, range(3)) == _drive(ref, defn, range(3))
    blob, _ = encode_state(eng.state)
    probe = type(make_engine(defn, None, "external").state)  # what the host passes
    resumed = make_engine(defn, decode_state(blob, probe), "external")
    assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
    assert resumed.state.snapshot() == ref.state.snapshot()
    assert _drive(resumed, defn, range(3, 6)) == _drive(ref, defn, range(3, 6))
    assert [e.to_json() for e in resumed.end_of_input()] == [
        e.to_json() for e in ref.end_of_input()]


def test_a_general_engine_blob_resumes_on_the_kernel_engine() -> None:
    defn = load_definition(DEFN)
    ref = Engine(defn, watermark="external")
    _drive(ref, defn, range(3))
    blob, _ = encode_state(ref.state)  # the packed general-engine blob (tag 1)
    assert blob[0] == 1
    probe = type(make_engine(defn, None, "external").state)
    resumed = make_engine(defn, decode_state(blob, probe), "external")
    assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
    assert _drive(resumed, defn, range(3, 6)) == _drive(ref, defn, range(3, 6))
    assert resumed.state.snapshot() == ref.state.snapshot()


SIDE_DEFN = {
    **DEFN,
    "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "collect", "of": "v"},
                     {"name": "avg", "fn": "count_distinct", "of": "v"}],
    "trigger": {"emit": "custom", "early": {"count": 2},
                "late": {"count": 1}},
    "accumulation": "retracting",
}


def test_a_triggered_collect_blob_carries_the_entries() -> None:
    """Triggered sessions with collect / count_distinct (numbers, nulls, -0.0): the
    blob holds each open session's entries, and the resumed engine's panes, retractions
    and final panes are the general engine's."""
    defn = load_definition(SIDE_DEFN)
    eng = make_engine(defn, None, "external")
    assert isinstance(eng, SessionKernelEngine)
    ref = Engine(defn, watermark="external")
    assert _drive(eng, defn, range(3)) == _drive(ref, defn, range(3))
    assert any(eng.side[j].key.size for j in eng.side)
    blob, token = encode_state(eng.state)
    assert token is not None
    probe = type(make_engine(defn, None, "external").state)
    resumed = make_engine(defn, decode_state(blob, probe), "external")
    assert isinstance(resumed, SessionKernelEngine) and resumed.general is None
    assert resumed.state.snapshot() == ref.state.snapshot()
    assert _drive(resumed, defn, range(3, 6)) == _drive(ref, defn, range(3, 6))
    assert [e.to_json() for e in resumed.end_of_input()] == [
        e.to_json() for e in ref.end_of_input()]
