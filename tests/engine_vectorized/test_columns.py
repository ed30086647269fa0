"""The columnar output of the vectorized engine (``ingest_columns`` / ``advance_watermark_columns``
/ ``end_of_input_columns``, jobs.engine.vectorized.columns) against the general engine's panes:
``to_emissions()`` (late records, then ``to_panes()``) must be the general engine's output, the
columns must hold exactly the panes' fields, and ``json_lines()`` must be byte for byte
``json.dumps(pane.to_json(), separators=(",", ":"), ensure_ascii=False)`` (the replay output
line), on the dense store, the sparse store (``scope: key`` watermarks or a forced switch), across
a snapshot/restore, a hand-over to the general engine and an externally driven watermark. The
strategies draw NUL-containing string keys, keys of mixed JSON types (1, 1.0, true, null),
global windows and late records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition, Trigger, Watermark, Window
from jobs.engine import make_engine
from jobs.engine.engine import Engine
from jobs.engine.records import Pane, RecordBatch, key_json
from jobs.engine.vectorized import VectorizedEngine
from jobs.engine.vectorized.columns import ColumnarOutput, FinalPanes
from jobs.engine.vectorized.engine import VectorizedState
from jobs.replay import is_columnar, replay_file, replay_lines
from tests.engine_vectorized.strategies import Instant, definitions, instants
from tests.engine_vectorized.test_dense_store import (
    cell_budget,
    float_instants,
    many_window_definitions,
    sparse_only,
)
from tests.engine_vectorized.test_vs_engine import odd_instants, run
from tests.engine_vectorized.test_vs_reference import batch_of, canon


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def check(out: ColumnarOutput) -> list[dict[str, Any]]:
    """Check one call's columnar output against its own panes; return its emissions' JSON."""
    cols = out.panes
    panes = cols.to_panes()
    assert all(type(p) is Pane for p in panes)
    # panes sit in `before` only when a late line follows them (the general engine's output
    # after a hand-over interleaves a record's late lines and panes)
    assert not out.before or not isinstance(out.before[-1], Pane)
    assert len(panes) == len(cols) == len(cols.key_codes)
    assert [key_json(k) for k in cols.pane_keys()] == [key_json(p.key) for p in panes]
    starts = None if cols.window_start is None else cols.window_start.tolist()
    ends = None if cols.window_end is None else cols.window_end.tolist()
    assert (starts or [None] * len(panes)) == [p.window_start for p in panes]
    assert (ends or [None] * len(panes)) == [p.window_end for p in panes]
    assert cols.watermarks() == [p.watermark for p in panes]
    for name, col in cols.values.items():
        assert col.dtype in (np.int64, np.float64, object)
        assert dumps(col.tolist()) == dumps([p.values[name] for p in panes])
    for p in panes:
        assert p == Pane(p.key, p.window_start, p.window_end, "ON_TIME", 0, True, True, False,
                         p.values, cols.emitted_at, p.watermark)
    assert cols.json_lines() == [dumps(p.to_json()) for p in panes]
    emissions = out.to_emissions()
    assert emissions[len(out.before):] == panes
    return [e.to_json() for e in emissions]


def run_columns(defn: Definition, insts: list[Instant], restore_at: int | None) -> list[str]:
    eng = VectorizedEngine(defn)
    out: list[dict[str, Any]] = []
    for i, inst in enumerate(insts):
        if i == restore_at:
            snap = json.loads(json.dumps(eng.state.snapshot()))
            if snap.get("engine") == "vectorized":
                eng = VectorizedEngine(defn, state=VectorizedState.restore(snap))
            else:  # handed over: a general snapshot
                eng = VectorizedEngine(defn, state=snap)
        out.extend(check(eng.ingest_columns(batch_of(defn, inst))))
    out.extend(check(eng.end_of_input_columns()))
    out.extend(check(eng.end_of_input_columns()))  # a second end: nothing
    return canon(out)


def run_general(defn: Definition, insts: list[Instant]) -> list[str]:
    eng = Engine(defn)
    out = [e.to_json() for inst in insts for e in eng.ingest(batch_of(defn, inst))]
    out.extend(e.to_json() for e in eng.end_of_input())
    return canon(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=definitions(), insts=instants(), store=st.sampled_from(["dense", "sparse", "small"]),
       data=st.data())
def test_columns_equal_general_engine_panes(
    defn: Definition, insts: list[Instant], store: str, data: st.DataObject
) -> None:
    """Dense store (global watermark), sparse store (``scope: key``, forced, or a cell budget
    so small the dense store switches mid-stream), and the general engine: one output."""
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    if store == "sparse":
        with sparse_only():
            got = run_columns(defn, insts, restore_at)
    elif store == "small":
        with cell_budget(64):
            got = run_columns(defn, insts, restore_at)
    else:
        got = run_columns(defn, insts, restore_at)
    assert got == run_general(defn, insts)
    # and the object API of the same engine, which is built on the columns
    assert got == run(defn, insts, restore_at, vectorized=True)[0]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=st.one_of(definitions(), many_window_definitions()), insts=float_instants(),
       sparse=st.booleans())
def test_columns_with_inexact_floats_equal_dense_and_sparse_object_output(
    defn: Definition, insts: list[Instant], sparse: bool
) -> None:
    """Floats that are not exactly representable (hopping sums may differ from the general
    engine in the last bits, see docs): the columns equal the object API bit for bit."""
    if sparse:
        with sparse_only():
            got = run_columns(defn, insts, None)
            want = run(defn, insts, None, vectorized=True)[0]
    else:
        got = run_columns(defn, insts, None)
        want = run(defn, insts, None, vectorized=True)[0]
    assert got == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=definitions(), data=st.data())
def test_columns_across_hand_over_to_general_engine(defn: Definition, data: st.DataObject) -> None:
    insts = data.draw(odd_instants(defn))
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    assert run_columns(defn, insts, restore_at) == run_general(defn, insts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=definitions(), insts=instants(), data=st.data())
def test_columns_with_externally_driven_watermark(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    vec = VectorizedEngine(defn, watermark="external")
    gen = Engine(defn, watermark="external")
    got: list[dict[str, Any]] = []
    want: list[dict[str, Any]] = []
    for inst, mark in zip(insts, marks, strict=True):
        got.extend(check(vec.ingest_columns(batch_of(defn, inst))))
        want.extend(e.to_json() for e in gen.ingest(batch_of(defn, inst)))
        if mark is not None:
            got.extend(check(vec.advance_watermark_columns(mark)))
            want.extend(e.to_json() for e in gen.advance_watermark(mark))
    got.extend(check(vec.end_of_input_columns()))
    want.extend(e.to_json() for e in gen.end_of_input())
    assert canon(got) == canon(want)


def _defn(window: Window, *aggs: Aggregation, scope: str = "global") -> Definition:
    return Definition(
        name="c", window=window, key="k", event_time="t",
        watermark=Watermark(delay=0, scope=scope),  # type: ignore[arg-type]
        allowed_lateness=0, trigger=Trigger(emit="final"),
        aggregations=aggs or (Aggregation("total", "sum", "x"), Aggregation("n", "count")),
    )


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_json_lines_of_special_values() -> None:
    """inf sums, None means / min of a column of nulls, mixed int/float sums, non-ASCII and
    NUL keys, '%' in names and keys: the template formatting must stay exact."""
    defn = _defn(
        Window("tumbling", size=10),
        Aggregation("s%d", "sum", "x"), Aggregation("avg", "mean", "x"),
        Aggregation("lo", "min", "x"), Aggregation("n", "count"),
    )
    eng = VectorizedEngine(defn)
    keys: list[Any] = ["a\x00b", "ü%s", "a", 1, 1.0, True, None, "a\x00c"]
    xs: list[Any] = [1e308, None, 2, 3, 0.5, None, -0.0, 1]
    batch = RecordBatch(keys=keys * 2, event_times=np.array([1] * 16),
                        columns={n: xs + xs for n in ("s%d", "avg", "lo")}, processing_time=5)
    out = check(eng.ingest_columns(batch))
    out += check(eng.end_of_input_columns())
    assert any(o["values"]["s%d"] == "Infinity" for o in out)  # the non-finite output rule
    assert any(o["values"]["avg"] is None for o in out)
    assert canon(out) == run_general_batches(defn, [batch])


def run_general_batches(defn: Definition, batches: list[RecordBatch]) -> list[str]:
    eng = Engine(defn)
    out = [e.to_json() for b in batches for e in eng.ingest(b)]
    out.extend(e.to_json() for e in eng.end_of_input())
    return canon(out)


def test_key_scope_watermarks_differ_per_pane() -> None:
    defn = _defn(Window("tumbling", size=10), scope="key")
    eng = VectorizedEngine(defn)
    b1 = RecordBatch(keys=["a", "b"], event_times=np.array([1, 25]),
                     columns={"total": [1, 2]}, processing_time=1)
    b2 = RecordBatch(keys=["a", "b"], event_times=np.array([35, 45]),
                     columns={"total": [3, 4]}, processing_time=2)
    out = check(eng.ingest_columns(b1)) + check(eng.ingest_columns(b2))
    assert sorted(o["watermark"] for o in out) == [35, 45]
    assert canon(out + check(eng.end_of_input_columns())) == run_general_batches(defn, [b1, b2])


def test_empty_outputs_and_late_records_come_first() -> None:
    defn = _defn(Window("tumbling", size=10))
    eng = VectorizedEngine(defn)
    empty = eng.ingest_columns(RecordBatch.empty(processing_time=1))
    assert empty.to_emissions() == [] and len(empty.panes) == 0 and empty.panes.json_lines() == []
    check(eng.ingest_columns(RecordBatch(keys=["a"], event_times=np.array([25]),
                                         columns={"total": [1]}, processing_time=2)))
    late = eng.ingest_columns(RecordBatch(keys=["a", "b"], event_times=np.array([3, 40]),
                                          columns={"total": [1, 2]}, processing_time=3))
    assert [e.type for e in late.before] == ["late"]
    assert [e.type for e in late.to_emissions()] == ["late", "pane"]


def test_final_panes_of_objects_returns_those_objects() -> None:
    p = Pane("a", 0, 10, "ON_TIME", 0, True, True, False, {"n": 1}, 5, None)
    cols = FinalPanes.of_panes([p], ["n"], 10, 5)
    assert cols.to_panes()[0] is p
    assert cols.json_lines() == [dumps(p.to_json())]
    assert cols.values["n"].tolist() == [1] and cols.watermarks() == [None]


def test_replay_file_writes_the_same_bytes_with_either_engine(tmp_path: Path) -> None:
    """``tidemark replay`` formats the vectorized engine's panes from the columns; the file must
    be byte-identical to the general engine's (late records, dead letters and control lines
    included)."""
    rng = np.random.default_rng(5)
    lines = []
    pt = 1_000
    for i in range(400):
        if i % 37 == 0:
            pt += 700
            lines.append(json.dumps({"$processing_time": pt}))
        k = ["a\u0000b", "ü", "z", 1, 2.5, True, None][int(rng.integers(0, 7))]
        lines.append(json.dumps({"k": k, "t": int(pt - rng.integers(0, 900)),
                                 "x": [1, 2.25, None, -3][int(rng.integers(0, 4))]}))
        if i == 200:
            lines.append("not json")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    for window in (Window("hopping", size=200, step=50), Window("tumbling", size=100),
                   Window("global")):
        defn = Definition(
            name="r", window=window, key="k", event_time="t", watermark=Watermark(delay=20),
            allowed_lateness=30, trigger=Trigger(emit="final"),
            aggregations=(Aggregation("total", "sum", "x"), Aggregation("n", "count"),
                          Aggregation("hi", "max", "x"), Aggregation("avg", "mean", "x")),
        )
        general = replay_file(defn, str(src), str(tmp_path / "g.jsonl"), engine="general")
        vector = replay_file(defn, str(src), str(tmp_path / "v.jsonl"), engine="vectorized")
        g_bytes = (tmp_path / "g.jsonl").read_bytes()
        assert (tmp_path / "v.jsonl").read_bytes() == g_bytes, window
        assert general.summary() == vector.summary()
        assert vector.panes >= 6 and (window.type == "global" or vector.late > 0)
        objs = list(replay_lines(defn, src.read_text().splitlines(), engine="vectorized"))
        assert [dumps(o) + "\n" for o in objs] == g_bytes.decode().splitlines(keepends=True)


def test_replay_drives_by_columns_only_the_engines_that_offer_them() -> None:
    """Replay is typed against the engine protocols, not engine classes: it takes the columnar
    calls where the picked engine has them (the vectorized one) and the object calls otherwise."""
    fixed = Definition(name="r", window=Window("tumbling", size=100), key="k", event_time="t",
                       trigger=Trigger(emit="final"), aggregations=(Aggregation("n", "count"),))
    assert is_columnar(make_engine(fixed, vectorized=True))
    assert not is_columnar(make_engine(fixed, vectorized=False))
    sessions = Definition(name="s", window=Window("session", gap=100), key="k", event_time="t",
                          trigger=Trigger(emit="final"), aggregations=(Aggregation("n", "count"),))
    assert not is_columnar(make_engine(sessions))
