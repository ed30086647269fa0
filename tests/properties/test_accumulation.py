"""How the panes of a window relate, per accumulation mode (spec "Accumulation").

Streaming 102's Table 1 in property form. With early, on-time and late firings, a bounded delay
(so some records are late) and infinite allowed lateness (so none is dropped and the finals are
the oracle's):
- retracting: summing all panes of a window, retractions negative, gives the final sum and
  count (and zero for session windows that were replaced); each retraction repeats the pane
  it withdraws; the last pane is the final answer;
- accumulating: the last pane of every window is the final answer;
- discarding: the panes of a window add up to the final sum and count.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from .drive import (
    Instant,
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
from .test_final_matches_oracle import same_value

SETTINGS = settings(max_examples=50, deadline=None)

TRIGGERS = st.one_of(
    st.just({"count": 1}),
    st.just({"count": 2}),
    st.just({"every": 1500}),
    st.just({"after": 1500}),
)


@st.composite
def scenario(draw: st.DrawFn, accumulation: str) -> tuple[Any, list[Instant], list[OracleWindow]]:
    recs = draw(records())
    window = draw(
        st.sampled_from(["tumbling", "hopping", "sliding", "session", "global"]).flatmap(
            lambda kind: _window(kind)
        )
    )
    instants = draw(arrivals(recs))
    trigger = {
        "emit": "custom",
        "early": draw(TRIGGERS),
        "on_time": draw(st.booleans()),
        "late": {"count": 1},
    }
    defn = definition(
        window, delay=draw(st.integers(0, 10)), lateness="infinite", trigger=trigger,
        accumulation=accumulation,
    )
    return defn, instants, final_windows(defn, oracle_records(instants))


def _window(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return windows(types=(kind,))


def _by_window(out: list[dict[str, Any]]) -> dict[tuple[str, Any, Any], list[dict[str, Any]]]:
    groups: dict[tuple[str, Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for p in panes(out):
        groups[window_id(p)].append(p)
    return groups


def _ident(w: OracleWindow) -> tuple[str, Any, Any]:
    return (json.dumps(w.key), w.start, w.end)


def _assert_final(w: OracleWindow, p: dict[str, Any]) -> None:
    for name, v in w.values.items():
        assert same_value(v, p["values"][name]), (_ident(w), name, v, p["values"][name])


def _as_window(p: dict[str, Any]) -> OracleWindow:
    return OracleWindow(key=p["key"], start=p["window_start"], end=p["window_end"],
                        first_event_time=0, last_event_time=0, values={}, members=())


def _inside(p_id: tuple[str, Any, Any], finals: list[OracleWindow]) -> bool:
    """A replaced session window lies inside the final session of its key."""
    key, s, e = p_id
    return any(
        json.dumps(w.key) == key and w.start is not None and w.end is not None
        and w.start <= s and e <= w.end
        for w in finals
    )


@SETTINGS
@given(data=st.data())
def test_retracting_panes_sum_to_final(data: st.DataObject) -> None:
    defn, instants, finals = data.draw(scenario("retracting"))
    out = run(defn, instants)
    assert [o for o in out if o["type"] == "late"] == []
    groups = _by_window(out)
    want = {_ident(w): w for w in finals}
    for ident, ps in groups.items():
        net_sum = sum(-p["values"]["x_sum"] if p["retraction"] else p["values"]["x_sum"]
                      for p in ps)
        net_n = sum(-p["values"]["n"] if p["retraction"] else p["values"]["n"] for p in ps)
        if ident in want:
            assert (net_sum, net_n) == (want[ident].values["x_sum"], want[ident].values["n"]), (
                ident, ps)
            live = [p for p in ps if not p["retraction"]]
            _assert_final(want[ident], live[-1])
        else:
            assert defn.window.type == "session" and _inside(ident, finals), (ident, ps)
            assert (net_sum, net_n) == (0, 0), f"replaced window not fully retracted: {ps}"
    assert set(want) <= set(groups), "a window never emitted"
    # each retraction repeats the window's previous pane
    last: dict[tuple[str, Any, Any], dict[str, Any]] = {}
    for p in panes(out):
        ident = window_id(p)
        if p["retraction"]:
            prev = last.get(ident)
            assert prev is not None, f"retraction of a pane never emitted: {p}"
            for f in ("timing", "pane_index", "values"):
                assert p[f] == prev[f], (f, p, prev)
            del last[ident]
        else:
            assert ident not in last or last[ident]["pane_index"] < p["pane_index"], p
            last[ident] = p
    # a retraction comes right before the pane that replaces it: only retractions (of the
    # same window, or of session windows the new one replaced) between them, same emitted_at
    seq = panes(out)
    for i, p in enumerate(seq):
        if not p["retraction"]:
            continue
        j = i
        while seq[j]["retraction"]:
            j += 1
            assert j < len(seq), f"retraction with no pane after it: {p}"
        new = seq[j]
        assert new["emitted_at"] == p["emitted_at"], (p, new)
        if defn.window.type != "session":
            assert window_id(new) == window_id(p), (p, new)
        else:
            assert _inside(window_id(p), [_as_window(new)]), (p, new)


@SETTINGS
@given(data=st.data())
def test_accumulating_last_pane_is_final(data: st.DataObject) -> None:
    defn, instants, finals = data.draw(scenario("accumulating"))
    out = run(defn, instants)
    groups = _by_window(out)
    assert all(not p["retraction"] for p in panes(out))
    for w in finals:
        assert _ident(w) in groups, f"window never emitted: {w}"
        _assert_final(w, groups[_ident(w)][-1])
    want = {_ident(w) for w in finals}
    for ident in groups:
        assert ident in want or (defn.window.type == "session" and _inside(ident, finals)), ident


@SETTINGS
@given(data=st.data())
def test_discarding_panes_add_up_to_final(data: st.DataObject) -> None:
    defn, instants, finals = data.draw(scenario("discarding"))
    out = run(defn, instants)
    groups = _by_window(out)
    for w in finals:
        if defn.window.type == "session":
            ps = [p for ident, g in groups.items() if _inside(ident, [w]) for p in g]
        else:
            ps = groups.get(_ident(w), [])
        totals = (
            sum(p["values"]["x_sum"] for p in ps),
            sum(p["values"]["n"] for p in ps),
            sum(p["values"]["x_count"] for p in ps),
            sorted(i for p in ps for i in p["values"]["ids"]),
        )
        assert totals == (
            w.values["x_sum"], w.values["n"], w.values["x_count"], sorted(w.values["ids"]),
        ), (_ident(w), ps)
