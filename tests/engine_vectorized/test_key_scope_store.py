"""A ``scope: key`` job on the vectorized engine: its store survives the Spark state blob,
and a unit of several records runs on the arrays, each record meeting its key's watermark as
the key's earlier records left it (docs/semantics.md, "Arrival model")."""

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


def test_a_key_scope_store_restores_and_equals_the_general_engine() -> None:
    assert qualifies(DEFN)
    old = make_engine(DEFN)
    assert isinstance(old, VectorizedEngine)
    first = [("a", 5, 1), ("b", 3, 2)]
    for row in first:  # one record a unit: the arrays still hold the state
        old.ingest(_batch([row], 1000))
    blob, _ = encode_state(old.state)
    state = decode_state(blob, type(make_engine(DEFN).state))
    assert isinstance(state, VectorizedState)
    eng = make_engine(DEFN, state)
    assert isinstance(eng, VectorizedEngine)

    ref = Engine(DEFN)
    for row in first:
        ref.ingest(_batch([row], 1000))
    # a@30 moves a's watermark (and fires a's [0, 10)) before a@20 is judged: a@20 is late;
    # b is untouched by it
    unit = [("a", 30, 4), ("b", 8, 8), ("a", 20, 16)]
    got = [e.to_json() for e in eng.ingest(_batch(unit, 2000)) + eng.end_of_input()]
    want = [e.to_json() for e in ref.ingest(_batch(unit, 2000)) + ref.end_of_input()]
    assert json.dumps(got) == json.dumps(want)
    assert [(o["key"], o["event_time"]) for o in got if o["type"] == "late"] == [("a", 20)]
    assert eng.general is None  # the whole unit ran on the arrays
