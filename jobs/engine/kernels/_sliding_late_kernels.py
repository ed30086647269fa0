"""Compiled (numba) kernels of the sliding engine's late rows: one unit's late lines as output
columns and its late counts per window, from the runs :func:`._sliding_kernels.ingest_unit`
writes (one run of window starts per late or accepted-late record). The counts stay runs (8
bytes per (record, window) pair) until the engine sums them per window."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def late_columns(drop_start, drop_rec, drop_off, drop_reason, codes, times, size, late_drop,
                 with_idx):
    """One unit's late lines as output columns, in (arrival, start) order: key code, event
    time, window start and end, reason, record position (``with_idx``: else empty, for a unit
    without records to show). ``ingest_unit`` writes each record's
    lines as one run by ascending start (a record has at most one run), so ordering the runs by
    record gives that order; each run is copied as a block. Adds each line to its key's dropped
    count in ``late_drop``."""
    nr = len(drop_rec)
    k = len(drop_start)
    runs = np.argsort(drop_rec)
    kc = np.empty(k, dtype=np.int64)
    et = np.empty(k, dtype=np.int64)
    ws = np.empty(k, dtype=np.int64)
    we = np.empty(k, dtype=np.int64)
    rs = np.empty(k, dtype=np.int8)
    idx = np.empty(k if with_idx else 0, dtype=np.int64)
    at = 0
    for r in range(nr):
        q = runs[r]
        x = drop_rec[q]
        a = drop_off[q]
        b = drop_off[q + 1]
        c = codes[x]
        late_drop[c] += b - a
        m = b - a
        kc[at: at + m] = c
        et[at: at + m] = times[x]
        rs[at: at + m] = drop_reason[q]
        if with_idx:
            idx[at: at + m] = x
        for y in range(m):
            st = drop_start[a + y]
            ws[at + y] = st
            we[at + y] = st + size
        at += m
    return kc, et, ws, we, rs, idx


@njit(cache=True)
def late_window_rows(run_codes, drop_start, drop_off, acc_start, acc_off):
    """Late counts per window as rows (key code, window start, accepted, dropped), one per
    late line or accepted-late record and window, from one unit's runs as the engine keeps
    them until it sums them (:meth:`SlidingArrays._compact_late`): ``run_codes`` holds the key
    code of each late-line run, then of each accepted-late run; the starts and offsets are
    those of :func:`ingest_unit`."""
    nd = len(drop_start)
    na = len(acc_start)
    ndr = len(drop_off) - 1
    oc = np.empty(nd + na, dtype=np.int64)
    os_ = np.empty(nd + na, dtype=np.int64)
    oa = np.zeros(nd + na, dtype=np.int64)
    od = np.zeros(nd + na, dtype=np.int64)
    os_[:nd] = drop_start
    os_[nd:] = acc_start
    od[:nd] = 1
    oa[nd:] = 1
    for r in range(ndr):
        oc[drop_off[r]: drop_off[r + 1]] = run_codes[r]
    for r in range(len(acc_off) - 1):
        oc[nd + acc_off[r]: nd + acc_off[r + 1]] = run_codes[ndr + r]
    return oc, os_, oa, od


@njit(cache=True)
def run_codes(codes, drop_rec, acc_rec, acc_off, late_acc):
    """The key code of each late-line run, then of each accepted-late run (what
    :func:`late_window_rows` needs of a unit once its record codes are gone); adds each
    accepted-late run to its key's count in ``late_acc``."""
    nd = len(drop_rec)
    out = np.empty(nd + len(acc_rec), dtype=np.int64)
    for r in range(nd):
        out[r] = codes[drop_rec[r]]
    for r in range(len(acc_rec)):
        c = codes[acc_rec[r]]
        out[nd + r] = c
        late_acc[c] += acc_off[r + 1] - acc_off[r]
    return out
