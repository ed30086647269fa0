"""Differential tests of ``collect`` / ``count_distinct`` in the compiled session engine with
triggers (early, on time, late; every accumulation mode; global watermark) against the
general engine: the same replay lines (panes of merged sessions, their retractions), and after
every arrival unit the same snapshot and observations, across a snapshot/restore and from a
general engine's state."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, given, settings
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
from jobs.engine import Engine
from jobs.engine.kernels import SessionKernelEngine, qualification_problems
from tests.engine_kernels.strategies import triggered_session_definitions
from tests.engine_kernels.test_session_collect_vs_engine import (
    MIXED,
    SETTINGS,
    SIDE_AGGS,
    mixed_logs,
)
from tests.engine_kernels.test_session_vs_engine import (
    _batch,
    _observe,
    _run,
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
    return replace(base, aggregations=(*side, *others))


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


def _long_stream(seed: int) -> list[Any]:
    """60 units of 40 records over 6 keys on a rising time: sessions (gap 5) close behind
    the watermark all along, a tenth of the records arrive 0..60 ms behind it (some within
    the allowed lateness, some after it), values repeat (distinct counts stay small)."""
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    base = 0
    for u in range(60):
        rows = []
        for _ in range(40):
            late = rng.random() < 0.1
            t = base - int(rng.integers(0, 60)) if late else base + int(rng.integers(0, 8))
            rows.append((f"k{int(rng.integers(0, 6))}", t, int(rng.integers(0, 5))))
            base += int(rng.integers(0, 3))
        out.append((u * 10, rows))
    return out


@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 2**16), accumulation=st.sampled_from(["accumulating", "retracting"]),
       swap_at=st.integers(10, 50))
def test_entries_pruned_behind_closed_sessions_keep_the_general_engines_output(
    seed: int, accumulation: str, swap_at: int
) -> None:
    """Long enough that entries are pruned many times (sessions close, late records after
    the allowed lateness are dropped, late ones within it reopen or merge closed sessions),
    with a snapshot/restore in between: the same lines and observations as the general
    engine, on the arrays all along, and the entries kept stay bounded by the open ones."""
    defn = Definition(
        name="s", key="k", event_time="t", window=Window("session", gap=5),
        aggregations=(Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x"),
                      Aggregation("n", "count")),
        watermark=Watermark(delay=10), allowed_lateness=20, accumulation=accumulation,
        trigger=Trigger(emit="custom", early=EarlyTrigger(kind="count", count=3),
                        late=LateTrigger(kind="count", count=1)),
    )
    assert not qualification_problems(defn)
    us = _long_stream(seed)
    kernels: list[SessionKernelEngine] = []

    def restore(state: Any) -> SessionKernelEngine:
        kernels.append(SessionKernelEngine(defn, state=state))
        return kernels[-1]

    k_out, k_seen = _run(SessionKernelEngine(defn), defn, us, False, swap_at, restore)
    g_out, g_seen = _run(Engine(defn), defn, us, False, None, None)
    assert k_out == g_out
    assert k_seen == g_seen
    assert all(k.general is None for k in kernels)
    _check_entries_belong_to_open_sessions(defn, us[:swap_at])


def _check_entries_belong_to_open_sessions(defn: Definition, us: list[Any]) -> None:
    """Every collect / count_distinct entry kept lies in an open session of its key: those
    of expired sessions are gone."""
    eng = SessionKernelEngine(defn)
    for u in us:
        eng.ingest(_batch(defn, u))
    slots = np.flatnonzero(eng.used)
    for entries in eng.side.values():
        assert len(entries.key) > 0
        owner = entries.locate(eng.wkey[slots], eng.first[slots], eng.last[slots])
        assert (owner >= 0).all()


def _mixed_long_units(seed: int) -> list[Any]:
    """A long stream over 12 keys: many sessions close while later records keep coming, a
    fifth of them up to 120 ms behind (some within the allowed lateness, some beyond it),
    values mixed (ints, a string, nulls)."""
    rng = np.random.default_rng(seed)
    out: list[Any] = []
    base = 0
    for u in range(80):
        rows = []
        for _ in range(40):
            lag = int(rng.integers(0, 120)) if rng.random() < 0.2 else int(rng.integers(0, 8))
            rows.append((f"k{int(rng.integers(0, 12))}", base - lag,
                         [int(rng.integers(0, 6)), "a", None][int(rng.integers(0, 3))]))
        out.append((u * 10, rows))
        base += 15
    return out


@pytest.mark.parametrize("accumulation", ["accumulating", "retracting"])
def test_a_long_stream_with_late_records_and_a_stored_snapshot_matches(
        accumulation: str) -> None:
    """Output and observations after every unit equal the general engine's over 3,200
    records, with and without a JSON snapshot resumed by a new engine half-way."""
    defn = Definition(
        name="s", key="k", event_time="t", window=Window("session", gap=6),
        aggregations=(Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x"),
                      Aggregation("n", "count")),
        watermark=Watermark(delay=4), allowed_lateness=30, accumulation=accumulation,
        trigger=Trigger(emit="custom", early=EarlyTrigger(kind="count", count=3),
                        late=LateTrigger(kind="count", count=1)))
    assert not qualification_problems(defn)
    us = _mixed_long_units(7)
    general = Engine(defn)
    g_out, g_seen = [], []
    for u in us:
        g_out.extend(json.dumps(e.to_json(), sort_keys=True)
                     for e in general.ingest(_batch(defn, u)))
        g_seen.append(_observe(general))
    for swap_at in (None, 41):
        kernel = SessionKernelEngine(defn)
        out, seen = [], []
        for i, u in enumerate(us):
            if i == swap_at:
                kernel = SessionKernelEngine(defn, state=json.loads(json.dumps(
                    kernel.state.snapshot())))
            out.extend(json.dumps(e.to_json(), sort_keys=True)
                       for e in kernel.ingest(_batch(defn, u)))
            seen.append(_observe(kernel))
        assert kernel.general is None
        assert out == g_out
        assert seen == g_seen

