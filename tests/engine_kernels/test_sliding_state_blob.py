"""The Spark host's state blobs with the compiled sliding engine: what it writes resumes
exactly, and a blob the general engine wrote for the same definition resumes on it (a job
whose definition now picks the kernel engine keeps its state)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import Engine, make_engine
from jobs.engine.kernels import SlidingKernelEngine
from jobs.engine.records import RecordBatch
from jobs.spark.engine_path.state_blob import decode_state, encode_state

DEFN = {
    "name": "s", "key": "team", "event_time": "et", "window": {"type": "sliding", "size": "5s"},
    "watermark": {"strategy": "bounded", "delay": "1s"}, "allowed_lateness": "3s",
    "aggregations": [{"name": "n", "fn": "count"}, {"name": "total", "fn": "sum", "of": "v"},
                     {"name": "avg", "fn": "mean", "of": "v"}, {"name": "f", "fn": "first",
                                                                "of": "v"}],
}


def _drive(eng: Any, rounds: range, values: list[Any]) -> list[str]:
    out: list[str] = []
    for i in rounds:
        batch = RecordBatch(
            keys=["a", "b", "é", "a"], event_times=np.array([1000, 9000, 3000, 2500]) + 4000 * i,
            columns={"total": values, "avg": values, "f": values},
            processing_time=100 * (i + 1))
        out += [json.dumps(e.to_json()) for e in eng.ingest(batch)]
        out += [json.dumps(e.to_json()) for e in eng.advance_watermark(3000 * i)]
    return out


def _resume(defn: Definition, blob: bytes) -> Any:
    probe = type(make_engine(defn, None, "external").state)  # what the host passes
    return make_engine(defn, decode_state(blob, probe), "external")


def test_kernel_engine_state_blob_resumes_exactly() -> None:
    defn = load_definition(DEFN)
    eng = make_engine(defn, None, "external")
    assert isinstance(eng, SlidingKernelEngine)
    ref = Engine(defn, watermark="external")
    ints = [1, 7, None, 4]
    assert _drive(eng, range(3), ints) == _drive(ref, range(3), ints)
    blob, _ = encode_state(eng.state)
    resumed = _resume(defn, blob)
    assert isinstance(resumed, SlidingKernelEngine) and resumed.general is None
    assert resumed.state.snapshot() == ref.state.snapshot()
    assert _drive(resumed, range(3, 6), ints) == _drive(ref, range(3, 6), ints)
    assert [e.to_json() for e in resumed.end_of_input()] == [
        e.to_json() for e in ref.end_of_input()]


def test_a_general_engine_blob_resumes_on_the_kernel_engine() -> None:
    defn = load_definition(DEFN)
    ref = Engine(defn, watermark="external")
    ints = [1, 7, None, 4]
    _drive(ref, range(3), ints)
    blob, _ = encode_state(ref.state)  # the packed general-engine blob (tag 1)
    assert blob[0] == 1
    resumed = _resume(defn, blob)
    assert isinstance(resumed, SlidingKernelEngine) and resumed.general is None
    assert _drive(resumed, range(3, 6), ints) == _drive(ref, range(3, 6), ints)
    assert resumed.state.snapshot() == ref.state.snapshot()


def test_a_float_sum_built_out_of_order_resumes_on_the_general_engine() -> None:
    """A stored float sum holds its additions' order. Here [2000, 12000] was created from the
    records at 10 s and 12 s and the one at 11 s joined it later: 1e16 + 1.0 - 1e16 is 0.0,
    not the 1.0 of event-time order. The held records cannot show that order, so the resumed
    engine hands over to the general engine, and the output stays the general engine's."""
    defn = load_definition(DEFN)
    eng = make_engine(defn, None, "external")
    ref = Engine(defn, watermark="external")
    out: list[list[str]] = [[], []]
    for j, e in enumerate((eng, ref)):
        for pt, t, v in ((1, [10_000, 12_000], [1e16, 1.0]), (2, [11_000], [-1e16])):
            b = RecordBatch(keys=["a"] * len(t), event_times=np.array(t),
                            columns={"total": v, "avg": v, "f": v}, processing_time=pt)
            out[j] += [json.dumps(x.to_json()) for x in e.ingest(b)]
    assert out[0] == out[1]
    assert eng.state.snapshot() == ref.state.snapshot()
    resumed = _resume(defn, encode_state(eng.state)[0])
    assert isinstance(resumed, SlidingKernelEngine)
    assert resumed.handed_over_because is not None and "order" in resumed.handed_over_because
    ends = [[json.dumps(x.to_json()) for x in e.end_of_input()] for e in (resumed, ref)]
    assert ends[0] == ends[1]
    assert json.loads(ends[0][2])["values"]["total"] == 0.0  # [2000, 12000]: 1e16 + 1 - 1e16
