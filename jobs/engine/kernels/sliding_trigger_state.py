"""The state of :class:`~.sliding_triggers.SlidingTriggerEngine` as the general engine's
:class:`~jobs.engine.state.EngineState` and back (one snapshot format), and the compaction of
a key's input objects.

A window row's accumulators become the general engine's (``jobs/engine/aggregates.py``):
count an int, sum an int or a float, mean ``[sum, count]``, min/max the value or None,
first/last ``[t, seq, value]`` or None, collect and count_distinct read from the window's
members (:mod:`.sliding_trigger_side`). Windows are listed in creation order (the order the
general engine's dict keeps them in); a restored state gets that order as creation numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels.sliding_trigger_side import SIDE_FNS, restore_cuts, window_accs
from jobs.engine.state import EngineState, KeyState, WindowState
from jobs.engine.vectorized.aggregates import object_array

if TYPE_CHECKING:
    from jobs.engine.kernels.sliding_triggers import KeyArrays, SlidingTriggerEngine


def _accs(eng: SlidingTriggerEngine, ka: KeyArrays, w: int, side: dict[int, Any]
          ) -> list[Any]:
    row, frow = ka.W[w], ka.WF[w]
    out: list[Any] = []
    for j, fn in enumerate(eng._fns):
        if fn in SIDE_FNS:
            out.append(side[j])
            continue
        b = K.W_AGG + K.A_WIDTH * j
        total: Any = float(frow[2 * j]) if row[b + K.A_ISF] else int(row[b + K.A_ISUM])
        if fn == "count":
            out.append(int(row[b + K.A_CNT]))
        elif fn == "sum":
            out.append(total)
        elif fn == "mean":
            out.append([total, int(row[b + K.A_CNT])])
        elif fn in ("min", "max"):
            out.append(None if not row[b + K.A_HAS] else (
                float(frow[2 * j + 1]) if row[b + K.A_EISF] else int(row[b + K.A_EI])))
        else:
            out.append([int(row[b + K.A_OT]), int(row[b + K.A_OSEQ]),
                        eng.objs[int(row[b + K.A_OREF])]] if row[b + K.A_HAS] else None)
    return out


def to_engine_state(eng: SlidingTriggerEngine) -> EngineState:
    """The general engine's state equal to ``eng``'s."""
    size = eng._size
    keys: dict[str, KeyState] = {}
    for kj, ka in eng.keys.items():
        order = sorted(range(ka.n_w), key=lambda w: int(ka.W[w, K.W_BORN]))
        side = window_accs(eng, ka) if eng._side else [{} for _ in range(ka.n_w)]
        windows: dict[int, WindowState] = {}
        for w in order:
            row = ka.W[w]
            s = int(row[K.W_START])
            lp = ka.lp.get(s) if eng._retracting else None
            windows[s] = WindowState(
                start=s, end=s + size, close=s + size + 1, accs=_accs(eng, ka, w, side[w]),
                first_t=int(row[K.W_FIRST]), last_t=int(row[K.W_LAST]),
                elements=int(row[K.W_ELEM]), pending=int(row[K.W_PEND]),
                emitted=int(row[K.W_EMIT]), last_pane=dict(lp) if lp is not None else None,
                passed=bool(row[K.W_PASSED]), born_late=bool(row[K.W_BLATE]),
                timer=None if row[K.W_TIMER] == K.NO_TIMER else int(row[K.W_TIMER]),
            )
        records: list[list[Any]] = []
        for r in ka.RT[:ka.n_h].tolist():
            vals = [1 if star else eng.objs[r[K.R_AGG + K.R_WIDTH * j + 3]]
                    for j, star in enumerate(eng._star)]
            records.append([r[K.R_T], r[K.R_SEQ], vals])
        keys[kj] = KeyState(key=ka.key, windows=windows, records=records,
                            watermark=ka.wm, idle_base=ka.ib, idle_base_pt=ka.ibpt,
                            max_event_time=ka.max_t, late_accepted=ka.late_acc,
                            late_dropped=ka.late_drop)
    return EngineState(
        processing_time=eng.processing_time, watermark=eng.wm, ended=eng.ended,
        idle_base=eng.idle_base, idle_base_pt=eng.idle_base_pt, max_event_time=eng.max_t, seq=eng.seq, keys=keys,
        late_deltas={k: list(v) for k, v in eng.late_deltas.items()},
    )


def _num(v: Any) -> tuple[int, float, int] | None:
    """(int value, float value, is float) of a number the arrays hold exactly; else None."""
    if type(v) is int and abs(v) <= K_EXACT:
        return v, float(v), 0
    if type(v) is float and v == v:
        return 0, v, 1
    return None


K_EXACT = 2**53


def load_state(eng: SlidingTriggerEngine, st: EngineState) -> str | None:
    """Load ``st`` into ``eng``'s arrays; returns why it cannot (``eng`` is then unchanged
    but for partial keys, and hands over), or None."""
    from jobs.engine.kernels.sliding_triggers import FAR, TIME_LIMIT, KeyArrays

    # a base is an event time (|t| <= 2**60) minus a delay (<= 2**62): the bound holds
    # every base this engine sets itself
    if not all(v is None or type(v) is int and abs(v) <= FAR + FAR // 2
               for v in (st.idle_base, st.idle_base_pt)):
        return "state: an idle-advance base beyond 2**62 + 2**61"
    m = len(eng._names)
    objs = eng.objs = []
    keys: dict[str, KeyArrays] = {}
    int_abs = 0
    for kj, ks in st.keys.items():
        if not eng._key_scope and (ks.watermark is not None or ks.idle_base is not None):
            return f"state: key {kj} holds its own watermark"
        ka = KeyArrays(ks.key, kj, m)
        ka.wm, ka.ib, ka.ibpt = ks.watermark, ks.idle_base, ks.idle_base_pt
        nh = len(ks.records)
        RT = np.zeros((max(nh, 4), K.R_AGG + K.R_WIDTH * m), dtype=np.int64)
        RF = np.zeros((max(nh, 4), max(m, 1)), dtype=np.float64)
        for i, (t, seq, vals) in enumerate(ks.records):
            if abs(t) > TIME_LIMIT:
                return "state: event times beyond 2**60"
            RT[i, K.R_T], RT[i, K.R_SEQ] = t, seq
            for j, (fn, star) in enumerate(zip(eng._fns, eng._star, strict=True)):
                b = K.R_AGG + K.R_WIDTH * j
                v = vals[j]
                if star:
                    RT[i, b], RT[i, b + 1] = 1, 1
                    continue
                RT[i, b + 3] = len(objs)
                objs.append(v)
                if v is None:
                    continue
                RT[i, b] = 1
                if fn == "count_distinct":
                    RT[i, b + 1] = int(eng._distinct.encode(object_array([v]))[0])
                if fn in ("sum", "mean", "min", "max"):
                    num = _num(v)
                    if num is None:
                        return f"state: record value {v!r} of {eng._names[j]!r}"
                    RT[i, b + 1], RF[i, j], RT[i, b + 2] = num
                    if fn in ("sum", "mean") and not num[2]:
                        int_abs += abs(num[0])
        ka.RT, ka.RF, ka.n_h = RT, RF, nh
        wins = list(ks.windows.values())
        nw = len(wins)
        W = np.zeros((max(nw, 4), K.W_AGG + K.A_WIDTH * m), dtype=np.int64)
        WF = np.zeros((max(nw, 4), max(2 * m, 1)), dtype=np.float64)
        # rows by start; W_BORN keeps the creation order (the state's window order)
        for pos, born in enumerate(sorted(range(nw), key=lambda i: wins[i].start or 0)):
            ws = wins[born]
            if ws.retract or ws.start is None or ws.first_t is None:
                return "state: a window with retractions or no records"
            if ws.timer is not None and not -K.NO_TIMER < ws.timer < K.NO_TIMER:
                return "state: a timer beyond 64 bits"
            row = W[pos]
            row[K.W_TIMER] = K.NO_TIMER if ws.timer is None else ws.timer
            row[K.W_START], row[K.W_BORN] = ws.start, born
            row[K.W_ELEM], row[K.W_PEND], row[K.W_EMIT] = ws.elements, ws.pending, ws.emitted
            row[K.W_PASSED], row[K.W_BLATE] = ws.passed, ws.born_late
            row[K.W_FIRST], row[K.W_LAST] = ws.first_t, ws.last_t
            for j, (fn, acc) in enumerate(zip(eng._fns, ws.accs, strict=True)):
                b = K.W_AGG + K.A_WIDTH * j
                if fn in SIDE_FNS:
                    continue  # read from the members (restore_cuts below)
                if fn == "count":
                    row[b + K.A_CNT] = acc
                elif fn in ("sum", "mean"):
                    total = acc if fn == "sum" else acc[0]
                    num = _num(total)
                    if num is None:
                        return f"state: window sum {total!r} of {eng._names[j]!r}"
                    row[b + K.A_ISUM], WF[pos, 2 * j], row[b + K.A_ISF] = num
                    int_abs += abs(num[0])
                    if fn == "mean":
                        row[b + K.A_CNT] = acc[1]
                elif fn in ("min", "max"):
                    if acc is not None:
                        num = _num(acc)
                        if num is None:
                            return f"state: window value {acc!r} of {eng._names[j]!r}"
                        row[b + K.A_EI], WF[pos, 2 * j + 1], row[b + K.A_EISF] = num
                        row[b + K.A_HAS] = 1
                elif acc is not None:
                    row[b + K.A_HAS], row[b + K.A_OT], row[b + K.A_OSEQ] = 1, acc[0], acc[1]
                    row[b + K.A_OREF] = len(objs)
                    objs.append(acc[2])
            if ws.last_pane is not None:
                ka.lp[ws.start] = dict(ws.last_pane)
        ka.W, ka.WF, ka.n_w, ka.born_next = W, WF, nw, nw
        restore_cuts(ka, eng._size)
        ka.max_t, ka.late_acc, ka.late_drop = ks.max_event_time, ks.late_accepted, ks.late_dropped
        keys[kj] = ka
    if int_abs >= 2**61:
        return "state: int sums could leave 64 bits"
    eng.keys = keys
    eng.late_deltas = {k: list(v) for k, v in st.late_deltas.items()}
    eng.processing_time, eng.wm, eng.ended = st.processing_time, st.watermark, st.ended
    eng.idle_base, eng.idle_base_pt = st.idle_base, st.idle_base_pt
    eng.max_t, eng.seq, eng.int_abs = st.max_event_time, st.seq, int_abs
    eng._due = []
    eng._timers = []
    for ka in keys.values():
        ka.deadline = FAR + 1
        eng._push_deadline(ka)
        eng._push_timer(ka)
    return None


def compact_objs(eng: SlidingTriggerEngine) -> None:
    """Drop the input objects no held record or window refers to, when they are most of the
    engine's list (it grows by every record's values)."""
    rcols = [K.R_AGG + K.R_WIDTH * j + 3 for j, s in enumerate(eng._star) if not s]
    wcols = [K.W_AGG + K.A_WIDTH * j + K.A_OREF for j, fn in enumerate(eng._fns)
             if fn in ("first", "last")]
    kas = list(eng.keys.values())
    n_live = sum(ka.n_h for ka in kas) * len(rcols) + sum(ka.n_w for ka in kas) * len(wcols)
    if 4 * n_live >= len(eng.objs):
        return
    parts = [ka.RT[:ka.n_h][:, rcols].ravel() for ka in kas]
    for ka in kas:
        for c in wcols:
            has = ka.W[:ka.n_w, c - K.A_OREF + K.A_HAS] != 0
            parts.append(ka.W[:ka.n_w, c][has])
    used = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    objs = eng.objs
    eng.objs = [objs[r] for r in used.tolist()]
    for ka in kas:
        for c in rcols:
            ka.RT[:ka.n_h, c] = np.searchsorted(used, ka.RT[:ka.n_h, c])
        for c in wcols:
            has = ka.W[:ka.n_w, c - K.A_OREF + K.A_HAS] != 0
            col = ka.W[:ka.n_w, c]
            col[has] = np.searchsorted(used, col[has])
            col[~has] = 0
