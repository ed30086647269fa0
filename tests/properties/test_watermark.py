"""Which records are late is decided by the watermark of docs/semantics.md, recomputed here
independently.

docs/semantics.md "Watermark" + "Lateness" (event basis): a record is late iff its event time is before
the watermark as it stood before its arrival instant (docs/architecture.md), and then it joins
no window and is reported `before_watermark`. The watermark is recomputed here from the
document's words alone:
- bounded: max event time seen - delay, never going back; per key under `scope: key`;
- `idle_advance` (Bytewax EventClock): wm = base + (now - processing time the base was
  accepted at); an instant's candidate (its max event time - delay) becomes the new base only
  if it is ahead of the current watermark; evaluated whenever processing time advances.
Processing times advance by random small steps so that idle advance matters.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from .drive import Instant, Rec, definition, records, run, windows
from .oracle import fixed_starts

SETTINGS = settings(max_examples=80, deadline=None)


class _Clock:
    """The watermark of docs/semantics.md for one scope (the whole job, or one key)."""

    def __init__(self, delay: int, idle: bool) -> None:
        self.delay = delay
        self.idle = idle
        self.wm: int | None = None
        self.base: int | None = None
        self.base_pt: int | None = None

    def at(self, now: int) -> None:
        if self.idle and self.base is not None and self.base_pt is not None:
            self.wm = self.base + (now - self.base_pt)

    def seen(self, max_t: int, now: int) -> None:
        candidate = max_t - self.delay
        if self.idle:
            if self.wm is None or candidate > self.wm:
                self.base, self.base_pt, self.wm = candidate, now, candidate
        elif self.wm is None or candidate > self.wm:
            self.wm = candidate


def watermark_before(
    instants: list[Instant], delay: int, idle: bool, per_key: bool
) -> dict[int, int | None]:
    """Record id -> the watermark the record is judged against: under the global scope the
    one before its arrival unit; under per-key scope its key's, as the key's earlier records
    (in the same unit too) left it (docs/semantics.md, "Arrival model")."""
    clocks: dict[str, _Clock] = {}

    def clock(key: Any) -> _Clock:
        token = json.dumps(key) if per_key else "*"
        if token not in clocks:
            clocks[token] = _Clock(delay, idle)
        return clocks[token]

    before: dict[int, int | None] = {}
    for pt, recs in instants:
        for c in clocks.values():
            c.at(pt)
        if per_key:
            for r in recs:
                before[r.id] = clock(r.key).wm
                clock(r.key).seen(r.t, pt)
            continue
        before.update({r.id: clock(r.key).wm for r in recs})
        clock("*").seen(max(r.t for r in recs), pt)
    return before


def expected_late(
    instants: list[Instant], delay: int, idle: bool, per_key: bool
) -> set[int]:
    before = watermark_before(instants, delay, idle, per_key)
    return {
        r.id for _, rs in instants for r in rs
        if (wm := before[r.id]) is not None and r.t < wm
    }


@st.composite
def timed_arrivals(draw: st.DrawFn, recs: list[Rec]) -> list[Instant]:
    order = draw(st.permutations(recs))
    out: list[Instant] = []
    pt = 0
    current: list[Rec] = []
    for i, r in enumerate(order):
        current.append(r)
        if i == len(order) - 1 or draw(st.booleans()):
            pt += draw(st.integers(1, 15))
            out.append((pt, current))
            current = []
    return out


@SETTINGS
@given(data=st.data())
def test_event_basis_late_records_are_exactly_those_before_the_watermark(
    data: st.DataObject,
) -> None:
    recs = data.draw(records(max_size=10, t_max=40))
    instants = data.draw(timed_arrivals(recs))
    delay = data.draw(st.integers(0, 10))
    idle = data.draw(st.booleans())
    scope = data.draw(st.sampled_from(["global", "key"]))
    defn = definition(
        data.draw(windows()), delay=delay, lateness="infinite", basis="event", scope=scope,
        idle_advance=idle,
    )
    out = run(defn, instants)
    reported = {o["record"]["id"] for o in out if o["type"] == "late"}
    assert all(o["reason"] == "before_watermark" for o in out if o["type"] == "late")
    assert reported == expected_late(instants, delay, idle, scope == "key")
    held = {i for o in out if o["type"] == "pane" for i in o["values"]["ids"]}
    assert held == {r.id for r in recs} - reported, "an on-time record is missing from panes"


@SETTINGS
@given(data=st.data())
def test_window_basis_drops_exactly_the_expired_record_window_pairs(data: st.DataObject) -> None:
    """Window basis, fixed windows: a (record, window) pair is dropped iff the watermark before
    the record's instant had reached end + allowed_lateness; every other pair is in the
    window's panes (late-but-not-expired records are accepted)."""
    recs = data.draw(records(max_size=10, t_max=40))
    instants = data.draw(timed_arrivals(recs))
    delay = data.draw(st.integers(0, 10))
    lateness = data.draw(st.integers(0, 10))
    idle = data.draw(st.booleans())
    scope = data.draw(st.sampled_from(["global", "key"]))
    window = data.draw(windows(types=("tumbling", "hopping")))
    triggers: list[dict[str, Any]] = [
        {"emit": "final"}, {"emit": "current"},
        {"emit": "custom", "early": {"count": 1}, "on_time": True, "late": {"count": 1}},
    ]
    trigger = data.draw(st.sampled_from(triggers))
    defn = definition(window, delay=delay, lateness=lateness, scope=scope, idle_advance=idle,
                      trigger=trigger)
    out = run(defn, instants)
    before = watermark_before(instants, delay, idle, scope == "key")
    size = defn.window.size
    assert size is not None
    dropped = {(o["record"]["id"], o["window_start"]) for o in out if o["type"] == "late"}
    held = {(i, o["window_start"]) for o in out if o["type"] == "pane" for i in o["values"]["ids"]}
    want_dropped = set()
    want_held = set()
    for _, rs in instants:
        for r in rs:
            wm0 = before[r.id]
            for s in fixed_starts(defn.window, r.t):
                if wm0 is not None and wm0 >= s + size + lateness:
                    want_dropped.add((r.id, s))
                else:
                    want_held.add((r.id, s))
    assert dropped == want_dropped
    assert held == want_held


@SETTINGS
@given(data=st.data())
def test_final_panes_fire_at_the_first_moment_the_watermark_allows(data: st.DataObject) -> None:
    """`emit: final`, fixed windows: a window's single pane comes at the first moment its
    watermark reaches end + allowed lateness - either after an instant's records or, with idle
    advance, at a processing-time advance alone ("panes it releases carry that processing time
    as emitted_at") - and carries that watermark; windows never released that way close at end
    of input with watermark null."""
    recs = data.draw(records(max_size=10, t_max=40))
    instants = data.draw(timed_arrivals(recs))
    delay = data.draw(st.integers(0, 10))
    lateness = data.draw(st.integers(0, 10))
    idle = data.draw(st.booleans())
    per_key = data.draw(st.booleans())
    window = data.draw(windows(types=("tumbling", "hopping")))
    defn = definition(window, delay=delay, lateness=lateness, idle_advance=idle,
                      scope="key" if per_key else "global")
    size = defn.window.size
    assert size is not None

    clocks: dict[str, _Clock] = {}

    def clock(key: str) -> _Clock:
        return clocks.setdefault(key if per_key else "*", _Clock(delay, idle))

    open_: dict[tuple[str, int], list[int]] = {}
    want: dict[tuple[str, int], tuple[int, int | None, list[int]]] = {}

    def release(pt: int) -> None:
        for (key, s), ids in list(open_.items()):
            wm = clock(key).wm
            if wm is not None and wm >= s + size + lateness:
                want[(key, s)] = (pt, wm, sorted(ids))
                del open_[(key, s)]

    for pt, rs in instants:
        for c in clocks.values():
            c.at(pt)
        release(pt)
        for r in rs:  # one at a time; per key, each record moves its key's watermark
            key = json.dumps(r.key)
            wm0 = clock(key).wm
            for s in fixed_starts(defn.window, r.t):
                if (key, s) in want or (wm0 is not None and wm0 >= s + size + lateness):
                    continue  # expired: dropped (checked elsewhere)
                open_.setdefault((key, s), []).append(r.id)
            if per_key:
                clock(key).seen(r.t, pt)
                release(pt)
        if not per_key:
            clock("*").seen(max(r.t for r in rs), pt)
            release(pt)
    last_pt = instants[-1][0]
    for (key, s), ids in open_.items():
        want[(key, s)] = (last_pt, None, sorted(ids))

    got = {
        (json.dumps(p["key"]), p["window_start"]): (
            p["emitted_at"], p["watermark"], sorted(p["values"]["ids"])
        )
        for p in run(defn, instants) if p["type"] == "pane"
    }
    assert got == want
