"""Late data is never silently lost (spec "Lateness").

With a bounded delay and allowed lateness, out-of-order records are late; some are accepted,
some dropped. The spec promises that "every dropped (record, window) pair goes to the late
output with the window it missed". So every record must be accounted for:
- fixed windows (tumbling, hopping, global): for every window the definition puts the record
  in, the record is in that window's panes XOR in a late line for that window;
- sessions: the record is in some pane XOR in a late line (a dropped record joins nothing);
- sliding: the record is in some pane OR in late lines; and a sliding window that was already
  open when the record arrived and still emits afterwards (so it had not expired) and whose
  interval holds the record's time must contain the record ("updates every existing window
  that contains t"; "a record arriving for a window that is late but not expired is accepted").
Every window fires a pane whenever it gains elements (early and late count 1, accumulating), so
the panes show which records each window holds and when it existed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition

from .drive import Instant, Rec, arrivals, definition, panes, records, run, windows
from .oracle import fixed_starts

SETTINGS = settings(max_examples=80, deadline=None)
TRIGGER = {"emit": "custom", "early": {"count": 1}, "on_time": True, "late": {"count": 1}}


def _setup(
    data: st.DataObject, types: tuple[str, ...], scope: str | None = None
) -> tuple[Definition, list[Instant]]:
    recs = data.draw(records(max_size=10, t_max=40))
    window = data.draw(windows(types=types))
    instants = data.draw(arrivals(recs))
    defn = definition(
        window,
        delay=data.draw(st.integers(0, 8)),
        lateness=data.draw(st.integers(0, 12)),
        trigger=TRIGGER,
        basis=data.draw(st.sampled_from(["window", "event"])),
        scope=scope or data.draw(st.sampled_from(["global", "key"])),
    )
    return defn, instants


def _accounting(
    out: list[dict[str, Any]],
) -> tuple[dict[int, set[tuple[Any, Any, Any]]], dict[int, set[tuple[Any, Any, Any]]]]:
    """record id -> windows whose panes hold it; record id -> windows of its late lines."""
    held: dict[int, set[tuple[Any, Any, Any]]] = defaultdict(set)
    dropped: dict[int, set[tuple[Any, Any, Any]]] = defaultdict(set)
    for o in out:
        w = (json.dumps(o["key"]), o["window_start"], o["window_end"])
        if o["type"] == "pane" and not o["retraction"]:
            for i in o["values"]["ids"]:
                held[i].add(w)
        elif o["type"] == "late":
            assert o["event_time"] == o["record"]["t"], o
            dropped[o["record"]["id"]].add(w)
    return held, dropped


@SETTINGS
@given(data=st.data())
def test_fixed_windows_every_record_window_pair_accounted(data: st.DataObject) -> None:
    defn, instants = _setup(data, ("tumbling", "hopping", "global"))
    out = run(defn, instants)
    held, dropped = _accounting(out)
    w = defn.window
    for _, recs in instants:
        for r in recs:
            key = json.dumps(r.key)
            mine: set[tuple[Any, Any, Any]]
            if w.type == "global":
                mine = {(key, None, None)}
            else:
                size = w.size
                assert size is not None
                mine = {(key, s, s + size) for s in fixed_starts(w, r.t)}
            for win in mine:
                inside, late = win in held[r.id], win in dropped[r.id]
                assert inside != late, (
                    f"record {r} and window {win}: in panes={inside}, in late output={late}"
                )
            assert held[r.id] | dropped[r.id] <= mine, (r, held[r.id], dropped[r.id])


@SETTINGS
@given(data=st.data())
def test_sessions_every_record_accounted(data: st.DataObject) -> None:
    defn, instants = _setup(data, ("session",))
    out = run(defn, instants)
    held, dropped = _accounting(out)
    gap = defn.window.gap
    assert gap is not None
    for _, recs in instants:
        for r in recs:
            assert bool(held[r.id]) != bool(dropped[r.id]), (r, held[r.id], dropped[r.id])
            if dropped[r.id]:
                # the window it missed is its proto-window [t, t+gap)
                assert dropped[r.id] == {(json.dumps(r.key), r.t, r.t + gap)}, dropped[r.id]


@SETTINGS
@given(data=st.data())
def test_sliding_every_record_accounted(data: st.DataObject) -> None:
    # global scope: check_sliding recomputes the (global) watermark to know what had expired
    defn, instants = _setup(data, ("sliding",), scope="global")
    check_sliding(defn, instants)


@pytest.mark.parametrize(("size", "lateness"), [(10, 5), (10, 0), (5, 2), (20, 7)])
def test_sliding_window_outliving_its_opening_record_still_accepts(
    size: int, lateness: int
) -> None:
    """The edge random data rarely hits (kip450-beyond-grace.yaml): A's windows have all
    expired, but A's right window [A+1, A+1+size] (holding C) expires 1 ms later; B arrives
    exactly then, inside that window. The window is late but not expired, so B must join it."""
    a = 2
    c = a + size - 2  # in A's right window [a+1, a+1+size]; [c-size, c] holds A too
    d = a + size + 1 + lateness  # watermark (delay 0) exactly where A is forgotten
    b = a + 3  # in A's right window; B's own window [b-size, b] has expired
    recs = [Rec(0, "k", a, 1), Rec(1, "k", c, 1), Rec(2, "k", d, 1), Rec(3, "k", b, 1)]
    instants: list[Instant] = [(1000 * (i + 1), [r]) for i, r in enumerate(recs)]
    defn = definition({"type": "sliding", "size": size}, delay=0, lateness=lateness,
                      trigger=TRIGGER)
    check_sliding(defn, instants)


def check_sliding(defn: Definition, instants: list[Instant]) -> None:
    out = run(defn, instants)
    held, dropped = _accounting(out)
    emitted: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for p in panes(out):
        emitted[(json.dumps(p["key"]), p["window_start"], p["window_end"])].append(p)
    lateness = defn.allowed_lateness
    max_t: int | None = None
    for pt, recs in instants:
        # the watermark before this instant (bounded, global scope): max time seen - delay
        wm0 = None if max_t is None else max_t - defn.watermark.delay
        for r in recs:
            assert held[r.id] or dropped[r.id], f"record {r} vanished"
            if defn.lateness_basis != "window":
                continue
            for (key, s, e), ps in emitted.items():
                if key != json.dumps(r.key) or not s <= r.t <= e:
                    continue
                existed = any(p["emitted_at"] < pt for p in ps)
                expired = wm0 is not None and wm0 >= e + 1 + lateness
                if existed and not expired:
                    assert r.id in ps[-1]["values"]["ids"], (
                        f"record {r} (arrived {pt}, watermark {wm0}) missing from the live "
                        f"window [{s}, {e}] (expires at watermark {e + 1 + lateness}): {ps}"
                    )
        batch_max = max(r.t for r in recs)
        max_t = batch_max if max_t is None else max(max_t, batch_max)


@SETTINGS
@given(data=st.data())
def test_fixed_windows_final_pane_holds_exactly_the_records_not_dropped(
    data: st.DataObject,
) -> None:
    """`emit: final` with a bounded delay and finite allowed lateness: every window that got
    any record emits exactly one ON_TIME, is_last pane, and it holds exactly the records the
    window definition assigns to it minus those reported late for it."""
    recs = data.draw(records(max_size=10, t_max=40))
    window = data.draw(windows(types=("tumbling", "hopping", "global")))
    instants = data.draw(arrivals(recs))
    defn = definition(
        window,
        delay=data.draw(st.integers(0, 8)),
        lateness=data.draw(st.integers(0, 12)),
        basis=data.draw(st.sampled_from(["window", "event"])),
        scope=data.draw(st.sampled_from(["global", "key"])),
    )
    out = run(defn, instants)
    _, dropped = _accounting(out)
    got: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for p in panes(out):
        ident = (json.dumps(p["key"]), p["window_start"], p["window_end"])
        assert ident not in got, f"emit final gave two panes for {ident}"
        assert (p["timing"], p["is_last"], p["retraction"]) == ("ON_TIME", True, False), p
        got[ident] = p
    want: dict[tuple[Any, Any, Any], set[int]] = defaultdict(set)
    w = defn.window
    for _, rs in instants:
        for r in rs:
            key = json.dumps(r.key)
            wins: list[tuple[Any, Any, Any]]
            if w.type == "global":
                wins = [(key, None, None)]
            else:
                assert w.size is not None
                wins = [(key, s, s + w.size) for s in fixed_starts(w, r.t)]
            for win in wins:
                if win not in dropped[r.id]:
                    want[win].add(r.id)
    assert {k: sorted(p["values"]["ids"]) for k, p in got.items()} == {
        k: sorted(v) for k, v in want.items() if v
    }
