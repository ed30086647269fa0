"""The order of records inside one arrival instant does not matter.

docs/architecture.md ("Arrival instants"): records arriving at the same processing time are
applied together, lateness judged against the watermark from before the instant, which "makes
the result independent of the order of records inside one instant"; docs/semantics.md repeats
it (except ties in first/last/collect, which follow arrival order by definition). So permuting
the records inside instants must give the same panes and the same late lines, compared with
order-insensitive aggregates (the record ids are compared as sets), with bounded delay and
allowed lateness so that some records are late and some dropped.
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
]


def canonical(out: list[dict[str, Any]]) -> Counter[str]:
    """Output lines as a multiset, ids sorted (their order in a collect follows arrival for
    equal event times, which the permutation may legitimately change)."""
    lines = []
    for o in out:
        o = dict(o)
        if o["type"] == "pane":
            o["values"] = {**o["values"], "ids": sorted(o["values"]["ids"])}
        lines.append(json.dumps(o, sort_keys=True))
    return Counter(lines)


def _check(defn: Any, instants: list[Instant], shuffled: list[Instant]) -> None:
    a, b = run(defn, instants), run(defn, shuffled)
    assert canonical(a) == canonical(b), (
        "output depends on the order inside an instant:\n"
        + "\n".join(sorted(set(canonical(a)) ^ set(canonical(b))))
    )


@SETTINGS
@given(data=st.data())
def test_order_inside_instants_is_irrelevant(data: st.DataObject) -> None:
    recs = data.draw(records(max_size=10, t_max=40))
    window = data.draw(windows())
    instants = data.draw(arrivals(recs))
    shuffled = [(pt, list(data.draw(st.permutations(rs)))) for pt, rs in instants]
    defn = definition(
        window,
        delay=data.draw(st.integers(0, 8)),
        lateness=data.draw(st.integers(0, 12)),
        trigger=data.draw(st.sampled_from(TRIGGERS)),
        accumulation=data.draw(st.sampled_from(["accumulating", "discarding", "retracting"])),
        basis=data.draw(st.sampled_from(["window", "event"])),
        aggregations=AGGS,
    )
    _check(defn, instants, shuffled)


def test_session_expired_proto_window_bridged_by_a_record_of_the_same_instant() -> None:
    """Watermark 20 (gap 10, no allowed lateness). One instant brings 15 (its proto-window
    [15,25) is live) and 10 (its proto-window [10,20) alone has expired, but it overlaps
    [15,25)). Whichever comes first in the instant, 10 must be treated the same way."""
    defn = definition({"type": "session", "gap": 10}, delay=0, lateness=0, aggregations=AGGS)
    first: list[Instant] = [(1000, [Rec(0, "k", 20, 1)])]
    _check(
        defn,
        [*first, (2000, [Rec(1, "k", 10, 1), Rec(2, "k", 15, 1)])],
        [*first, (2000, [Rec(2, "k", 15, 1), Rec(1, "k", 10, 1)])],
    )


def test_sliding_late_lines_see_windows_of_records_of_the_same_instant() -> None:
    """Size 1, no allowed lateness. The 2 sets the watermark to 2. One instant then brings 0
    and 1: 1 joins the live [1,2]; 0 would have joined [-1,0] and [0,1] (the window ending at
    the 1 of its own instant), both expired, so it gets two late lines whatever the order."""
    defn = definition({"type": "sliding", "size": 1}, delay=0, lateness=0, aggregations=AGGS)
    first: list[Instant] = [(1000, [Rec(0, "k", 2, 1)])]
    _check(
        defn,
        [*first, (2000, [Rec(1, "k", 0, 1), Rec(2, "k", 1, 1)])],
        [*first, (2000, [Rec(2, "k", 1, 1), Rec(1, "k", 0, 1)])],
    )
