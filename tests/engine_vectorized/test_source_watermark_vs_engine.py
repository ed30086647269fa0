"""``watermark.strategy: source`` on the vectorized final engine: records never move the
watermark, the source's marks do (``advance_watermark``, ``$watermark`` lines in replay); the
fast engine must be indistinguishable from the general engine: the same panes, late lines
and ``emitted_at`` in the same order, late counts and open windows after every unit, across a
snapshot/restore in the middle and through replay in every arrival mode."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import Definition, Watermark
from jobs.engine import make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.vectorized import VectorizedEngine, qualifies
from jobs.replay import replay_lines
from tests.engine_vectorized.strategies import Instant, definitions, instants, record_of
from tests.engine_vectorized.test_idle_advance_vs_engine import run
from tests.engine_vectorized.test_vs_reference import canon


@st.composite
def source_definitions(draw: st.DrawFn) -> Definition:
    """Final fixed windows under a source watermark (no delay and no idle advance: a user
    cannot write them with it); the scope drawn too (one watermark for all keys either way,
    as in the general engine)."""
    base = draw(definitions())
    wm = Watermark(strategy="source", scope=draw(st.sampled_from(["global", "key"])))
    return dataclasses.replace(base, watermark=wm)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=source_definitions(), insts=instants(), data=st.data())
def test_source_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    assert qualifies(defn)
    ticks = [data.draw(st.one_of(st.none(), st.integers(0, 40))) for _ in insts]
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True, marks=marks)
    g = run(defn, insts, ticks, None, vectorized=False, marks=marks)
    assert v == g


def _lines(insts: list[Instant], marks: list[int | None]) -> list[str]:
    lines: list[str] = []
    for inst, mark in zip(insts, marks, strict=True):
        lines.append(json.dumps({"$processing_time": inst.processing_time}))
        lines.extend(json.dumps(record_of(r)) for r in inst.rows)
        if mark is not None:
            lines.append(json.dumps({"$watermark": mark}))
    return lines


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=source_definitions(), insts=instants(), data=st.data(),
       arrival=st.sampled_from(["record", "batch", "batch:1", "batch:3"]))
def test_source_watermark_replay_equals_general(
    defn: Definition, insts: list[Instant], data: st.DataObject, arrival: str
) -> None:
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    lines = _lines(insts, marks)
    mode = Arrival.parse(arrival)
    auto = list(replay_lines(defn, lines, engine="auto", arrival=mode))
    general = list(replay_lines(defn, lines, engine="general", arrival=mode))
    assert canon(auto) == canon(general)


def test_a_source_watermark_job_runs_on_the_fast_engine() -> None:
    """A hand-checked case: records far ahead of the window do not close it; the source's
    mark does, once it passes the window's end."""
    defn = load_definition({
        "name": "sourced", "key": "k", "event_time": "t",
        "watermark": {"strategy": "source"},
        "window": {"type": "tumbling", "size": 10},
        "aggregations": [{"name": "n", "fn": "count"}],
    })
    eng = make_engine(defn)
    assert isinstance(eng, VectorizedEngine)
    lines = [json.dumps({"k": "a", "t": t}) for t in (1, 5, 500)]
    before = list(replay_lines(defn, [*lines, json.dumps({"$watermark": 9})], engine="auto",
                               eof_flush=False))
    assert [o for o in before if "timing" in o] == []
    after = list(replay_lines(defn, [*lines, json.dumps({"$watermark": 10})], engine="auto",
                              eof_flush=False))
    assert [(p["window_start"], p["values"]["n"]) for p in after if "timing" in p] == [(0, 2)]
