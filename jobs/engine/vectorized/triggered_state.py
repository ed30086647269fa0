"""The triggered engine's window table to and from the general engine's
:class:`~jobs.engine.state.EngineState`: snapshots, the Spark host's packed blobs and old
checkpoints are one format for both engines. Loading refuses (returns False) whatever the
arrays cannot hold exactly; the engine then runs the general engine on that state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jobs.engine.core import GLOBAL_CLOSE
from jobs.engine.state import NO_START, EngineState, KeyState, WindowState
from jobs.engine.vectorized import trigger_kernels
from jobs.engine.vectorized.triggered_output import TIMING_NAMES
from jobs.engine.vectorized.values import EXACT_FLOAT_INT

if TYPE_CHECKING:
    from jobs.engine.vectorized.triggered import TriggeredEngine

K: Any = trigger_kernels


def _acc(eng: TriggeredEngine, fn: str, row: int, j: int) -> Any:
    """Window ``row``'s accumulator of aggregation ``j`` in the general engine's format."""
    k = int(eng.acc_k[row, j])
    i, f = int(eng.acc_i[row, j]), float(eng.acc_f[row, j])
    if fn == "count":
        return i
    if fn == "sum":
        return f if k == 1 else i
    if fn == "mean":
        return [f if k == 1 else i, int(eng.acc_n[row, j])]
    if fn in ("first", "last"):
        if k == 0:
            return None
        return [int(eng.acc_t[row, j]), int(eng.acc_n[row, j]), i if k == 1 else f]
    return None if k == 0 else (i if k == 1 else f)


def _lp_values(eng: TriggeredEngine, row: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for j, name in enumerate(eng._names):
        k = int(eng.lp_k[row, j])
        out[name] = None if k == 0 else (int(eng.lp_i[row, j]) if k == 1
                                         else float(eng.lp_f[row, j]))
    return out


def to_general_state(eng: TriggeredEngine) -> EngineState:
    """The window table and counters as the general engine's state."""
    st = EngineState(
        processing_time=eng.processing_time,
        watermark=None if eng.wm == K.INT64_MIN or eng.ended else eng.wm,
        ended=eng.ended, max_event_time=eng.max_t, seq=eng.seq,
        late_deltas={k: list(v) for k, v in eng.late_deltas.items()},
    )
    kjs = eng.keys.json_array()
    keys = eng.keys.values
    live = np.flatnonzero(eng.wb[: eng.n_rows, K.B_LIVE])
    # keys in first-appearance order, then windows by start (the general engine's dicts
    # hold insertion order; nothing observable depends on it)
    order = live[np.lexsort((eng.wi[live, K.C_START], eng.wi[live, K.C_KEY]))]
    for row in order.tolist():
        code = int(eng.wi[row, K.C_KEY])
        kj = kjs[code]
        ks = st.keys.get(kj)
        if ks is None:
            ks = st.keys[kj] = KeyState(key=keys[code],
                                        max_event_time=int(eng.key_max_t[code]))
        s = int(eng.wi[row, K.C_START])
        start, end = eng._bounds(s)
        emitted = int(eng.wi[row, K.C_EMITTED])
        first_t, last_t = int(eng.wi[row, K.C_FIRST_T]), int(eng.wi[row, K.C_LAST_T])
        last_pane = None
        if eng._retracting and emitted > 0:
            last_pane = {
                "start": start, "end": end,
                "timing": TIMING_NAMES[int(eng.wi[row, K.C_LP_TIMING])],
                "pane_index": emitted - 1, "values": _lp_values(eng, row),
                "first_t": first_t, "last_t": last_t,
            }
        ks.windows[NO_START if start is None else start] = WindowState(
            start=start, end=end,
            close=GLOBAL_CLOSE if start is None else int(eng.wi[row, K.C_CLOSE]),
            accs=[_acc(eng, fn, row, j) for j, fn in enumerate(eng._fn_names)],
            first_t=first_t, last_t=last_t,
            elements=int(eng.wi[row, K.C_ELEMENTS]),
            pending=int(eng.wi[row, K.C_PENDING]), emitted=emitted, last_pane=last_pane,
            passed=bool(eng.wb[row, K.B_PASSED]),
            born_late=bool(eng.wb[row, K.B_BORN_LATE]),
            timer=int(eng.wi[row, K.C_TIMER]) if eng.wb[row, K.B_TIMER] else None,
        )
    for kj, (key, acc, drop) in eng.late_totals_by_key.items():
        ks = st.keys.get(kj)
        if ks is None:
            code = eng.keys.code_of(key)
            ks = st.keys[kj] = KeyState(key=key, max_event_time=int(eng.key_max_t[code]))
        ks.late_accepted, ks.late_dropped = acc, drop
    return st


def load_state(eng: TriggeredEngine, st: EngineState) -> bool:
    """Load a general-engine state into the arrays; False when the arrays cannot hold it
    exactly (the caller then runs the general engine on it)."""
    rows: list[tuple[int, WindowState]] = []
    for ks in st.keys.values():
        if ks.records or ks.watermark is not None or ks.idle_base is not None:
            return False
        code = eng.keys.code_of(ks.key)
        for w in ks.windows.values():
            if w.retract:
                return False
            rows.append((code, w))
    if st.idle_base is not None:
        return False
    n = len(rows)
    eng._alloc(max(64, 2 * n))
    fns = eng._fn_names
    try:
        for r, (code, w) in enumerate(rows):
            s = K.GLOBAL_START if w.start is None else int(w.start)
            eng.wi[r, K.C_KEY] = code
            eng.wi[r, K.C_START] = s
            eng.wi[r, K.C_CLOSE] = K.INT64_MAX if w.start is None else int(w.close)
            eng.wi[r, K.C_PENDING] = w.pending
            eng.wi[r, K.C_EMITTED] = w.emitted
            eng.wi[r, K.C_ELEMENTS] = w.elements
            eng.wi[r, K.C_FIRST_T] = w.first_t if w.first_t is not None else 0
            eng.wi[r, K.C_LAST_T] = w.last_t if w.last_t is not None else 0
            eng.wb[r, K.B_LIVE] = True
            eng.wb[r, K.B_PASSED] = w.passed
            eng.wb[r, K.B_BORN_LATE] = w.born_late
            if w.timer is not None:
                eng.wb[r, K.B_TIMER] = True
                eng.wi[r, K.C_TIMER] = int(w.timer)
            for j, fn in enumerate(fns):
                if not _set_acc(eng, fn, r, j, w.accs[j]):
                    return False
            if w.last_pane is not None:
                lp = w.last_pane
                eng.wi[r, K.C_LP_TIMING] = TIMING_NAMES.index(lp["timing"])
                for j, name in enumerate(eng._names):
                    kind, i, f = _value_parts(lp["values"].get(name))
                    if kind < 0:
                        return False
                    eng.lp_k[r, j], eng.lp_i[r, j], eng.lp_f[r, j] = kind, i, f
    except (TypeError, ValueError, OverflowError, IndexError):
        return False
    eng.n_rows = n
    eng._rehash(4 * max(64, 2 * n))
    eng._next_deadline = int(K.min_deadline(eng._p, eng.wi, eng.wb, eng.n_rows))
    eng.key_max_t = np.full(len(eng.keys), K.INT64_MIN, dtype=np.int64)
    for ks in st.keys.values():
        if ks.max_event_time is not None:
            eng.key_max_t[eng.keys.code_of(ks.key)] = ks.max_event_time
        if ks.late_accepted or ks.late_dropped:
            kj = eng.keys.json_array()[eng.keys.code_of(ks.key)]
            eng.late_totals_by_key[kj] = [ks.key, ks.late_accepted, ks.late_dropped]
    eng.processing_time = st.processing_time
    eng.ended = st.ended
    eng.wm = K.INT64_MAX if st.ended else (
        K.INT64_MIN if st.watermark is None else int(st.watermark))
    eng.max_t = st.max_event_time
    eng.seq = st.seq
    eng.late_deltas = {k: list(v) for k, v in st.late_deltas.items()}
    # the sum bound is not in the state: the held sums bound it again
    eng._sum_bound = float(np.abs(eng.acc_i[:n]).sum(dtype=np.float64))
    return True


def _set_acc(eng: TriggeredEngine, fn: str, r: int, j: int, acc: Any) -> bool:
    if fn == "count":
        if type(acc) is not int:
            return False
        eng.acc_i[r, j] = acc
        return True
    if fn == "mean":
        if not isinstance(acc, list) or len(acc) != 2 or type(acc[1]) is not int:
            return False
        eng.acc_n[r, j] = acc[1]
        acc = acc[0]
    if fn in ("first", "last") and acc is not None:
        if not isinstance(acc, list) or len(acc) != 3 or type(acc[0]) is not int \
                or type(acc[1]) is not int:
            return False
        eng.acc_t[r, j], eng.acc_n[r, j] = acc[0], acc[1]
        acc = acc[2]
        kind, i, f = _value_parts(acc)
        if kind not in (1, 2):
            return False
        eng.acc_k[r, j], eng.acc_i[r, j], eng.acc_f[r, j] = kind, i, f
        return True
    if fn in ("sum", "mean"):
        kind, i, f = _value_parts(acc)
        if kind not in (1, 2):
            return False
        eng.acc_k[r, j] = 0 if kind == 1 else 1
        eng.acc_i[r, j], eng.acc_f[r, j] = i, f
        return True
    kind, i, f = _value_parts(acc)
    if kind < 0:
        return False
    eng.acc_k[r, j], eng.acc_i[r, j], eng.acc_f[r, j] = kind, i, f
    return True


def _value_parts(v: Any) -> tuple[int, int, float]:
    """(kind, int, float) of a value the arrays hold exactly: kind 0 null, 1 int, 2 float;
    -1 for anything else (bools, strings, NaN, integers beyond 2**53)."""
    if v is None:
        return 0, 0, 0.0
    if type(v) is int:
        if abs(v) > EXACT_FLOAT_INT:
            return -1, 0, 0.0
        return 1, v, float(v)
    if type(v) is float and v == v:
        return 2, 0, v
    return -1, 0, 0.0
