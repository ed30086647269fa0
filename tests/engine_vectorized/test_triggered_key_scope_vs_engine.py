"""``watermark.scope: key`` on the compiled triggered engine. Under a source's watermark or the
processing clock the general engine keeps one watermark for all keys whatever the scope, so
the compiled engine runs those exactly: the same panes, late lines, counts and observations
after every unit, across a snapshot/restore. Per-key bounded watermarks with collect /
count_distinct are refused, naming the field."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine import make_engine
from jobs.engine.engine import Engine
from jobs.engine.vectorized.triggered import TriggeredEngine, triggered_problems
from jobs.engine.vectorized.triggered_qualify import SIDE_FNS
from tests.engine_vectorized.strategies import Instant, instants
from tests.engine_vectorized.test_triggered_key_clock_vs_engine import (
    SETTINGS,
    _clocked,
    _sourced,
    check_same_as_general,
)
from tests.engine_vectorized.test_triggered_vs_engine import triggered_definitions


def _key_scoped(defn: Definition) -> Definition:
    return dataclasses.replace(defn, watermark=dataclasses.replace(defn.watermark, scope="key"))


@SETTINGS
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_key_scope_under_a_source_watermark_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    kdefn = _key_scoped(_sourced(defn))
    assert isinstance(make_engine(kdefn), TriggeredEngine)
    check_same_as_general(kdefn, insts, data, marks_in=(-30, 150))


@SETTINGS
@given(defn=triggered_definitions(), insts=instants(), data=st.data())
def test_key_scope_on_the_processing_clock_matches_general_engine(
    defn: Definition, insts: list[Instant], data: st.DataObject
) -> None:
    kdefn = _key_scoped(_clocked(defn))
    assert isinstance(make_engine(kdefn), TriggeredEngine)
    check_same_as_general(kdefn, insts, data)


@SETTINGS
@given(defn=triggered_definitions())
def test_bounded_key_scope_with_a_side_table_is_refused_naming_the_field(
    defn: Definition
) -> None:
    """Per-key bounded watermarks run compiled (``test_triggered_key_bounded_vs_engine.py``)
    except with collect / count_distinct, refused naming the aggregation."""
    kdefn = _key_scoped(defn)
    side = [a.name for a in kdefn.aggregations if a.fn in SIDE_FNS]
    problems = triggered_problems(kdefn)
    assert [p.split(":")[0] for p in problems] == [f"aggregations.{n}" for n in side]
    assert isinstance(make_engine(kdefn), Engine if side else TriggeredEngine)
