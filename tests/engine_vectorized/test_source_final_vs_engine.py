"""``emit: final`` under ``watermark.strategy: source`` on the vectorized final engine: records
never move the watermark, ``advance_watermark`` does; output, late counts and open windows must
be the general engine's, across snapshot/restore, clock ticks and either host mode."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Aggregation, Definition, Trigger, Watermark, Window
from jobs.engine import make_engine
from jobs.engine.vectorized import VectorizedEngine, qualifies
from tests.engine_vectorized.strategies import Instant, definitions, instants
from tests.engine_vectorized.test_idle_advance_vs_engine import run
from tests.engine_vectorized.test_vs_reference import batch_of

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def source_definitions(draw: st.DrawFn) -> Definition:
    base = draw(definitions())
    return dataclasses.replace(base, watermark=Watermark(strategy="source",
                                                         scope=base.watermark.scope))


@SETTINGS
@given(defn=source_definitions(), insts=instants(), data=st.data())
def test_source_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    assert qualifies(defn)
    mode = data.draw(st.sampled_from(["internal", "external"]))
    ticks = [data.draw(st.one_of(st.none(), st.integers(0, 40))) for _ in insts]
    marks = [data.draw(st.one_of(st.none(), st.integers(-30, 150))) for _ in insts]
    restore_at = data.draw(st.one_of(st.none(), st.integers(0, len(insts) - 1)))
    v = run(defn, insts, ticks, restore_at, vectorized=True, mode=mode, marks=marks)
    g = run(defn, insts, ticks, None, vectorized=False, mode=mode, marks=marks)
    assert v == g


def test_a_source_final_job_runs_on_the_vectorized_engine() -> None:
    """Records far ahead do not close a window; the source's watermark does."""
    defn = Definition(
        name="src", window=Window("tumbling", size=10), key="k", event_time="t",
        aggregations=(Aggregation("n", "count"),),
        watermark=Watermark(strategy="source"), trigger=Trigger(emit="final"),
    )
    eng = make_engine(defn)
    assert isinstance(eng, VectorizedEngine)
    assert eng.ingest(batch_of(defn, Instant(100, [("a", 5, 1), ("a", 500, 2)]))) == []
    (pane,) = eng.advance_watermark(10)
    assert (pane.window_start, pane.window_end, pane.values) == (0, 10, {"n": 1})


def test_a_spark_state_blob_resumes_either_engine_state() -> None:
    """A checkpoint written by the general engine (before source watermarks ran compiled) and
    one written by the vectorized engine both resume and fire the same panes."""
    from jobs.engine.engine import Engine
    from jobs.spark.engine_path.state_blob import encode_engine, restore_engine

    defn = Definition(
        name="src", window=Window("tumbling", size=10), key="k", event_time="t",
        aggregations=(Aggregation("n", "count"), Aggregation("xs", "collect", "x")),
        watermark=Watermark(strategy="source"), trigger=Trigger(emit="final"),
    )
    unit = Instant(100, [("a", 5, 1), ("b", 25, 2), ("a", 7, 3)])
    fired = []
    for eng in (Engine(defn, watermark="external"), VectorizedEngine(defn, watermark="external")):
        eng.ingest(batch_of(defn, unit))
        resumed = restore_engine(defn, encode_engine(eng)[0], "external")
        assert isinstance(resumed, VectorizedEngine)
        fired.append([e.to_json() for e in resumed.advance_watermark(30)])
    assert fired[0] == fired[1] and len(fired[0]) == 2
