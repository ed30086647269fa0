"""Compiled kernels (numba) of the triggered fixed-window engine under per-key bounded
watermarks (``watermark.scope: key``, ``strategy: bounded``, event time).

The general engine runs a key's windows after each of its records (``Engine.ingest``): first
at the key's watermark as the record met it (the record's late lines, its count panes, a
window born late), then, when the record raised that watermark, at the new one (the key's
windows it passes or expires, by window end then start). Per record this is
:func:`trigger_kernels.ingest_kernel` on that one record, then
:func:`trigger_kernels._fire_window` on the key's due windows, so every per-window rule is
the global-watermark engine's. Every other window of the key is exactly as its last run at
that watermark left it (running it again does nothing), so only due windows are run.

A key's rows are a singly linked list (``key_head[key]``, ``rnext[row]``); rows that died are
unlinked as a walk meets them, and a compaction of the table rebuilds the lists.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.vectorized.trigger_kernels import (
    B_LIVE,
    B_PASSED,
    B_TIMER,
    C_CLOSE,
    C_KEY,
    C_PENDING,
    C_START,
    O_REC,
    P_AL,
    T_EARLY,
    T_LATE,
    _emit,
    _fire_window,
    _sat_add,
    ingest_kernel,
)

STOP_TABLE, STOP_OUTPUT = 1, 2
"""Why :func:`ingest_keys_kernel` stopped before the unit's end: the window table or hash
table needs room, or the output buffers do."""


@njit(cache=True)
def build_key_lists(wi, wb, n_rows, key_head, rnext, key_n):
    """The per-key row lists from the live rows (``key_head`` / ``key_n`` sized to the keys)."""
    key_head[:] = -1
    key_n[:] = 0
    for r in range(n_rows - 1, -1, -1):
        if wb[r, B_LIVE]:
            k = wi[r, C_KEY]
            rnext[r] = key_head[k]
            key_head[k] = r
            key_n[k] += 1


@njit(cache=True)
def _key_due(k, wm, al, wi, wb, key_head, rnext, key_n, due):
    """The live rows of key ``k`` whose deadline (close, then close + allowed lateness once
    passed) ``wm`` reached, by window end then start, into ``due``; returns their count.
    Dead rows met on the way are unlinked."""
    m = 0
    prev = -1
    row = key_head[k]
    while row >= 0:
        nxt = rnext[row]
        if not wb[row, B_LIVE]:
            if prev < 0:
                key_head[k] = nxt
            else:
                rnext[prev] = nxt
            key_n[k] -= 1
        else:
            close = wi[row, C_CLOSE]
            d = _sat_add(close, al) if wb[row, B_PASSED] else close
            if d <= wm:
                due[m] = row
                m += 1
            prev = row
        row = nxt
    for i in range(1, m):  # insertion sort: a key has few due windows at once
        r = due[i]
        j = i - 1
        while j >= 0 and (wi[due[j], C_CLOSE] > wi[r, C_CLOSE] or (
                wi[due[j], C_CLOSE] == wi[r, C_CLOSE] and wi[due[j], C_START] > wi[r, C_START])):
            due[j + 1] = due[j]
            j -= 1
        due[j + 1] = r
    return m


@njit(cache=True)
def ingest_keys_kernel(p, fns, codes, times, vi, vf, visf, vvalid, key_wm, key_ib, key_ibpt,
                       key_hasib, idle, now, delay,
                       wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f, n_rows,
                       hk, hs, hv, hst, out_i, ok, oi, of, acc_late, r0, o, na, h_fill,
                       kcache, acc_t, seq0, key_head, rnext, key_n, due):
    """One arrival unit under per-key watermarks (see the module docstring), from record
    ``r0``. Returns (next record, rows in use, output rows, accepted-late rows, min close of
    the windows created, hash slots in use, why it stopped: 0 at the unit's end, else
    ``STOP_TABLE`` / ``STOP_OUTPUT``). Every output row names the record after which it
    came (``O_REC``)."""
    al = p[P_AL]
    min_close = np.iinfo(np.int64).max
    wpr = kcache.shape[1]
    cap_out = out_i.shape[0]
    for r in range(r0, len(codes)):
        k = codes[r]
        if o + 3 * wpr + 2 * (key_n[k] + wpr) > cap_out:
            return r, n_rows, o, na, min_close, h_fill, STOP_OUTPUT
        kw = key_wm[k]
        o0 = o
        n0 = n_rows
        done, n_rows, o, na, mc, h_fill = ingest_kernel(
            p, fns, codes[r:r + 1], times[r:r + 1], vi[r:r + 1], vf[r:r + 1],
            visf[r:r + 1], vvalid[r:r + 1], kw, wi, wb, acc_i, acc_f, acc_k, acc_n,
            lp_k, lp_i, lp_f, n_rows, hk, hs, hv, hst, out_i, ok, oi, of, acc_late, 0, o, na,
            h_fill, kcache, acc_t, seq0 + r)
        if done == 0:
            return r, n_rows, o, na, min_close, h_fill, STOP_TABLE
        if mc < min_close:
            min_close = mc
        for row in range(n0, n_rows):  # the record's new windows join its key's list
            rnext[row] = key_head[k]
            key_head[k] = row
            key_n[k] += 1
        cand = times[r] - delay
        if cand > kw:
            key_wm[k] = cand
            if idle:
                key_ib[k] = cand
                key_ibpt[k] = now
                key_hasib[k] = True
            m = _key_due(k, cand, al, wi, wb, key_head, rnext, key_n, due)
            for j in range(m):
                o = _fire_window(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                                 hk, hs, hv, hst, due[j], cand, out_i, ok, oi, of, o)
        for q in range(o0, o):
            out_i[q, O_REC] = r
    return len(codes), n_rows, o, na, min_close, h_fill, 0


@njit(cache=True)
def idle_due_rows(p, wi, wb, n_rows, key_wm, key_hasib):
    """Live rows of keys with an idle base whose deadline their key's watermark reached."""
    out = np.empty(n_rows, dtype=np.int64)
    n = 0
    al = p[P_AL]
    for r in range(n_rows):
        if not wb[r, B_LIVE]:
            continue
        k = wi[r, C_KEY]
        if not key_hasib[k]:
            continue
        d = _sat_add(wi[r, C_CLOSE], al) if wb[r, B_PASSED] else wi[r, C_CLOSE]
        if d <= key_wm[k]:
            out[n] = r
            n += 1
    return out[:n]


@njit(cache=True)
def fire_rows_keyed(p, fns, rows, key_wm, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i,
                    lp_f, hk, hs, hv, hst, out_i, ok, oi, of):
    """Run ``rows`` (in emission order) through their triggers, each at its key's watermark."""
    o = 0
    for j in range(len(rows)):
        row = rows[j]
        o = _fire_window(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                         hk, hs, hv, hst, row, key_wm[wi[row, C_KEY]], out_i, ok, oi, of, o)
    return o


@njit(cache=True)
def fire_timers_keyed(p, fns, rows, key_wm, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i,
                      lp_f, out_i, ok, oi, of):
    """``Firing._fire_timers`` for ``rows`` (due, in emission order), each window judged at
    its key's watermark (``INT64_MIN``: none yet)."""
    o = 0
    for j in range(len(rows)):
        row = rows[j]
        wb[row, B_TIMER] = False
        if wi[row, C_PENDING] > 0:
            wm = key_wm[wi[row, C_KEY]]
            timing = T_EARLY if wm < wi[row, C_CLOSE] else T_LATE
            o = _emit(p, fns, wi, wb, acc_i, acc_f, acc_k, acc_n, lp_k, lp_i, lp_f,
                      row, timing, False, wm, out_i, ok, oi, of, o)
    return o

