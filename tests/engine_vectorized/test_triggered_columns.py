"""Differential tests of the triggered engine's columnar output: per call, the
``EmissionColumns`` of ``ingest_columns`` / ``advance_watermark_columns`` /
``end_of_input_columns`` must give the general engine's objects (``to_emissions()``) and its
replay lines (``json_lines()``) exactly, in order, late records interleaved, retractions and
``emitted_at`` included, also after a hand-over to the general engine and when processing-time
timers fire as a unit arrives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
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
from jobs.engine import make_engine
from jobs.engine.engine import Engine
from jobs.engine.records import Emission
from jobs.engine.vectorized.emission_columns import EmissionColumns
from jobs.engine.vectorized.triggered import TriggeredEngine
from jobs.replay import is_columnar, replay_file
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants())
def test_columns_equal_general_engine_objects_and_lines(
    defn: Definition, insts: list[Instant]
) -> None:
    assert_same(defn, insts, None)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_columns_under_an_external_watermark_equal_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    assert_same(defn, insts, marks)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_definitions(), data=st.data())
def test_columns_after_a_hand_over_equal_general_engine(
    defn: Definition, data: st.DataObject
) -> None:
    """Strings, booleans and huge ints hand the state to the general engine mid-stream; its
    objects come back as columns."""
    assert_same(defn, data.draw(odd_instants(defn)), None)


def test_replay_file_writes_the_general_engines_bytes(tmp_path: Path) -> None:
    """``tidemark replay`` formats the triggered engine's panes and late records from the
    columns: the file is byte-identical to the general engine's (retractions, late records,
    dead letters and control lines included)."""
    rng = np.random.default_rng(7)
    lines = []
    pt = 1_000
    for i in range(400):
        if i % 37 == 0:
            pt += 700
            lines.append(json.dumps({"$processing_time": pt}))
        k = ["a\u0000b", "ü", "z", 1, 2.5, None][int(rng.integers(0, 6))]
        lines.append(json.dumps({"k": k, "t": int(pt - rng.integers(0, 900)),
                                 "x": [1, 2.25, None, -3][int(rng.integers(0, 4))]}))
        if i == 200:
            lines.append("not json")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    for window, accumulation in ((Window("hopping", size=200, step=50), "retracting"),
                                 (Window("tumbling", size=100), "discarding"),
                                 (Window("global"), "accumulating")):
        defn = Definition(
            name="r", window=window, key="k", event_time="t", watermark=Watermark(delay=20),
            allowed_lateness=30, accumulation=accumulation,
            trigger=Trigger(emit="custom", early=EarlyTrigger("count", count=3), on_time=True,
                            late=LateTrigger("count", count=1)),
            aggregations=(Aggregation("total", "sum", "x"), Aggregation("n", "count"),
                          Aggregation("hi", "max", "x"), Aggregation("avg", "mean", "x")),
        )
        assert isinstance(make_engine(defn), TriggeredEngine)
        general = replay_file(defn, str(src), str(tmp_path / "g.jsonl"), engine="general")
        auto = replay_file(defn, str(src), str(tmp_path / "a.jsonl"), engine="auto")
        assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "g.jsonl").read_bytes(), window
        assert general.summary() == auto.summary()
        assert auto.panes >= 6 and (window.type == "global" or auto.late > 0)
