"""``watermark.strategy: source`` on the vectorized final engine through replay: the source's
``$watermark`` lines move the watermark, records never do; the output must be the general
engine's line for line in every arrival mode (engine calls, snapshots and host modes:
``test_source_final_vs_engine.py``)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.vectorized import VectorizedEngine
from jobs.replay import replay_lines
from tests.engine_vectorized.strategies import Instant, instants, record_of
from tests.engine_vectorized.test_source_final_vs_engine import source_definitions
from tests.engine_vectorized.test_vs_reference import canon


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
