"""Differential test: the sliding trigger engine groups a unit's records by key in bulk (key
codes), so keys that are one JSON key in different Python forms (numpy and Python scalars)
must still be one key, and keys JSON tells apart (``1``, ``1.0``, ``true``, ``0.0``,
``-0.0``) must stay apart: the same lines and observations as the general engine."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine import Engine
from jobs.engine.kernels import SlidingTriggerEngine
from tests.engine_kernels.test_session_vs_engine import _run
from tests.engine_kernels.test_sliding_key_triggers_vs_engine import KEYED_SIDE
from tests.engine_kernels.test_sliding_triggers_vs_engine import triggered_sliding_definitions

MIXED_KEYS: list[Any] = [1, np.int64(1), 1.0, np.float64(1.0), True, np.bool_(True), 0.0,
                         -0.0, np.float64(-0.0), "a", np.str_("a"), None]


@st.composite
def mixed_key_units(draw: st.DrawFn) -> list[Any]:
    out = []
    pt, base = 0, 0
    for _ in range(draw(st.integers(1, 4))):
        pt += draw(st.integers(0, 20))
        rows = draw(st.lists(st.tuples(st.sampled_from(MIXED_KEYS),
                                       st.integers(base - 20, base + 20), st.integers(0, 9)),
                             max_size=16))
        base += draw(st.integers(0, 15))
        out.append((pt, rows))
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=triggered_sliding_definitions(), us=mixed_key_units())
def test_keys_in_any_python_form_are_the_general_engines(defn: Definition, us: list[Any]
                                                          ) -> None:
    eng = SlidingTriggerEngine(defn)
    k_out, k_seen = _run(eng, defn, us, False, None, None)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert eng.general is None


@st.composite
def many_key_units(draw: st.DrawFn) -> list[Any]:
    """Units of many keys with a record or two each (one kernel pass runs them all), keys
    coming back in later units with their state, now and then a late record."""
    out = []
    pt, base = 0, 0
    for _ in range(draw(st.integers(1, 4))):
        pt += draw(st.integers(0, 20))
        rows = draw(st.lists(st.tuples(st.sampled_from([f"k{i}" for i in range(30)]),
                                       st.integers(base - 25, base + 20), st.integers(0, 9)),
                             min_size=10, max_size=40))
        base += draw(st.integers(0, 30))
        out.append((pt, rows))
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defn=st.one_of(triggered_sliding_definitions(), KEYED_SIDE), us=many_key_units())
def test_many_keys_in_one_pass_are_the_general_engines(defn: Definition, us: list[Any]
                                                       ) -> None:
    """Each key's state is its slice of the unit's pass (and of the closing firing's): lines,
    observations after every unit and a restored snapshot match the general engine."""
    eng = SlidingTriggerEngine(defn)
    k_out, k_seen = _run(eng, defn, us, False, len(us) // 2,
                         lambda s: SlidingTriggerEngine(defn, state=s))
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
