"""Differential tests of the triggered engine's columnar output: per call, the
``EmissionColumns`` of ``ingest_columns`` / ``advance_watermark_columns`` /
``end_of_input_columns`` must give the general engine's objects (``to_emissions()``) and its
replay lines (``json_lines()``) exactly, in order, late records interleaved, retractions and
``emitted_at`` included, also after a hand-over to the general engine and when processing-time
timers fire as a unit arrives."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine.engine import Engine
from jobs.engine.records import Emission
from jobs.engine.vectorized.emission_columns import EmissionColumns
from jobs.engine.vectorized.triggered import TriggeredEngine
from jobs.replay import is_columnar
from tests.engine_vectorized.strategies import Instant, instants
from tests.engine_vectorized.test_triggered_vs_engine import triggered_definitions
from tests.engine_vectorized.test_vs_engine import odd_instants
from tests.engine_vectorized.test_vs_reference import batch_of


def line(e: Emission) -> str:
    return json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False)


def columnar_calls(defn: Definition, insts: list[Instant], marks: list[int | None] | None
                   ) -> tuple[list[list[Emission]], list[list[str]]]:
    """Per engine call, the triggered engine's columnar output as objects and as lines."""
    eng = TriggeredEngine(defn, watermark="internal" if marks is None else "external")
    assert is_columnar(eng)
    objs: list[list[Emission]] = []
    lines: list[list[str]] = []

    def take(out: Any) -> None:
        assert isinstance(out.panes, EmissionColumns)
        objs.append(out.to_emissions())
        lines.append([line(e) for e in out.before] + out.panes.json_lines())
        assert len(out.panes) == out.panes.pane_count + out.panes.late_count

    for i, inst in enumerate(insts):
        take(eng.ingest_columns(batch_of(defn, inst)))
        if marks is not None and marks[i] is not None:
            take(eng.advance_watermark_columns(marks[i]))
    take(eng.end_of_input_columns())
    return objs, lines


def general_calls(defn: Definition, insts: list[Instant], marks: list[int | None] | None
                  ) -> list[list[Emission]]:
    eng = Engine(defn, watermark="internal" if marks is None else "external")
    out: list[list[Emission]] = []
    for i, inst in enumerate(insts):
        out.append(eng.ingest(batch_of(defn, inst)))
        if marks is not None and marks[i] is not None:
            out.append(eng.advance_watermark(marks[i]))
    out.append(eng.end_of_input())
    return out


def assert_same(defn: Definition, insts: list[Instant], marks: list[int | None] | None) -> None:
    objs, lines = columnar_calls(defn, insts, marks)
    general = general_calls(defn, insts, marks)
    assert objs == general
    assert lines == [[line(e) for e in call] for call in general]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants())
def test_columns_equal_general_engine_objects_and_lines(
    defn: Definition, insts: list[Instant]
) -> None:
    assert_same(defn, insts, None)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_columns_under_an_external_watermark_equal_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    assert_same(defn, insts, marks)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), data=st.data())
def test_columns_after_a_hand_over_equal_general_engine(
    defn: Definition, data: st.DataObject
) -> None:
    """Strings, booleans and huge ints hand the state to the general engine mid-stream; its
    objects come back as columns."""
    assert_same(defn, data.draw(odd_instants(defn)), None)
