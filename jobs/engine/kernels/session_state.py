"""The session kernel engine's state as the general engine's: :func:`to_engine_state` (what
``snapshot()`` writes), :func:`load_state` (a general state or snapshot into the arrays),
:func:`cannot_hold` (what the arrays cannot hold exactly: that state stays on the general
engine), and :class:`SessionKernelState`, the state object the engine exposes. One format for
both engines: a store written by either loads in the other, nothing needs converting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jobs.definition.model import INFINITE
from jobs.engine.kernels._session_trigger_kernels import NO_TIMER
from jobs.engine.kernels.handover import KernelState
from jobs.engine.kernels.session_arrays import (
    EXACT_INT,
    NO_TIME,
    ORDERED,
    TIME_LIMIT,
    SessionArrays,
)
from jobs.engine.kernels.session_side import SIDE_FNS
from jobs.engine.kernels.session_side import representable as side_representable
from jobs.engine.state import EngineState, KeyState, WindowState

if TYPE_CHECKING:
    pass


def to_engine_state(eng: SessionArrays) -> EngineState:
    """This state as the general engine's :class:`EngineState` (equal to the one the
    general engine would hold after the same calls)."""
    st = EngineState(
        processing_time=eng.processing_time, watermark=eng.wm, ended=eng.ended,
        max_event_time=eng.max_t, seq=eng.seq,
        late_deltas={k: list(v) for k, v in eng.late_deltas.items()},
        idle_base=eng.idle_base, idle_base_pt=eng.idle_base_pt,
    )
    # under per-key watermarks the general engine keeps every key it has seen
    present = np.arange(len(eng.keys)) if eng._key_scope else np.flatnonzero(
        (eng.key_nwin > 0) | (eng.late_acc > 0) | (eng.late_drop > 0)
        | (eng.key_wm != NO_TIME) | (eng.key_ib != NO_TIME))
    kjs = eng.keys.json_array()
    slots = np.flatnonzero(eng.used)
    slots = slots[np.argsort(eng.born[slots], kind="stable")]
    by_key: dict[int, list[int]] = {}
    side = {j: e.engine_accs(eng.wkey[slots], eng.first[slots], eng.last[slots])
            for j, e in eng.side.items()}
    pos = {w: i for i, w in enumerate(slots.tolist())}
    for w in slots.tolist():
        by_key.setdefault(int(eng.wkey[w]), []).append(w)
    for c in present.tolist():
        mt = int(eng.key_max_t[c])
        ks = KeyState(
            key=eng.keys.values[c], max_event_time=None if mt == NO_TIME else mt,
            late_accepted=int(eng.late_acc[c]), late_dropped=int(eng.late_drop[c]),
            watermark=_opt(eng.key_wm[c]), idle_base=_opt(eng.key_ib[c]),
            idle_base_pt=_opt(eng.key_ibpt[c]),
        )
        wm = eng.wm if not eng._key_scope else ks.watermark
        for w in by_key.get(c, []):
            first, last = int(eng.first[w]), int(eng.last[w])
            close = last + eng._gap
            n = int(eng.elements[w])
            win = ks.windows[first] = WindowState(
                start=first, end=close, close=close, accs=_accs(eng, w, {j: a[pos[w]] for j, a in side.items()}), first_t=first,
                last_t=last, elements=n, pending=n, emitted=0,
                passed=wm is not None and wm >= close,
                born_late=bool(eng.blate[w]),
            )
            if eng._triggered:
                win.pending, win.emitted = int(eng.pending[w]), int(eng.emitted[w])
                tm = int(eng.timer[w])
                win.timer = None if tm == NO_TIMER else tm
                held = eng.held.get(int(eng.rid[w]), [])
                if eng.haslp[w]:
                    win.last_pane, win.retract = held[-1], held[:-1]
                else:
                    win.retract = list(held)
        st.keys[str(kjs[c])] = ks
    return st


def _opt(v: Any) -> int | None:
    return None if int(v) == NO_TIME else int(v)


def _accs(eng: SessionArrays, w: int, side: dict[int, Any]) -> list[Any]:
    """Window slot ``w``'s accumulators as :mod:`jobs.engine.aggregates` holds them
    (``side``: those of its collect / count_distinct entries)."""
    out: list[Any] = []
    for j, fn in enumerate(eng._fns):
        if j in side:
            out.append(side[j])
            continue
        s: Any = float(eng.fsum[j, w]) if eng.isf[j, w] else int(eng.isum[j, w])
        if fn == "count":
            out.append(int(eng.cnt[j, w]))
        elif fn == "sum":
            out.append(s)
        elif fn == "mean":
            out.append([s, int(eng.cnt[j, w])])
        elif not eng.has[j, w]:
            out.append(None)
        elif fn in ORDERED:
            out.append([int(eng.ot[j, w]), int(eng.oseq[j, w]),
                        eng.objs[int(eng.oref[j, w])]])
        else:
            out.append(float(eng.ef[j, w]) if eng.eisf[j, w] else int(eng.ei[j, w]))
    return out


def load_state(eng: SessionArrays, st: EngineState) -> None:
    """Fill ``eng``'s (empty) arrays from a general-engine state that
    :func:`cannot_hold` accepted."""
    eng.wm, eng.ended = st.watermark, st.ended
    eng.processing_time, eng.max_t, eng.seq = st.processing_time, st.max_event_time, st.seq
    eng.late_deltas = {k: list(v) for k, v in st.late_deltas.items()}
    eng.idle_base, eng.idle_base_pt = st.idle_base, st.idle_base_pt
    wins = [(ks, w) for ks in st.keys.values() for w in ks.windows.values()]
    codes = eng.keys.encode([ks.key for ks in st.keys.values()]) if st.keys else np.zeros(
        0, dtype=np.int64)
    eng._grow_keys()
    eng._ensure_slots(len(wins))
    code_of = {id(ks): int(c) for ks, c in zip(st.keys.values(), codes.tolist(),
                                               strict=True)}
    for ks in st.keys.values():
        c = code_of[id(ks)]
        eng.late_acc[c] = ks.late_accepted
        eng.late_drop[c] = ks.late_dropped
        eng.key_max_t[c] = NO_TIME if ks.max_event_time is None else ks.max_event_time
        for arr, v in ((eng.key_wm, ks.watermark), (eng.key_ib, ks.idle_base),
                       (eng.key_ibpt, ks.idle_base_pt)):
            arr[c] = NO_TIME if v is None else v
    budget = 0
    for ks, w in wins:
        c = code_of[id(ks)]
        eng.n_free -= 1
        slot = int(eng.free[eng.n_free])
        eng.used[slot] = True
        eng.wkey[slot] = c
        assert w.first_t is not None and w.last_t is not None  # _cannot_hold checked
        eng.first[slot] = w.first_t
        eng.last[slot] = w.last_t
        eng.elements[slot] = w.elements
        eng.blate[slot] = w.born_late
        eng.born[slot] = eng.born_next
        eng.pending[slot], eng.emitted[slot] = w.pending, w.emitted
        eng.timer[slot] = NO_TIMER if w.timer is None else w.timer
        if w.timer is not None:
            eng.timer_floor = min(eng.timer_floor, w.timer)
        held = [*w.retract, *([w.last_pane] if w.last_pane is not None else [])]
        eng.rflag[slot], eng.haslp[slot] = bool(held), w.last_pane is not None
        eng.rid[slot] = eng.born_next
        if held:
            eng.held[eng.born_next] = held
        eng.born_next += 1
        eng.nxt[slot] = eng.key_head[c]
        eng.key_head[c] = slot
        eng.key_nwin[c] += 1
        for j, (fn, acc) in enumerate(zip(eng._fns, w.accs, strict=True)):
            if j in eng.side:
                _set_acc(eng, j, slot, "count", 0)  # the kernels' count is not read
                eng.side[j].load(c, w.first_t, acc)
                continue
            _set_acc(eng, j, slot, fn, acc)
            if fn in ("sum", "mean"):
                s = acc if fn == "sum" else acc[0]
                if type(s) is int:
                    budget = max(budget, abs(s))
    eng.int_budget = budget
    slots = np.flatnonzero(eng.used)
    close = eng.last[slots] + eng._gap
    exp = close + eng._al
    tag = eng.born[slots]
    if eng._triggered:  # a window the watermark has not passed waits for its close
        if eng._key_scope:  # each key's own watermark
            kw = eng.key_wm[eng.wkey[slots]]
            passed = (kw != NO_TIME) & (kw >= close)
        else:
            passed = (np.full(len(slots), False) if st.watermark is None
                      else st.watermark >= close)
        exp = np.where(passed, exp, close)
        tag = 2 * tag + passed
    order = np.argsort(exp, kind="stable")  # a sorted array is a heap
    eng._ensure_heap(len(slots))
    eng.hn = len(slots)
    eng.hexp[: eng.hn] = exp[order]
    eng.hslot[: eng.hn] = slots[order]
    eng.hborn[: eng.hn] = tag[order]


def _set_acc(eng: SessionArrays, j: int, slot: int, fn: str, acc: Any) -> None:
    for arr in (eng.cnt, eng.isum, eng.ei):
        arr[j, slot] = 0
    for farr in (eng.fsum, eng.ef):
        farr[j, slot] = 0.0
    for barr in (eng.isf, eng.eisf, eng.has):
        barr[j, slot] = False
    eng.ot[j, slot] = eng.oseq[j, slot] = 0
    eng.oref[j, slot] = -1
    if fn == "count":
        eng.cnt[j, slot] = acc
        return
    if fn in ("sum", "mean"):
        s = acc if fn == "sum" else acc[0]
        if fn == "mean":
            eng.cnt[j, slot] = acc[1]
        if type(s) is float:
            eng.isf[j, slot] = True
            eng.fsum[j, slot] = s
        else:
            eng.isum[j, slot] = s
        return
    if acc is not None and fn in ORDERED:
        eng.has[j, slot] = True
        eng.ot[j, slot], eng.oseq[j, slot] = acc[0], acc[1]
        eng.oref[j, slot] = len(eng.objs)
        eng.objs.append(acc[2])
    elif acc is not None:
        eng.has[j, slot] = True
        if type(acc) is float:
            eng.eisf[j, slot] = True
            eng.ef[j, slot] = acc
        else:
            eng.ei[j, slot] = acc
            eng.ef[j, slot] = float(acc)


def cannot_hold(eng: SessionArrays, st: EngineState) -> str | None:
    """Why the arrays cannot hold ``st`` exactly (None when they can)."""
    if not _time_ok(st.idle_base) or not _time_ok(st.idle_base_pt):
        return "state: an idle-advance base beyond 2**62"
    gap = eng._gap
    for kj, ks in st.keys.items():
        if ks.records:
            return f"state: key {kj} holds sliding records"
        if not all(_time_ok(v) for v in (ks.watermark, ks.idle_base, ks.idle_base_pt)):
            return f"state: key {kj} holds a watermark or idle base beyond 2**62"
        for w in ks.windows.values():
            if ((w.timer is not None and not (eng._timed and abs(w.timer) < NO_TIMER))
                    or w.first_t is None or w.last_t is None
                    or w.start != w.first_t or w.close != w.last_t + gap
                    or abs(w.first_t) > TIME_LIMIT or abs(w.last_t) > TIME_LIMIT):
                return f"state: key {kj} holds a window of another kind"
            if eng._triggered:
                wm = ks.watermark if eng._key_scope else st.watermark
                if w.passed != (wm is not None and wm >= w.close):
                    return f"state: key {kj} holds a window passed at another watermark"
            elif w.emitted or w.retract or w.last_pane is not None or w.pending != w.elements:
                return f"state: key {kj} holds a window that emitted panes"
            for fn, acc in zip(eng._fns, w.accs, strict=True):
                if not _representable(fn, acc):
                    return f"state: key {kj} holds a {fn} accumulator beyond the arrays"
    return None


def _time_ok(v: Any) -> bool:
    """None, or an int the per-key int64 arrays hold: any time the kernels themselves
    produce (an event time within ``TIME_LIMIT`` minus a delay up to ``INFINITE``), with
    ``NO_TIME`` (int64 min) still free."""
    return v is None or (type(v) is int and abs(v) <= INFINITE + TIME_LIMIT)


def _num_ok(v: Any) -> bool:
    if type(v) is int:
        return abs(v) <= EXACT_INT
    return type(v) is float and v == v


def _representable(fn: str, acc: Any) -> bool:
    if fn in SIDE_FNS:
        return side_representable(fn, acc)
    if fn == "count":
        return type(acc) is int
    if fn == "sum":
        return _num_ok(acc) or (type(acc) is int and abs(acc) < 2**62)
    if fn == "mean":
        return (isinstance(acc, list) and len(acc) == 2 and type(acc[1]) is int
                and (_num_ok(acc[0]) or (type(acc[0]) is int and abs(acc[0]) < 2**62)))
    if fn in ORDERED:
        return acc is None or (isinstance(acc, list) and len(acc) == 3 and type(acc[0]) is int
                               and type(acc[1]) is int and abs(acc[0]) <= TIME_LIMIT
                               and 0 <= acc[1] < 2**62)
    return acc is None or _num_ok(acc)


class SessionKernelState(KernelState):
    """The session kernel engine's state: a live view whose ``snapshot()`` is the general
    engine's snapshot of the same state."""
