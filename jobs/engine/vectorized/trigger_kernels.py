"""Compiled kernels (numba) of the triggered fixed-window engine (``triggered.py``).

The general engine's per-record rules for tumbling / hopping / global windows with count
and processing-time triggers (``jobs/engine/assign.py``, ``jobs/engine/firing.py``) restated
over a window table held in arrays, one row per open window, so the loop over records runs
compiled. The rules
are kept line for line: the differential tests compare the two engines' output.

Window table (``W``): int64 columns (``C_*``), bool flags (``B_*``), and per aggregation an
accumulator (``acc_i`` int64, ``acc_f`` float64, ``acc_k`` kind, ``acc_n`` mean's count or
first / last's arrival sequence number, ``acc_t`` first / last's event time) and,
in retracting mode, the last pane's output values (``lp_*``; folding and pane values are in
:mod:`trigger_values`). A window's processing-time timer is ``C_TIMER`` while ``B_TIMER`` is
set (the general engine's ``WindowState.timer``). A row is found from (key code, window
start) through the hash table of :mod:`window_hash`.

Output rows (``O``): late records (``OUT_LATE``: record index, window start, reason) and panes
(timing, index, last, retraction, watermark, for panes ``ingest_kernel`` fires the index of
the record after which they fired, and per aggregation the output value as kind /
int / float, kind 0 = null, 1 = int, 2 = float), in exactly the general engine's order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.vectorized.trigger_values import (  # noqa: F401 (codes used through this module)
    F_COUNT,
    F_COUNT_STAR,
    F_FIRST,
    F_LAST,
    F_MAX,
    F_MEAN,
    F_MIN,
    F_SUM,
    _add_value,
    _write_values,
)
from jobs.engine.vectorized.window_hash import h_delete, h_find, h_insert

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
GLOBAL_START = INT64_MIN
"""The global window's start in the table (the general engine's ``NO_START``)."""


# params (int64 vector)
P_WTYPE, P_SIZE, P_STEP, P_ALIGN, P_AL, P_EVENT_BASIS = 0, 1, 2, 3, 4, 5
P_EARLY_COUNT, P_LATE_COUNT, P_ON_TIME, P_RETRACTING, P_DISCARDING, P_STEP_FIRING = 6, 7, 8, 9, 10, 11
P_EARLY_TIMER, P_LATE_TIMER, P_EARLY_DUE, P_LATE_DUE = 12, 13, 14, 15
"""Whether early / late are processing-time triggers, and the due time a timer set now gets
(processing time + duration, or the next ``every`` boundary: the caller sets them per call)."""
N_PARAMS = 16
WT_TUMBLING, WT_HOPPING, WT_GLOBAL = 0, 1, 2

# window table int columns
C_KEY, C_START, C_CLOSE, C_PENDING, C_EMITTED, C_ELEMENTS, C_FIRST_T, C_LAST_T, C_LP_TIMING = (
    0, 1, 2, 3, 4, 5, 6, 7, 8)
C_TIMER = 9
N_INT_COLS = 10
# window table flags
B_LIVE, B_PASSED, B_BORN_LATE, B_TIMER = 0, 1, 2, 3
N_FLAGS = 4

# output int columns
O_KIND, O_KEY, O_START, O_REC, O_REASON, O_TIMING, O_INDEX, O_LAST, O_RETRACTION, O_WM = (
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
N_OUT_COLS = 10
OUT_LATE, OUT_PANE = 0, 1
R_EXPIRED, R_BEFORE_WATERMARK = 0, 1
T_EARLY, T_ON_TIME, T_LATE = 0, 1, 2



@njit(cache=True, inline="always")
def _sat_add(a, b):
    if b > 0 and a > INT64_MAX - b:
        return INT64_MAX
    return a + b


@njit(cache=True)
def h_build(hk, hs, hv, hst, wi, wb, n_rows):
    """Fill an empty hash table with every live row of the window table."""
    for r in range(n_rows):
        if wb[r, B_LIVE]:
            h_insert(hk, hs, hv, hst, wi[r, C_KEY], wi[r, C_START], r)


@njit(cache=True, inline="always")
def _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
          row, timing, is_last, wm, out_i, ok, oi, of, o):
    """``Firing._emit``: the retraction of the window's last pane (retracting mode), then its
    new pane. Returns the next free output row."""
    emitted = wi[row, C_EMITTED]
    if p[P_RETRACTING] and emitted > 0:
        out_i[o, O_KIND] = OUT_PANE
        out_i[o, O_KEY] = wi[row, C_KEY]
        out_i[o, O_START] = wi[row, C_START]
        out_i[o, O_TIMING] = wi[row, C_LP_TIMING]
        out_i[o, O_INDEX] = emitted - 1
        out_i[o, O_LAST] = 0
        out_i[o, O_RETRACTION] = 1
        out_i[o, O_WM] = wm
        for a in range(len(fns)):
            ok[o, a] = lp_k[row, a]
            oi[o, a] = lp_i[row, a]
            of[o, a] = lp_f[row, a]
        o += 1
    out_i[o, O_KIND] = OUT_PANE
    out_i[o, O_KEY] = wi[row, C_KEY]
    out_i[o, O_START] = wi[row, C_START]
    out_i[o, O_TIMING] = timing
    out_i[o, O_INDEX] = emitted
    out_i[o, O_LAST] = 1 if is_last else 0
    out_i[o, O_RETRACTION] = 0
    out_i[o, O_WM] = wm
    _write_values(fns, acc_i, acc_f, acc_k, acc_n, row, ok, oi, of, o)
    if p[P_RETRACTING]:
        wi[row, C_LP_TIMING] = timing
        for a in range(len(fns)):
            lp_k[row, a] = ok[o, a]
            lp_i[row, a] = oi[o, a]
            lp_f[row, a] = of[o, a]
    o += 1
    wi[row, C_EMITTED] = emitted + 1
    wi[row, C_PENDING] = 0
    wb[row, B_TIMER] = False
    if p[P_DISCARDING]:
        for a in range(len(fns)):
            acc_i[row, a] = 0
            acc_f[row, a] = 0.0
            acc_k[row, a] = 0
            acc_n[row, a] = 0
    return o


@njit(cache=True, inline="always")
def _fire_window(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                 hk, hs, hv, hst, row, wm, out_i, ok, oi, of, o):
    """``Firing._fire_window`` at watermark ``wm`` (``INT64_MAX`` once the input has ended):
    count triggers fire, processing-time triggers set the window's timer. Returns the next
    free output row."""
    close = wi[row, C_CLOSE]
    pending = wi[row, C_PENDING]
    if wm < close:  # early phase
        ec = p[P_EARLY_COUNT]
        if ec > 0 and pending > 0 and pending >= ec:
            o = _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                      row, T_EARLY, False, wm, out_i, ok, oi, of, o)
        elif p[P_EARLY_TIMER] and pending > 0 and not wb[row, B_TIMER]:
            wb[row, B_TIMER] = True
            wi[row, C_TIMER] = p[P_EARLY_DUE]
        return o
    expired = wm >= _sat_add(close, p[P_AL])
    if not wb[row, B_PASSED]:
        wb[row, B_PASSED] = True
        wb[row, B_TIMER] = False  # pending early timers are dropped when the window passes
        if p[P_ON_TIME] and not wb[row, B_BORN_LATE]:
            o = _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                      row, T_ON_TIME, expired, wm, out_i, ok, oi, of, o)
            if expired:
                wb[row, B_LIVE] = False
                h_delete(hk, hs, hv, hst, wi[row, C_KEY], wi[row, C_START])
            return o
    if expired:
        if pending > 0:
            o = _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                      row, T_LATE, True, wm, out_i, ok, oi, of, o)
        wb[row, B_LIVE] = False
        h_delete(hk, hs, hv, hst, wi[row, C_KEY], wi[row, C_START])
        return o
    lc = p[P_LATE_COUNT]
    if lc > 0 and pending > 0 and pending >= lc:
        o = _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                  row, T_LATE, False, wm, out_i, ok, oi, of, o)
    elif p[P_LATE_TIMER] and pending > 0 and not wb[row, B_TIMER]:
        wb[row, B_TIMER] = True
        wi[row, C_TIMER] = p[P_LATE_DUE]
    return o


@njit(cache=True)
def ingest_kernel(p, fns, codes, times, vi, vf, visf, vvalid, wm0,
                  wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f, n_rows,
                  hk, hs, hv, hst, out_i, ok, oi, of, acc_late, r0, o, na, h_fill, kcache,
                  acc_t, seq0):
    """One arrival unit, records in arrival order, all judged against ``wm0`` (the global
    watermark from before the unit): each record's late lines (by window start), then, with
    a count trigger, the panes its windows fire (by window start). ``acc_late`` receives one
    row (key, start) per accepted-late (record, window). The output buffers have room for
    every row the unit can add; the window table and the hash table may not: the kernel stops
    before a record that might not fit, and the caller makes room and resumes from there
    (``r0``, ``o``, ``na``, ``h_fill``: where it stopped). Returns (next record, rows in use,
    output rows, accepted-late rows, min close of the windows created, hash slots in use).

    ``kcache[key, slot]`` remembers the row a key last used for each of its window slots
    (window number modulo windows per record): most records of a key land in the windows
    its previous record used, found without a hash probe (the hash table is the cold,
    cache-missing part of the loop). Record ``r``'s arrival sequence number is ``seq0 + r``."""
    wtype = p[P_WTYPE]
    size = p[P_SIZE]
    step = p[P_STEP]
    align = p[P_ALIGN]
    al = p[P_AL]
    event_basis = p[P_EVENT_BASIS]
    step_firing = p[P_STEP_FIRING]
    ec = p[P_EARLY_COUNT]
    early_timer = p[P_EARLY_TIMER]
    min_close = INT64_MAX
    wpr = max(1, (size + step - 1) // step if wtype == WT_HOPPING else 1)
    touched = np.empty(wpr, dtype=np.int64)
    cap_rows = wi.shape[0]
    h_limit = len(hk) // 2
    for r in range(r0, len(codes)):
        if n_rows + wpr > cap_rows or h_fill + wpr > h_limit:
            return r, n_rows, o, na, min_close, h_fill
        k = codes[r]
        t = times[r]
        # the record's first window start, window count and first window slot, with one
        # division (hopping: the first window is the last's wpr - 1 predecessor, or the one
        # after it when that one ends at or before t)
        if wtype == WT_TUMBLING:
            last_k = (t - align) // size
            first_s = align + last_k * size
            n_w = 1
            st = size
            slot0 = 0
        elif wtype == WT_HOPPING:
            last_k = (t - align) // step
            first_k = last_k - wpr + 1
            if align + first_k * step + size <= t:
                first_k += 1
            first_s = align + first_k * step
            n_w = last_k - first_k + 1
            st = step
            slot0 = first_k % wpr
        else:
            first_s = GLOBAL_START
            n_w = 1
            st = 0
            slot0 = 0
        if event_basis and t < wm0:
            for j in range(n_w):
                s = first_s + j * st
                out_i[o, O_KIND] = OUT_LATE
                out_i[o, O_KEY] = k
                out_i[o, O_START] = s
                out_i[o, O_REC] = r
                out_i[o, O_REASON] = R_BEFORE_WATERMARK
                o += 1
            continue
        nt = 0
        for j in range(n_w):
            s = first_s + j * st
            close = INT64_MAX if wtype == WT_GLOBAL else s + size
            slot = slot0 + j
            if slot >= wpr:
                slot -= wpr
            row = kcache[k, slot]
            if not (row >= 0 and row < n_rows and wb[row, B_LIVE] and wi[row, C_KEY] == k
                    and wi[row, C_START] == s):
                row = h_find(hk, hs, hv, hst, k, s)
            if row < 0:
                if wm0 >= _sat_add(close, al):
                    out_i[o, O_KIND] = OUT_LATE
                    out_i[o, O_KEY] = k
                    out_i[o, O_START] = s
                    out_i[o, O_REC] = r
                    out_i[o, O_REASON] = R_EXPIRED
                    o += 1
                    continue
                row = n_rows
                n_rows += 1
                wi[row, C_KEY] = k
                wi[row, C_START] = s
                wi[row, C_CLOSE] = close
                wi[row, C_PENDING] = 0
                wi[row, C_EMITTED] = 0
                wi[row, C_ELEMENTS] = 0
                wi[row, C_FIRST_T] = t
                wi[row, C_LAST_T] = t
                wi[row, C_LP_TIMING] = 0
                wi[row, C_TIMER] = 0
                wb[row, B_TIMER] = False
                wb[row, B_LIVE] = True
                wb[row, B_PASSED] = False
                wb[row, B_BORN_LATE] = wm0 >= close
                for a in range(len(fns)):
                    acc_i[row, a] = 0
                    acc_f[row, a] = 0.0
                    acc_k[row, a] = 0
                    acc_n[row, a] = 0
                h_insert(hk, hs, hv, hst, k, s, row)
                h_fill += 1
                if close < min_close:
                    min_close = close
            kcache[k, slot] = row
            _add_value(fns, acc_i, acc_f, acc_k, acc_n, acc_t, row, vi, vf, visf, vvalid, r,
                       t, seq0 + r)
            wi[row, C_ELEMENTS] += 1
            wi[row, C_PENDING] += 1
            if t < wi[row, C_FIRST_T]:
                wi[row, C_FIRST_T] = t
            elif t > wi[row, C_LAST_T]:
                wi[row, C_LAST_T] = t
            if wm0 >= close:
                acc_late[na, 0] = k
                acc_late[na, 1] = s
                na += 1
            # only the windows whose trigger can act now (``_fire_window`` does nothing to an
            # early-phase window below its count with its timer set or none to set): the
            # call is skipped for the rest, as most records fire nothing
            if step_firing and (wm0 >= close or (ec > 0 and wi[row, C_PENDING] >= ec)
                                or (early_timer and not wb[row, B_TIMER])):
                touched[nt] = row
                nt += 1
        if nt:
            o1 = o
            for j in range(nt):
                row = touched[j]
                if wb[row, B_LIVE]:
                    o = _fire_window(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i,
                                     lp_f, hk, hs, hv, hst, row, wm0, out_i, ok, oi, of, o)
            for q in range(o1, o):
                out_i[q, O_REC] = r  # the record after which the pane fired
    return len(codes), n_rows, o, na, min_close, h_fill


@njit(cache=True)
def due_rows(p, wi, wb, n_rows, wm):
    """Live rows whose next deadline (close, then close + allowed lateness once passed) the
    watermark ``wm`` has reached."""
    out = np.empty(n_rows, dtype=np.int64)
    n = 0
    al = p[P_AL]
    for r in range(n_rows):
        if not wb[r, B_LIVE]:
            continue
        d = _sat_add(wi[r, C_CLOSE], al) if wb[r, B_PASSED] else wi[r, C_CLOSE]
        if d <= wm:
            out[n] = r
            n += 1
    return out[:n]


@njit(cache=True)
def min_deadline(p, wi, wb, n_rows):
    al = p[P_AL]
    m = INT64_MAX
    for r in range(n_rows):
        if wb[r, B_LIVE]:
            d = _sat_add(wi[r, C_CLOSE], al) if wb[r, B_PASSED] else wi[r, C_CLOSE]
            if d < m:
                m = d
    return m


@njit(cache=True)
def fire_rows(p, fns, rows, wm, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
              hk, hs, hv, hst, out_i, ok, oi, of):
    """Run ``rows`` (in emission order) through their triggers at watermark ``wm``."""
    o = 0
    for j in range(len(rows)):
        o = _fire_window(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                         hk, hs, hv, hst, rows[j], wm, out_i, ok, oi, of, o)
    return o


@njit(cache=True)
def timer_rows(wi, wb, n_rows, now):
    """Live rows whose processing-time timer is due at ``now``."""
    out = np.empty(n_rows, dtype=np.int64)
    n = 0
    for r in range(n_rows):
        if wb[r, B_LIVE] and wb[r, B_TIMER] and wi[r, C_TIMER] <= now:
            out[n] = r
            n += 1
    return out[:n]


@njit(cache=True)
def min_timer(wi, wb, n_rows):
    """The earliest timer of a live row (``INT64_MAX``: none)."""
    m = INT64_MAX
    for r in range(n_rows):
        if wb[r, B_LIVE] and wb[r, B_TIMER] and wi[r, C_TIMER] < m:
            m = wi[r, C_TIMER]
    return m


@njit(cache=True)
def fire_timers(p, fns, rows, wm, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                out_i, ok, oi, of):
    """``Firing._fire_timers`` for ``rows`` (due, in emission order): the timer is cleared
    and a window with pending elements emits, EARLY before its close, LATE after."""
    o = 0
    for j in range(len(rows)):
        row = rows[j]
        wb[row, B_TIMER] = False
        if wi[row, C_PENDING] > 0:
            timing = T_EARLY if wm < wi[row, C_CLOSE] else T_LATE
            o = _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                      row, timing, False, wm, out_i, ok, oi, of, o)
    return o
