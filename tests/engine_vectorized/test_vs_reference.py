"""The vectorized engine against the naive reference (tests/engine_vectorized/reference.py)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized import VectorizedEngine
from tests.engine_vectorized.reference import ReferenceFinal
from tests.engine_vectorized.strategies import Instant, definitions, instants, record_of


def batch_of(defn: Definition, inst: Instant) -> RecordBatch:
    cols: dict[str, Any] = {}
    for a in defn.aggregations:
        if a.of is not None:
            cols[a.name] = [r[2] for r in inst.rows]
    return RecordBatch(
        keys=[r[0] for r in inst.rows],
        event_times=np.array([r[1] for r in inst.rows], dtype=np.int64),
        columns=cols,
        records=[record_of(r) for r in inst.rows],
        processing_time=inst.processing_time,
    )


def run_vectorized(defn: Definition, insts: list[Instant], restore_at: int | None) -> list[dict[str, Any]]:
    eng = VectorizedEngine(defn)
    out: list[dict[str, Any]] = []
    for i, inst in enumerate(insts):
        if i == restore_at:
            snap = json.loads(json.dumps(eng.snapshot()))
            eng = VectorizedEngine(defn, state=snap)
        out.extend(e.to_json() for e in eng.ingest(batch_of(defn, inst)))
    out.extend(e.to_json() for e in eng.end_of_input())
    return out


def run_reference(defn: Definition, insts: list[Instant]) -> list[dict[str, Any]]:
    ref = ReferenceFinal(defn)
    out: list[dict[str, Any]] = []
    for inst in insts:
        rows = [
            (r[0], r[1], {a.name: r[2] for a in defn.aggregations if a.of}, record_of(r))
            for r in inst.rows
        ]
        out.extend(ref.ingest(rows, inst.processing_time))
    out.extend(ref.end_of_input())
    return out


def canon(out: list[dict[str, Any]]) -> list[str]:
    # JSON text keeps 1 / 1.0 / true apart, as a user reading the output would
    return [json.dumps(o, sort_keys=True) for o in out]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=definitions(), insts=instants(), data=st.data())
def test_same_output_as_reference(defn: Definition, insts: list[Instant], data: st.DataObject) -> None:
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    assert canon(run_vectorized(defn, insts, restore_at)) == canon(run_reference(defn, insts))
