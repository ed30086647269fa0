"""The triggered engine's window table to and from the general engine's
:class:`~jobs.engine.state.EngineState`: snapshots, replay and old checkpoints are one format
for both engines. Loading refuses (returns False) whatever the arrays cannot hold exactly; the
engine then runs the general engine on that state.

The table form (``table_state`` / ``load_table``) is the engine's own arrays as plain data,
for the Spark host's state blob: converting to ``EngineState`` takes a Python step per open
window, the table form none. ``to_general_state`` of an engine loaded from it is the converter
to the general format."""

from __future__ import annotations

from functools import cache
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


def _lp_values(eng: TriggeredEngine, row: int, code: int, s: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if eng.side is not None:
        out = eng.side.last_pane_values(code, s)
    for j, name in enumerate(eng._names):
        if name in out:
            continue
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
        idle_base=eng.idle_base, idle_base_pt=eng.idle_base_pt,
    )
    kjs = eng.keys.json_array()
    keys = eng.keys.values
    side = eng.side
    side_accs = side.accs() if side is not None else {}
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
                "pane_index": emitted - 1, "values": _lp_values(eng, row, code, s),
                "first_t": first_t, "last_t": last_t,
            }
        accs = [_acc(eng, fn, row, j) for j, fn in enumerate(eng._fn_names)]
        if side is not None:
            held = side_accs.get((code, s))
            for a, j in enumerate(side.cols):
                accs[j] = side.empty_acc(a) if held is None or held[a] is None else held[a]
        ks.windows[NO_START if start is None else start] = WindowState(
            start=start, end=end,
            close=GLOBAL_CLOSE if start is None else int(eng.wi[row, K.C_CLOSE]),
            accs=accs,
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
    eng._key_states(st, kjs, keys)  # per-key watermarks (scope: key, bounded), if any
    return st


def load_state(eng: TriggeredEngine, st: EngineState) -> bool:
    """Load a general-engine state into the arrays; False when the arrays cannot hold it
    exactly (the caller then runs the general engine on it)."""
    rows: list[tuple[int, WindowState]] = []
    for ks in st.keys.values():
        if ks.records or (not eng.key_bounded and (ks.watermark is not None
                                                   or ks.idle_base is not None)):
            return False
        code = eng.keys.code_of(ks.key)
        for w in ks.windows.values():
            if w.retract:
                return False
            rows.append((code, w))
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
                if eng.side is not None and j in eng.side.cols:
                    if not eng.side.load_acc(eng.side.cols.index(j), code, s, w.accs[j]):
                        return False
                elif not _set_acc(eng, fn, r, j, w.accs[j]):
                    return False
            if w.last_pane is not None:
                lp = w.last_pane
                eng.wi[r, K.C_LP_TIMING] = TIMING_NAMES.index(lp["timing"])
                if eng.side is not None:
                    eng.side.set_loaded(code, s, lp["values"])
                for j, name in enumerate(eng._names):
                    if eng.side is not None and j in eng.side.cols:
                        continue
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
    eng.idle_base, eng.idle_base_pt = st.idle_base, st.idle_base_pt
    eng.ended = st.ended
    eng.wm = K.INT64_MAX if st.ended else (
        K.INT64_MIN if st.watermark is None else int(st.watermark))
    eng.max_t = st.max_event_time
    eng.seq = st.seq
    eng.late_deltas = {k: list(v) for k, v in st.late_deltas.items()}
    # the sum bound is not in the state: the held sums bound it again
    eng._sum_bound = float(np.abs(eng.acc_i[:n]).sum(dtype=np.float64))
    if eng.key_bounded:
        eng._load_key_states(st)
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


# ---------------------------------------------------------------- the table form

TABLE_VERSION = 1
"""Version of :func:`table_state`'s layout (``"v"``); :func:`load_table` refuses others."""
_ROW_ARRAYS = ("acc_i", "acc_f", "acc_k", "acc_n", "acc_t", "lp_k", "lp_i", "lp_f")


@cache
def _named(prefix: str, width: int) -> dict[str, int]:
    """The table's columns by the names of their ``trigger_kernels`` constants (``C_*`` int
    columns, ``B_*`` flags): a stored table is read by name, not by position. Cached: every
    save and restore asks (a scan of the module's names each time); callers do not mutate."""
    return {n: int(getattr(K, n)) for n in dir(K)
            if n.startswith(prefix) and type(getattr(K, n)) is int and 0 <= getattr(K, n) < width}


def table_state(eng: TriggeredEngine) -> dict[str, Any]:
    """The engine's own state as plain data (MessagePack-ready): its live window rows column
    by column as raw bytes (native int64 / float64 / int8 / bool), keys in code order and the
    counters. No Python work per window: the Spark host stores this instead of the general
    state (``jobs.spark.engine_path.state_blob``); :func:`load_table` reads it back and
    ``to_general_state`` of the loaded engine converts it to the general format."""
    n = eng.n_rows
    live = eng.wb[:n, K.B_LIVE]
    rows = slice(0, n) if bool(live.all()) else np.flatnonzero(live)
    wi, wb = eng.wi[rows], eng.wb[rows]
    return {
        "v": TABLE_VERSION,
        "n": int(wi.shape[0]),
        "fns": list(eng._fn_names),
        "names": list(eng._names),
        "wi": {name: np.ascontiguousarray(wi[:, c]).tobytes()
               for name, c in _named("C_", K.N_INT_COLS).items()},
        "wb": {name: np.ascontiguousarray(wb[:, c]).tobytes()
               for name, c in _named("B_", K.N_FLAGS).items()},
        "acc": {name: [getattr(eng, name).dtype.str,
                       np.ascontiguousarray(getattr(eng, name)[rows]).tobytes()]
                for name in _ROW_ARRAYS},
        "keys": list(eng.keys.values),
        "key_max_t": np.ascontiguousarray(eng.key_max_t[: len(eng.keys)]).tobytes(),
        "wm": int(eng.wm), "max_t": eng.max_t, "seq": int(eng.seq),
        "processing_time": int(eng.processing_time), "ended": bool(eng.ended),
        # idle advance's base (None without one; absent from tables written before)
        "idle_base": eng.idle_base, "idle_base_pt": eng.idle_base_pt,
        "sum_bound": float(eng._sum_bound),
        "late_totals": [[kj, *v] for kj, v in eng.late_totals_by_key.items()],
        "late_deltas": [[k, *v] for k, v in eng.late_deltas.items()],
        # collect / count_distinct entries (triggered_side); absent without them
        **({"side": eng.side.table_data()} if eng.side is not None else {}),
        # per-key watermarks and idle bases (scope: key, bounded); absent otherwise
        **(eng._key_table() if eng.key_bounded or eng.has_key_wms() else {}),
    }


def load_table(eng: TriggeredEngine, data: dict[str, Any]) -> None:
    """Load :func:`table_state`'s data into a fresh engine of the same definition; a
    :class:`~jobs.engine.errors.EngineError` names what does not fit (another version, other
    aggregations, a column this engine's table does not know)."""
    from jobs.engine.errors import EngineError

    if data.get("v") != TABLE_VERSION:
        raise EngineError(f"engine state table: version {data.get('v')!r} is not "
                          f"{TABLE_VERSION} (the one this engine reads)")
    if list(data["fns"]) != list(eng._fn_names) or list(data["names"]) != list(eng._names):
        raise EngineError("engine state table: its aggregations "
                          f"{list(zip(data['names'], data['fns'], strict=True))} are not the "
                          "definition's")
    n = int(data["n"])
    eng._alloc(max(64, 2 * n))
    for group, prefix, width, arr, dtype in (("wi", "C_", K.N_INT_COLS, eng.wi, np.int64),
                                             ("wb", "B_", K.N_FLAGS, eng.wb, np.bool_)):
        stored = data[group]
        for name, c in _named(prefix, width).items():
            if name not in stored:
                raise EngineError(f"engine state table: no column {name}")
            arr[:n, c] = np.frombuffer(stored[name], dtype=dtype, count=n)
    a = eng.acc_i.shape[1]
    for name in _ROW_ARRAYS:
        dt, raw = data["acc"][name]
        arr = getattr(eng, name)
        arr[:n] = np.frombuffer(raw, dtype=np.dtype(dt), count=n * a).reshape(n, a)
    keys = data["keys"]
    if len(eng.keys):
        raise EngineError("engine state table: loaded into an engine that already holds keys")
    # in bulk (codes 0..n-1 in stored order), not one code_of per key
    if not eng.keys.load(keys):
        raise EngineError("engine state table: two stored keys are the same key")
    eng.key_max_t = np.frombuffer(data["key_max_t"], dtype=np.int64, count=len(keys)).copy()
    eng.n_rows = n
    eng._rehash(4 * max(64, 2 * n))
    eng._next_deadline = int(K.min_deadline(eng._p, eng.wi, eng.wb, n))
    eng._next_timer = int(K.min_timer(eng.wi, eng.wb, n))
    eng.wm = int(data["wm"])
    eng.max_t = data["max_t"]
    eng.seq = int(data["seq"])
    eng.processing_time = int(data["processing_time"])
    eng.idle_base, eng.idle_base_pt = data.get("idle_base"), data.get("idle_base_pt")
    eng.ended = bool(data["ended"])
    eng._sum_bound = float(data["sum_bound"])
    eng.late_totals_by_key = {row[0]: list(row[1:]) for row in data["late_totals"]}
    eng.late_deltas = {row[0]: list(row[1:]) for row in data["late_deltas"]}
    if eng.side is not None:
        if "side" not in data:
            raise EngineError("engine state table: no side table for the definition's "
                              "collect / count_distinct")
        eng.side.load_table_data(data["side"])
    if eng.key_bounded or "key_wm" in data:  # the converter reads it in external mode
        eng._load_key_table(data)
    eng._set_dues()
