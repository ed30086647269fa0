"""With nothing expired, the final panes are the oracle's windows, whatever the arrival order.

Spec (docs/semantics.md): windows are defined by event time alone, so once every record
is in (an infinite watermark delay, or one arrival instant, then end of input) the `emit: final`
pane of every window must hold exactly the records the window definition assigns to it —
independent of the order the records arrived in and of how arrivals were grouped into instants.
The brute-force oracle (tests/properties/oracle.py) computes those windows from scratch.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition

from .drive import (
    Instant,
    Rec,
    arrivals,
    definition,
    oracle_records,
    panes,
    records,
    run,
    window_id,
    windows,
)
from .oracle import OracleWindow, final_windows

SETTINGS = settings(max_examples=60, deadline=None)


def same_value(expected: Any, actual: Any) -> bool:
    if isinstance(expected, float) or isinstance(actual, float):
        return (
            isinstance(expected, float) and isinstance(actual, float)
            and math.isclose(expected, actual, rel_tol=1e-9)
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual) and type(expected) is type(actual)


def assert_final_panes_match(
    defn: Definition, instants: list[Instant], out: list[dict[str, Any]]
) -> None:
    """Exactly one ON_TIME final pane per window, nothing late, values equal to the oracle's."""
    got = panes(out)
    assert [o for o in out if o["type"] != "pane"] == [], "nothing may be late here"
    for p in got:
        assert (p["timing"], p["is_last"], p["retraction"], p["pane_index"]) == (
            "ON_TIME", True, False, 0,
        ), f"emit final: one ON_TIME final pane per window, got {p}"
    counts = Counter(window_id(p) for p in got)
    assert all(c == 1 for c in counts.values()), f"a window emitted twice: {counts}"

    expected = final_windows(defn, oracle_records(instants, defn.uses_processing_time))
    want = {(json.dumps(w.key), w.start, w.end): w for w in expected}
    have = {window_id(p): p for p in got}
    assert sorted(have, key=repr) == sorted(want, key=repr), "windows differ from the oracle"
    bounds = defn.window.type in ("session", "sliding")
    for ident, w in want.items():
        p = have[ident]
        _check_values(ident, w, p)
        if bounds:
            assert (p["first_event_time"], p["last_event_time"]) == (
                w.first_event_time, w.last_event_time,
            ), ident


def _check_values(ident: object, w: OracleWindow, p: dict[str, Any]) -> None:
    assert set(p["values"]) == set(w.values), ident
    for name, v in w.values.items():
        assert same_value(v, p["values"][name]), (ident, name, v, p["values"][name])


@SETTINGS
@given(data=st.data())
def test_infinite_delay_any_order_any_split_equals_oracle(data: st.DataObject) -> None:
    recs = data.draw(records())
    window = data.draw(windows())
    instants = data.draw(arrivals(recs))
    defn = definition(window, delay="infinite", scope=data.draw(st.sampled_from(["global", "key"])))
    assert_final_panes_match(defn, instants, run(defn, instants))


@SETTINGS
@given(data=st.data())
def test_one_instant_with_zero_delay_equals_oracle(data: st.DataObject) -> None:
    """Everything in one arrival instant: nothing is late even with delay 0 (architecture.md)."""
    recs = data.draw(records())
    window = data.draw(windows())
    order = data.draw(st.permutations(recs))
    defn = definition(window, delay=0)
    instants: list[Instant] = [(1000, list(order))]
    assert_final_panes_match(defn, instants, run(defn, instants))


@SETTINGS
@given(data=st.data())
def test_late_but_never_expired_still_equals_oracle(data: st.DataObject) -> None:
    """Delay 0 makes out-of-order records late; infinite allowed lateness keeps every window
    open until the end, so every late record is accepted and the finals are unchanged."""
    recs = data.draw(records())
    window = data.draw(windows())
    instants = data.draw(arrivals(recs))
    defn = definition(window, delay=0, lateness="infinite")
    assert_final_panes_match(defn, instants, run(defn, instants))


@SETTINGS
@given(data=st.data())
def test_order_insensitive_aggregates_identical_for_every_arrival(data: st.DataObject) -> None:
    """Two arbitrary arrivals of the same records give identical final panes (as JSON, in the
    same order), for the aggregations that do not break ties by arrival."""
    recs = data.draw(records())
    window = data.draw(windows())
    first = data.draw(arrivals(recs))
    second = data.draw(arrivals(recs))
    aggs = [{"name": "n", "fn": "count"}] + [
        {"name": fn, "fn": fn, "of": "x"}
        for fn in ("count", "sum", "min", "max", "mean", "count_distinct")
    ]
    defn = definition(window, delay="infinite", aggregations=aggs)
    keep = ("key", "window_start", "window_end", "timing", "values", "first_event_time",
            "last_event_time")

    def shape(instants: list[Instant]) -> list[dict[str, Any]]:
        return [{k: p.get(k) for k in keep} for p in panes(run(defn, instants))]

    assert shape(first) == shape(second)


@settings(max_examples=40, deadline=None)  # the fast path is slow on tiny batches
@given(data=st.data())
def test_vectorized_engine_equals_oracle(data: st.DataObject) -> None:
    """The vectorized fast path (fixed/global windows, emit final, columnar aggregates) must
    give the same finals as the oracle."""
    recs = data.draw(records())
    window = data.draw(windows(types=("tumbling", "hopping", "global")))
    instants = data.draw(arrivals(recs))
    aggs = [{"name": "n", "fn": "count"}] + [
        {"name": f"x_{fn}", "fn": fn, "of": "x"} for fn in ("count", "sum", "min", "max", "mean")
    ]
    defn = definition(window, delay="infinite", aggregations=aggs)
    assert_final_panes_match(defn, instants, run(defn, instants, kind="vectorized"))


@SETTINGS
@given(recs=records(max_size=12, t_max=60), size=st.integers(1, 20))
def test_kip450_distinct_sets_at_most_2n_per_key(recs: list[Rec], size: int) -> None:
    """KIP-450: every emitted sliding window is a distinct record set of some interval
    [s, s+size], reported at the smallest such s, and a key with n records has at most 2n."""
    defn = definition({"type": "sliding", "size": size}, delay="infinite")
    instants: list[Instant] = [(1000 * (i + 1), [r]) for i, r in enumerate(recs)]
    got = panes(run(defn, instants))
    by_id = {r.id: r for r in recs}
    sets_seen: set[tuple[str, frozenset[int]]] = set()
    per_key: Counter[str] = Counter()
    for p in got:
        s, e = p["window_start"], p["window_end"]
        assert e - s == size, p
        members = frozenset(p["values"]["ids"])
        key_recs = [r for r in recs if r.key == p["key"]]
        # the pane holds exactly the key's records inside [s, e]
        assert members == {r.id for r in key_recs if s <= r.t <= e}, p
        assert members, "no empty sliding windows"
        # the smallest s showing this set: one ms earlier the set differs
        assert {r.id for r in key_recs if s - 1 <= r.t <= e - 1} != members, p
        ident = (json.dumps(p["key"]), members)
        assert ident not in sets_seen, f"record set reported twice: {p}"
        sets_seen.add(ident)
        per_key[json.dumps(p["key"])] += 1
        assert all(by_id[i].key == p["key"] for i in members)
    for key, count in per_key.items():
        n = sum(1 for r in recs if json.dumps(r.key) == key)
        assert count <= 2 * n, (key, count, n)


@SETTINGS
@given(data=st.data())
def test_source_watermark_with_infinite_lateness_equals_oracle(data: st.DataObject) -> None:
    """`strategy: source`: watermarks arrive as control input at arbitrary points (even going
    back, which must be ignored); with infinite allowed lateness nothing expires before end of
    input, so the finals are still the oracle's."""
    recs = data.draw(records())
    window = data.draw(windows())
    instants = data.draw(arrivals(recs))
    marks = [data.draw(st.one_of(st.none(), st.integers(-5, 60))) for _ in instants]
    defn = definition(window, strategy="source", lateness="infinite")
    assert_final_panes_match(defn, instants, run(defn, instants, watermarks=marks))


@SETTINGS
@given(data=st.data())
def test_processing_clock_windows_arrivals(data: st.DataObject) -> None:
    """`event_time: processing`: a record's event time is its arrival time and the watermark is
    processing time, so nothing is ever late and the windows are the oracle's over arrival
    times (the records' own `t` is ignored)."""
    recs = data.draw(records())
    window = data.draw(windows())
    instants = [(7 * (i + 1), rs) for i, (_, rs) in enumerate(data.draw(arrivals(recs)))]
    defn = definition(window, event_time="processing")
    assert_final_panes_match(defn, instants, run(defn, instants))
