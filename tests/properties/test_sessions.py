"""Session windows with late data, against a direct reading of docs/semantics.md.

Spec "Windows" (session) and "Lateness", with the engine decision of docs/semantics.md ("a
record that overlaps a live session joins/merges it; only a record overlapping none is
judged on its own proto-window [t, t+gap)"), simulated record by record:
- a record's proto-window [t, t+gap) merges with every live session of its key it overlaps
  (sessions [first, last+gap); overlap = events closer than `gap`);
- overlapping none, it is dropped (late line with the proto-window, reason `expired`) if the
  watermark before its instant had reached t + gap + allowed_lateness, else it opens a session;
- after the instant the watermark is max event time - delay; sessions whose last + gap +
  allowed_lateness it reached expire: `emit: final` gives each exactly one ON_TIME pane.
One record per instant, so the result cannot depend on the order inside an instant
(test_instant_order.py covers that separately).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from .drive import Instant, definition, records, run

SETTINGS = settings(max_examples=100, deadline=None)


def simulate(
    instants: list[Instant], gap: int, delay: int, lateness: int
) -> tuple[set[tuple[str, int, int, tuple[int, ...]]], set[tuple[int, int, int]]]:
    """(final sessions as (key, start, end, ids), drops as (id, window start, window end))."""
    live: dict[str, list[dict[str, Any]]] = {}
    finals: set[tuple[str, int, int, tuple[int, ...]]] = set()
    drops: set[tuple[int, int, int]] = set()
    wm: int | None = None

    def close(s: dict[str, Any], key: str) -> None:
        finals.add((key, s["first"], s["last"] + gap, tuple(sorted(s["ids"]))))

    for _, recs in instants:
        for r in recs:
            key = json.dumps(r.key)
            sessions = live.setdefault(key, [])
            hits = [s for s in sessions if s["first"] < r.t + gap and r.t < s["last"] + gap]
            if hits:
                merged = {
                    "first": min([r.t] + [s["first"] for s in hits]),
                    "last": max([r.t] + [s["last"] for s in hits]),
                    "ids": [r.id] + [i for s in hits for i in s["ids"]],
                }
                live[key] = [s for s in sessions if s not in hits] + [merged]
            elif wm is not None and wm >= r.t + gap + lateness:
                drops.add((r.id, r.t, r.t + gap))
            else:
                sessions.append({"first": r.t, "last": r.t, "ids": [r.id]})
        candidate = max(r.t for r in recs) - delay
        wm = candidate if wm is None else max(wm, candidate)
        for key, sessions in live.items():
            for s in [s for s in sessions if wm >= s["last"] + gap + lateness]:
                close(s, key)
                sessions.remove(s)
    for key, sessions in live.items():
        for s in sessions:
            close(s, key)
    return finals, drops


@SETTINGS
@given(data=st.data())
def test_sessions_with_late_data_match_the_spec(data: st.DataObject) -> None:
    recs = data.draw(records(max_size=10, t_max=50))
    order = data.draw(st.permutations(recs))
    instants: list[Instant] = [(1000 * (i + 1), [r]) for i, r in enumerate(order)]
    gap = data.draw(st.integers(1, 12))
    delay = data.draw(st.integers(0, 8))
    lateness = data.draw(st.integers(0, 10))
    defn = definition({"type": "session", "gap": gap}, delay=delay, lateness=lateness)
    out = run(defn, instants)
    finals = set()
    for o in out:
        if o["type"] == "pane":
            assert (o["timing"], o["is_last"], o["pane_index"]) == ("ON_TIME", True, 0), o
            ids = tuple(sorted(o["values"]["ids"]))
            finals.add((json.dumps(o["key"]), o["window_start"], o["window_end"], ids))
            assert o["first_event_time"] == o["window_start"], o
            assert o["last_event_time"] == o["window_end"] - gap, o
    drops = {(o["record"]["id"], o["window_start"], o["window_end"])
             for o in out if o["type"] == "late"}
    want_finals, want_drops = simulate(instants, gap, delay, lateness)
    assert drops == want_drops
    assert finals == want_finals
