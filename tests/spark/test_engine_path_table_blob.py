"""The engine path's state blob of the triggered engine (its own window table, tag 3) and its
output rows built from the engine's columns: a resumed engine continues exactly as the one
that kept running, checkpoints of the general-state blob (tag 1) still resume, the converter
gives the general state, and the columnar rows equal the object route's. Pure Python: no Spark."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from jobs.definition import load_definition
from jobs.engine import EngineError, make_engine
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized.triggered import TriggeredEngine
from jobs.spark.engine_path.engine_calls import (
    advance_watermark,
    ingest,
    output_frame,
    split_output,
)
from jobs.spark.engine_path.output import emission_frame
from jobs.spark.engine_path.state_blob import (
    BLOB_LZ4,
    BLOB_PACKED,
    BLOB_TABLE,
    COMPRESS_FROM,
    blob_token,
    decode_state,
    encode_engine,
    encode_state,
    general_state,
    restore_engine,
)

BASE: dict[str, Any] = {
    "name": "t", "key": "team", "event_time": "et", "allowed_lateness": "10s",
    "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                     {"name": "n", "fn": "count"},
                     {"name": "hi", "fn": "max", "of": "score"},
                     {"name": "first", "fn": "first", "of": "score"},
                     {"name": "avg", "fn": "mean", "of": "score"}],
}
SPECS: dict[str, dict[str, Any]] = {
    "tumbling_retracting": {
        "window": {"type": "tumbling", "size": "1m"}, "accumulation": "retracting",
        "trigger": {"emit": "custom", "early": {"count": 3}, "on_time": True,
                    "late": {"count": 1}}},
    "hopping_discarding_timer": {
        "window": {"type": "hopping", "size": "20s", "step": "10s"},
        "accumulation": "discarding",
        "trigger": {"emit": "custom", "early": {"after": "2s"}, "on_time": True,
                    "late": {"count": 1}}},
    "global_accumulating": {
        "window": {"type": "global"}, "accumulation": "accumulating",
        "trigger": {"emit": "custom", "early": {"count": 4}}},
}


def _defn(name: str) -> Any:
    return load_definition({**BASE, **SPECS[name]})


def _batches(seed: int, n_batches: int = 12, ints: bool = False
             ) -> list[tuple[RecordBatch, int]]:
    """Batches of out-of-order records (some late), each with the watermark after it (scores
    ints and floats, or ints only)."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(n_batches):
        n = int(rng.integers(1, 40))
        t = 5000 * b + rng.integers(-30_000, 8000, n)
        keys = [["a", "b", "é", 7, "x%y"][i] for i in rng.integers(0, 5, n)]
        score = [int(v) if ints or i % 3 else float(v) / 4 for i, v in enumerate(rng.integers(-50, 50, n))]
        out.append((RecordBatch(keys=keys, event_times=np.asarray(t, dtype=np.int64),
                                columns={a: score for a in ("total", "hi", "first", "avg")},
                                processing_time=1000 * (b + 1)),
                    5000 * b - 4000))
    return out


def _run(eng: Any, batches: list[tuple[RecordBatch, int]]) -> list[Any]:
    out: list[Any] = []
    for batch, wm in batches:
        out.extend(eng.ingest(batch))
        out.extend(eng.advance_watermark(wm))
        out.extend(eng.advance_processing_time((batch.processing_time or 0) + 2500))
    out.extend(eng.end_of_input())
    return [e.to_json() for e in out]


def _text(x: Any) -> str:
    return json.dumps(x, sort_keys=True)


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("seed", [1, 2])
def test_table_blob_resumes_exactly_and_converts_to_the_general_state(name: str,
                                                                     seed: int) -> None:
    defn = _defn(name)
    batches = _batches(seed)
    eng = make_engine(defn, None, "external")
    assert type(eng) is TriggeredEngine
    _run_part = batches[:7]
    for batch, wm in _run_part:
        eng.ingest(batch)
        eng.advance_watermark(wm)
    eng.drain_late_counts()
    blob, token = encode_engine(eng)
    assert blob[0] == BLOB_TABLE and token is not None and blob[1:17] == token
    # the converter and the readers (inspect: open windows) see the general state
    assert _text(general_state(defn, blob).snapshot()) == _text(eng.state.snapshot())
    resumed = restore_engine(defn, blob, "external")
    assert type(resumed) is TriggeredEngine
    assert _text(resumed.open_windows()) == _text(eng.open_windows())
    assert _text(resumed.late_totals()) == _text(eng.late_totals())
    # a checkpoint of the general-state blob (what the engine path wrote before) resumes too
    old = restore_engine(defn, encode_state(eng.state)[0], "external")
    rest = batches[7:]
    expected = _run(eng, rest)
    assert expected
    assert _text(_run(resumed, rest)) == _text(expected)
    assert _text(_run(old, rest)) == _text(expected)


def test_a_handed_over_engine_writes_the_general_state() -> None:
    defn = _defn("tumbling_retracting")
    eng = make_engine(defn, None, "external")
    eng.ingest(RecordBatch(keys=["a"], event_times=np.array([1000]),
                           columns={a: [2**60] for a in ("total", "hi", "first", "avg")}, processing_time=1))
    assert getattr(eng, "general", None) is not None  # integers beyond 2**53: the general engine took over
    blob, _ = encode_engine(eng)
    assert blob[0] == BLOB_PACKED
    assert _text(restore_engine(defn, blob, "external").state.snapshot()) == _text(
        eng.state.snapshot())


def test_table_blob_needs_the_definition_and_its_version() -> None:
    import msgspec

    from jobs.engine import EngineState

    defn = _defn("global_accumulating")
    eng = make_engine(defn, None, "external")
    eng.ingest(_batches(3, 1)[0][0])
    blob, _ = encode_engine(eng)
    with pytest.raises(EngineError, match="tag 3"):
        decode_state(blob, EngineState)
    data = msgspec.msgpack.decode(blob[17:])
    data["v"] = 99
    bad = blob[:17] + msgspec.msgpack.encode(data)
    with pytest.raises(EngineError, match="version 99"):
        restore_engine(defn, bad, "external")
    with pytest.raises(EngineError, match="aggregations"):
        restore_engine(load_definition({**BASE, **SPECS["global_accumulating"],
                                        "aggregations": BASE["aggregations"][:2]}),
                       blob, "external")


def _wide_batches(seed: int) -> list[tuple[RecordBatch, int]]:
    """Batches over 3,000 keys: a state whose blob is large enough to be compressed."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(4):
        n = 6000
        keys = [f"k{i}" for i in rng.integers(0, 3000, n)]
        score = [int(v) for v in rng.integers(-50, 50, n)]
        out.append((RecordBatch(keys=keys, event_times=np.asarray(
            20_000 * b + rng.integers(-15_000, 20_000, n), dtype=np.int64),
            columns={a: score for a in ("total", "hi", "first", "avg")},
            processing_time=1000 * (b + 1)), 20_000 * b - 4000))
    return out


@pytest.mark.parametrize("route", ["table", "general"])
def test_a_large_blob_is_compressed_and_resumes_exactly(route: str) -> None:
    defn = _defn("tumbling_retracting")
    batches = _wide_batches(4)
    eng = make_engine(defn, None, "external")
    for batch, wm in batches[:2]:
        eng.ingest(batch)
        eng.advance_watermark(wm)
    eng.drain_late_counts()
    if route == "table":
        blob, token = encode_engine(eng)
        inner_tag = BLOB_TABLE
    else:
        blob, token = encode_state(eng.state)
        inner_tag = BLOB_PACKED
    assert blob[0] == BLOB_LZ4 and blob_token(blob) == token
    # the same state uncompressed (the form a checkpoint written before tag 4 holds) resumes
    # to the same engine
    from jobs.spark.engine_path.state_blob import opened

    plain = opened(blob)
    assert plain[0] == inner_tag and plain[1:17] == token and len(plain) - 17 >= COMPRESS_FROM
    assert len(blob) < len(plain)
    assert _text(general_state(defn, blob).snapshot()) == _text(eng.state.snapshot())
    resumed = restore_engine(defn, blob, "external")
    from_plain = restore_engine(defn, plain, "external")
    rest = batches[2:]
    expected = _run(eng, rest)
    assert expected
    assert _text(_run(resumed, rest)) == _text(expected)
    assert _text(_run(from_plain, rest)) == _text(expected)


def test_a_damaged_compressed_blob_is_refused() -> None:
    defn = _defn("tumbling_retracting")
    eng = make_engine(defn, None, "external")
    eng.ingest(_wide_batches(5)[0][0])
    blob, _ = encode_engine(eng)
    assert blob[0] == BLOB_LZ4
    wrong_size = blob[:17] + (1).to_bytes(8, "little") + blob[25:]
    with pytest.raises(Exception):  # noqa: B017, PT011 (the codec's error or EngineError)
        restore_engine(defn, wrong_size, "external")


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("ints", [False, True])
def test_columnar_output_rows_equal_the_object_rows(name: str, ints: bool) -> None:
    defn = _defn(name)
    cols_eng = make_engine(defn, None, "external")
    obj_eng = make_engine(defn, None, "external")
    frames = 0
    for batch, wm in _batches(5, ints=ints):
        parts = [ingest(cols_eng, batch), advance_watermark(cols_eng, wm)]
        objs = [*obj_eng.ingest(batch), *obj_eng.advance_watermark(wm)]
        segments, side = split_output(parts)
        got = output_frame(segments)
        want = emission_frame([e for e in objs if e.to_json()["type"] == "pane"], [])
        assert [e.to_json() for e in side] == [e.to_json() for e in objs
                                               if e.to_json()["type"] != "pane"]
        if want is None:
            assert got is None
            continue
        frames += 1
        pd.testing.assert_frame_equal(got, want)
    assert frames > 3


_KEY_KINDS: dict[str, list[Any]] = {
    "strings": [f"k{i}" for i in range(2500)],
    "ints": list(range(-1200, 1300)),
    # JSON-distinct keys that Python and pandas take for one: 1 / 1.0 / True, 0.0 / -0.0
    "mixed": [*(f"k{i}" for i in range(800)), *range(800), None, True, False, 1.0, 0.0, -0.0,
              2.5, "", "1"],
}


@pytest.mark.parametrize("kind", sorted(_KEY_KINDS))
def test_many_keys_are_restored_in_bulk_to_the_same_codes(kind: str) -> None:
    """The table's keys are coded in one batch on restore: every key keeps its code and the
    resumed engine continues exactly as the one that kept running."""
    defn = _defn("tumbling_retracting")
    universe = _KEY_KINDS[kind]
    rng = np.random.default_rng(7)
    batches = []
    for b in range(4):
        n = 4000
        picks = rng.integers(0, len(universe), n)
        score = [int(v) for v in rng.integers(-50, 50, n)]
        batches.append((RecordBatch(keys=[universe[i] for i in picks], event_times=np.asarray(
            20_000 * b + rng.integers(-15_000, 20_000, n), dtype=np.int64),
            columns={a: score for a in ("total", "hi", "first", "avg")},
            processing_time=1000 * (b + 1)), 20_000 * b - 4000))
    eng = make_engine(defn, None, "external")
    for batch, wm in batches[:2]:
        eng.ingest(batch)
        eng.advance_watermark(wm)
    eng.drain_late_counts()
    blob, _ = encode_engine(eng)
    resumed = restore_engine(defn, blob, "external")
    assert type(resumed) is TriggeredEngine
    assert len(resumed.keys) == len(eng.keys) > 1000
    assert [(type(k), _text(k)) for k in resumed.keys.values] == [
        (type(k), _text(k)) for k in eng.keys.values]
    assert _text(resumed.open_windows()) == _text(eng.open_windows())
    rest = batches[2:]
    expected = _run(eng, rest)
    assert expected
    assert _text(_run(resumed, rest)) == _text(expected)


def test_a_table_with_a_key_twice_is_refused() -> None:
    import msgspec

    defn = _defn("tumbling_retracting")
    eng = make_engine(defn, None, "external")
    eng.ingest(_batches(3, 1)[0][0])
    blob, _ = encode_engine(eng)
    data = msgspec.msgpack.decode(blob[17:])
    data["keys"] = [data["keys"][0]] * len(data["keys"])
    with pytest.raises(EngineError, match="same key"):
        restore_engine(defn, blob[:17] + msgspec.msgpack.encode(data), "external")
