"""A store the vectorized engine wrote for a ``scope: key`` definition keeps working: the
definition now picks the general engine (a key's records move its watermark one at a time
inside a unit), but the old state restores as it is and hands over where the arrays would
differ (docs/semantics.md, "Stored state")."""

from __future__ import annotations

import json

import numpy as np

from jobs.definition import load_definition
from jobs.engine import Engine, RecordBatch, make_engine
from jobs.engine.vectorized import VectorizedEngine, qualifies
from jobs.engine.vectorized.engine import VectorizedState
from jobs.spark.engine_path.state_blob import decode_state, encode_state

DEFN = load_definition({
    "name": "keyed", "key": "k", "event_time": "t",
    "watermark": {"strategy": "bounded", "delay": 0, "scope": "key"},
    "lateness_basis": "event",
    "window": {"type": "tumbling", "size": 10},
    "aggregations": [{"name": "n", "fn": "count"}, {"name": "s", "fn": "sum", "of": "v"}],
})


def _batch(rows: list[tuple[str, int, int]], pt: int) -> RecordBatch:
    return RecordBatch(keys=[r[0] for r in rows],
                       event_times=np.array([r[1] for r in rows], dtype=np.int64),
                       columns={"s": [r[2] for r in rows]},
                       records=[{"k": k, "t": t, "v": v} for k, t, v in rows],
                       processing_time=pt)


def test_an_old_vectorized_key_scope_store_restores_and_equals_the_general_engine() -> None:
    assert not qualifies(DEFN)
    assert type(make_engine(DEFN)) is Engine
    old = VectorizedEngine(DEFN)  # as make_engine picked it before the arrival model
    first = [("a", 5, 1), ("b", 3, 2)]
    for row in first:  # one record a unit: the arrays still hold the state
        old.ingest(_batch([row], 1000))
    blob, _ = encode_state(old.state)
    state = decode_state(blob, type(make_engine(DEFN).state))  # the host probes the general kind
    assert isinstance(state, VectorizedState)
    eng = make_engine(DEFN, state)
    assert isinstance(eng, VectorizedEngine)

    ref = Engine(DEFN)
    for row in first:
        ref.ingest(_batch([row], 1000))
    # a@30 moves a's watermark before a@20 is judged: a@20 is late; b is untouched by it
    unit = [("a", 30, 4), ("b", 8, 8), ("a", 20, 16)]
    got = [e.to_json() for e in eng.ingest(_batch(unit, 2000)) + eng.end_of_input()]
    want = [e.to_json() for e in ref.ingest(_batch(unit, 2000)) + ref.end_of_input()]
    assert json.dumps(got) == json.dumps(want)
    assert [(o["key"], o["event_time"]) for o in got if o["type"] == "late"] == [("a", 20)]
    assert eng.handed_over_because is not None and "scope: key" in eng.handed_over_because
