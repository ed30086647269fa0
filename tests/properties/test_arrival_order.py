"""What the result may and may not depend on, in the arrival model (docs/semantics.md,
"Arrival model"): within a key, records apply one at a time in arrival order; the global
watermark moves once per arrival unit.

- The interleaving of *different* keys inside a unit never changes what any key emits.
- Under ``scope: key`` a plain log (one record a unit) may interleave keys in any way: every
  key sees only its own records and its own watermark.
- Under a global watermark, with fixed windows and triggers that count nothing, the order of
  the records inside a unit does not matter at all (every record meets the same watermark and
  nothing fires between records).
- The order of one key's records does matter, as specified (examples at the end).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from .drive import Instant, Rec, arrivals, definition, records, run, windows

SETTINGS = settings(max_examples=80, deadline=None)
AGGS = [
    {"name": "n", "fn": "count"},
    {"name": "s", "fn": "sum", "of": "x"},
    {"name": "ids", "fn": "collect", "of": "id"},
]
TRIGGERS: list[dict[str, Any]] = [
    {"emit": "final"},
    {"emit": "current"},
    {"emit": "custom", "early": {"count": 2}, "on_time": True, "late": {"count": 1}},
    {"emit": "custom", "early": {"after": 1500}, "on_time": True, "late": {"after": 1000}},
]


def per_key(out: list[dict[str, Any]]) -> dict[Any, list[str]]:
    """Each key's output lines, in their order."""
    by: dict[Any, list[str]] = {}
    for o in out:
        by.setdefault(json.dumps(o.get("key")), []).append(json.dumps(o, sort_keys=True))
    return by


def shuffle_keys(data: st.DataObject, recs: list[Rec]) -> list[Rec]:
    """Another interleaving of ``recs`` that keeps each key's records in their order."""
    slots = data.draw(st.permutations([r.key for r in recs]))
    queues: dict[Any, list[Rec]] = {}
    for r in recs:
        queues.setdefault(r.key, []).append(r)
    return [queues[k].pop(0) for k in slots]


def _defn(data: st.DataObject, window: dict[str, Any], scope: str, trigger: dict[str, Any]) -> Any:
    return definition(
        window,
        delay=data.draw(st.integers(0, 8)),
        lateness=data.draw(st.integers(0, 12)),
        trigger=trigger,
        accumulation=data.draw(st.sampled_from(["accumulating", "discarding", "retracting"])),
        basis=data.draw(st.sampled_from(["window", "event"])),
        scope=scope,
        aggregations=AGGS,
    )


@SETTINGS
@given(data=st.data())
def test_interleaving_of_keys_inside_a_unit_does_not_change_any_key(data: st.DataObject) -> None:
    recs = data.draw(records(max_size=10, t_max=40))
    units = data.draw(arrivals(recs))
    other = [(pt, shuffle_keys(data, rs)) for pt, rs in units]
    defn = _defn(data, data.draw(windows()), data.draw(st.sampled_from(["global", "key"])),
                 data.draw(st.sampled_from(TRIGGERS)))
    assert per_key(run(defn, units)) == per_key(run(defn, other))


@SETTINGS
@given(data=st.data())
def test_plain_log_under_key_scope_any_interleaving_of_keys(data: st.DataObject) -> None:
    """One record a unit, all at one processing time: keys never meet."""
    recs = data.draw(records(max_size=10, t_max=40))
    other = shuffle_keys(data, recs)
    defn = _defn(data, data.draw(windows()), "key", data.draw(st.sampled_from(TRIGGERS)))
    log = [(1000, [r]) for r in recs]
    assert per_key(run(defn, log)) == per_key(run(defn, [(1000, [r]) for r in other]))


def canonical(out: list[dict[str, Any]]) -> Counter[str]:
    """Output lines as a multiset, ids sorted (a collect lists equal event times in arrival
    order, which a permutation legitimately changes)."""
    lines = []
    for o in out:
        o = dict(o)
        if o["type"] == "pane":
            o["values"] = {**o["values"], "ids": sorted(o["values"]["ids"])}
        lines.append(json.dumps(o, sort_keys=True))
    return Counter(lines)


@SETTINGS
@given(data=st.data())
def test_order_inside_a_micro_batch_is_irrelevant_under_a_global_watermark(
    data: st.DataObject,
) -> None:
    recs = data.draw(records(max_size=10, t_max=40))
    units = data.draw(arrivals(recs))
    shuffled = [(pt, list(data.draw(st.permutations(rs)))) for pt, rs in units]
    trigger = data.draw(st.sampled_from([TRIGGERS[0], TRIGGERS[3]]))  # nothing counted
    defn = _defn(data, data.draw(windows(("tumbling", "hopping", "global"))), "global", trigger)
    assert canonical(run(defn, units)) == canonical(run(defn, shuffled))


def test_order_of_one_keys_records_matters_for_sessions() -> None:
    """Watermark 20, gap 10, no allowed lateness; one micro-batch brings 10 and 15. 10 alone
    has an expired proto-window [10,20): first in the batch it is dropped; after 15 (which
    extends [20,30) to [15,30)) it overlaps that session and joins it."""
    defn = definition({"type": "session", "gap": 10}, delay=0, lateness=0, aggregations=AGGS)
    first: list[Instant] = [(1000, [Rec(0, "k", 20, 1)])]
    dropped = run(defn, [*first, (2000, [Rec(1, "k", 10, 1), Rec(2, "k", 15, 1)])])
    joined = run(defn, [*first, (2000, [Rec(2, "k", 15, 1), Rec(1, "k", 10, 1)])])
    assert [o["type"] for o in dropped] == ["late", "pane"]
    assert dropped[-1]["values"]["ids"] == [2, 0]
    assert [o["type"] for o in joined] == ["pane"]
    assert joined[0]["values"]["ids"] == [1, 2, 0]


def test_order_of_one_keys_records_matters_for_count_triggers() -> None:
    """emit current: a pane per record, each with the values up to that record (as Quix
    ``.current()``), even when the records arrive in one micro-batch."""
    defn = definition({"type": "tumbling", "size": 100}, delay=0, trigger={"emit": "current"},
                      aggregations=AGGS)
    out = run(defn, [(1000, [Rec(0, "k", 5, 3), Rec(1, "k", 6, 4)])])
    assert [o["values"]["s"] for o in out] == [3, 7]
    out = run(defn, [(1000, [Rec(1, "k", 6, 4), Rec(0, "k", 5, 3)])])
    assert [o["values"]["s"] for o in out] == [4, 7]


def test_key_scope_a_record_behind_its_keys_own_watermark_is_late() -> None:
    """Per-key watermark, delay 0, event basis: within one micro-batch, 30 moves the key's
    watermark before 20 is judged, so 20 is late (Bytewax's EventClock with no wait);
    another key's 40 in the same batch changes nothing for it."""
    defn = definition({"type": "tumbling", "size": 10}, delay=0, basis="event", scope="key",
                      aggregations=AGGS)
    out = run(defn, [(1000, [Rec(0, "a", 30, 1), Rec(1, "b", 5, 1), Rec(2, "a", 20, 1),
                             Rec(3, "b", 40, 1)])])
    late = [(o["key"], o["event_time"]) for o in out if o["type"] == "late"]
    assert late == [("a", 20)]
