"""When early panes fire, recomputed from docs/semantics.md's trigger rules (docs/semantics.md "Triggers").

With the watermark never passing (infinite delay), only early firings happen before end of
input, so each window's EARLY panes can be predicted from arrivals alone:
- `{after: D}`: D of processing time after the first element of the pane;
- `{every: D, align_to: T}`: at the first boundary T + k*D after the first element (strictly
  after it: docs/semantics.md);
- `{count: N}`: when the pane has N elements (checked once per arrival instant:
  docs/semantics.md);
- processing-time timers due at or before a new processing time fire before the records that
  arrive at that time are applied, and carry that processing time as `emitted_at`.
Accumulating mode, so each EARLY pane holds every record the window has seen so far.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition

from .drive import Instant, Rec, definition, panes, records, run, windows
from .oracle import fixed_starts

SETTINGS = settings(max_examples=80, deadline=None)

WindowId = tuple[str, int | None, int | None]


def window_ids(defn: Definition, r: Rec) -> list[WindowId]:
    key = json.dumps(r.key)
    w = defn.window
    if w.type == "global":
        return [(key, None, None)]
    assert w.size is not None
    return [(key, s, s + w.size) for s in fixed_starts(w, r.t)]


def predicted_early(
    defn: Definition, instants: list[Instant], early: dict[str, Any]
) -> dict[WindowId, list[tuple[int, list[int]]]]:
    """Window -> [(emitted_at, ids)] of its EARLY panes, by docs/semantics.md's rules."""
    seen: dict[WindowId, list[int]] = defaultdict(list)
    pending: dict[WindowId, int] = defaultdict(int)
    timer: dict[WindowId, int] = {}
    out: dict[WindowId, list[tuple[int, list[int]]]] = defaultdict(list)
    for pt, recs in instants:
        for wid, due in sorted(timer.items(), key=repr):
            if due <= pt:
                out[wid].append((pt, sorted(seen[wid])))
                pending[wid] = 0
                del timer[wid]
        for r in recs:
            for wid in window_ids(defn, r):
                if pending[wid] == 0 and "count" not in early:
                    if "after" in early:
                        timer[wid] = pt + early["after"]
                    else:
                        d, t0 = early["every"], early.get("align_to", 0)
                        timer[wid] = t0 + ((pt - t0) // d + 1) * d
                pending[wid] += 1
                seen[wid].append(r.id)
                # a count is checked after each record of the key (records apply one at a
                # time, docs/semantics.md "Arrival model")
                if "count" in early and pending[wid] >= early["count"]:
                    out[wid].append((pt, sorted(seen[wid])))
                    pending[wid] = 0
    return out


@st.composite
def spaced_instants(draw: st.DrawFn, recs: list[Rec]) -> list[Instant]:
    order = draw(st.permutations(recs))
    out: list[Instant] = []
    pt = draw(st.integers(0, 30))
    current: list[Rec] = []
    for i, r in enumerate(order):
        current.append(r)
        if i == len(order) - 1 or draw(st.booleans()):
            out.append((pt, current))
            pt += draw(st.integers(1, 25))
            current = []
    return out


EARLY = st.one_of(
    st.builds(lambda d: {"after": d}, st.integers(1, 30)),
    st.builds(lambda d, a: {"every": d, "align_to": a}, st.integers(1, 30), st.integers(-20, 20)),
    st.builds(lambda n: {"count": n}, st.integers(1, 4)),
)


@SETTINGS
@given(data=st.data())
def test_early_panes_fire_when_the_spec_says(data: st.DataObject) -> None:
    recs = data.draw(records(max_size=10, t_max=40))
    window = data.draw(windows(types=("tumbling", "hopping", "global")))
    instants = data.draw(spaced_instants(recs))
    early = data.draw(EARLY)
    defn = definition(
        window, delay="infinite", lateness="infinite",
        trigger={"emit": "custom", "early": early, "on_time": True, "late": {"count": 1}},
    )
    out = run(defn, instants)
    got: dict[WindowId, list[tuple[int, list[int]]]] = defaultdict(list)
    for p in panes(out):
        if p["timing"] == "EARLY":
            wid = (json.dumps(p["key"]), p["window_start"], p["window_end"])
            got[wid].append((p["emitted_at"], sorted(p["values"]["ids"])))
    want = predicted_early(defn, instants, early)
    assert dict(got) == {k: v for k, v in want.items() if v}
    # and pane indexes count up from 0 per window, EARLY ones first
    by_window: dict[WindowId, list[dict[str, Any]]] = defaultdict(list)
    for p in panes(out):
        by_window[(json.dumps(p["key"]), p["window_start"], p["window_end"])].append(p)
    for ps in by_window.values():
        assert [p["pane_index"] for p in ps] == list(range(len(ps)))
        assert [p["is_first"] for p in ps] == [True] + [False] * (len(ps) - 1)


@SETTINGS
@given(data=st.data())
def test_emit_current_one_pane_per_record_and_window(data: st.DataObject) -> None:
    """`emit: current` (Quix `.current()`): every record added to a window yields exactly one
    pane of that window, right after it, holding everything accepted so far; EARLY while the
    watermark the record met (the one before its arrival unit) has not reached the window end,
    LATE after; the pane's `watermark` field is that watermark; nothing else is ever emitted
    (no on-time pane, nothing at expiry or end of input). The watermark and expiry are
    recomputed here: max event time - delay, moved once per unit; a (record, window) pair is
    dropped once the watermark before the unit reached end + allowed lateness."""
    recs = data.draw(records(max_size=10, t_max=40))
    window = data.draw(windows(types=("tumbling", "hopping")))
    instants = data.draw(spaced_instants(recs))
    delay, lateness = data.draw(st.integers(0, 10)), data.draw(st.integers(0, 10))
    defn = definition(window, delay=delay, lateness=lateness, trigger={"emit": "current"})
    size = defn.window.size
    assert size is not None
    want: list[tuple[int, WindowId, str, list[int], int | None]] = []
    held: dict[WindowId, list[int]] = defaultdict(list)
    max_t: int | None = None
    for pt, rs in instants:
        wm0 = None if max_t is None else max_t - delay
        for r in rs:
            for wid in window_ids(defn, r):
                end = wid[2]
                assert end is not None
                if wm0 is None or wm0 < end + lateness:
                    held[wid].append(r.id)
                    late = wm0 is not None and wm0 >= end
                    want.append((pt, wid, "LATE" if late else "EARLY", sorted(held[wid]), wm0))
        max_t = max([r.t for r in rs] + ([max_t] if max_t is not None else []))
    got = [
        (p["emitted_at"], (json.dumps(p["key"]), p["window_start"], p["window_end"]),
         p["timing"], sorted(p["values"]["ids"]), p["watermark"])
        for p in panes(run(defn, instants))
    ]
    assert sorted(got, key=repr) == sorted(want, key=repr)
