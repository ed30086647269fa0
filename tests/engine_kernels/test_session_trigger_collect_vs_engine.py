"""Differential tests of ``collect`` / ``count_distinct`` in the compiled session engine with
triggers (early, on time, late; accumulating and retracting; global watermark) against the
general engine: the same replay lines (panes of merged sessions, their retractions), and after
every arrival unit the same snapshot and observations, across a snapshot/restore and from a
general engine's state."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine.kernels import qualification_problems
from tests.engine_kernels.strategies import triggered_session_definitions
from tests.engine_kernels.test_session_collect_vs_engine import (
    MIXED,
    SETTINGS,
    SIDE_AGGS,
    mixed_logs,
)
from tests.engine_kernels.test_session_vs_engine import (
    check_general_state_resumes,
    check_replay_lines,
    check_state_and_observations,
    units,
)


@st.composite
def triggered_collect_definitions(draw: st.DrawFn) -> Definition:
    base = draw(triggered_session_definitions())
    side = draw(st.lists(st.sampled_from(SIDE_AGGS), min_size=1, max_size=2,
                         unique_by=lambda a: a.name))
    others = [a for a in base.aggregations if a.fn in ("count", "first", "last")]
    defn = replace(base, aggregations=(*side, *others))
    if defn.accumulation == "discarding":
        defn = replace(defn, accumulation=draw(st.sampled_from(["accumulating", "retracting"])))
    return defn


def _runs_compiled(defn: Definition) -> bool:
    return not qualification_problems(defn)


DEFNS = triggered_collect_definitions().filter(_runs_compiled)


@SETTINGS
@given(defn=DEFNS, log=mixed_logs(), arrival=st.sampled_from(["record", "batch", "batch:3"]))
def test_replay_lines_are_the_general_engines(
    defn: Definition, log: list[dict[str, Any]], arrival: str
) -> None:
    check_replay_lines(defn, log, arrival)


@SETTINGS
@given(defn=DEFNS, us=units(MIXED), external=st.booleans(), data=st.data())
def test_state_and_observations_match_after_every_unit(
    defn: Definition, us: list[Any], external: bool, data: st.DataObject
) -> None:
    check_state_and_observations(defn, us, external, data, on_arrays=True)


@SETTINGS
@given(defn=DEFNS, us=units(MIXED), data=st.data())
def test_a_general_engine_state_resumes_on_the_kernel_engine(
    defn: Definition, us: list[Any], data: st.DataObject
) -> None:
    check_general_state_resumes(defn, us, data.draw(st.integers(0, len(us))))
