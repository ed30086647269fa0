"""``watermark.scope: key`` on the compiled triggered engine. Under a source's watermark or the
processing clock the general engine keeps one watermark for all keys whatever the scope, so
the compiled engine runs those exactly: the same panes, late lines, counts and observations
after every unit, across a snapshot/restore. Per-key bounded watermarks run compiled, collect /
count_distinct included."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine import make_engine
from jobs.engine.vectorized.triggered import TriggeredEngine, triggered_problems
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
def test_bounded_key_scope_runs_compiled_with_or_without_a_side_table(
    defn: Definition
) -> None:
    """Per-key bounded watermarks run compiled (``test_triggered_key_bounded_vs_engine.py``),
    collect / count_distinct too (``test_triggered_key_collect_vs_engine.py``)."""
    kdefn = _key_scoped(defn)
    assert triggered_problems(kdefn) == []
    assert isinstance(make_engine(kdefn), TriggeredEngine)
