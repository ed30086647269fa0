"""Compiled (numba) kernels of the session engine under per-key watermarks (``watermark.scope:
key``): a pass over an arrival unit that judges each record against its key's watermark and
fires the sessions the record's move of that watermark expires, and the scan of the keys an
idle advance moved. The per-record work is :func:`._session_kernels.ingest_unit` on one
record, so joins, merges and drops are the global-watermark engine's, operation by operation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._session_kernels import ingest_unit


@njit(cache=True)
def _clamp(wm):
    if wm < -(2**62):
        return -(2**62)
    if wm > 2**62 + 2**61:
        return 2**62 + 2**61
    return wm


@njit(cache=True)
def _unlink_expired(k, wm, gap, al, key_head, nxt, used, last, key_nwin, out, m):
    """Unlink every session of key ``k`` that ``wm`` expires into ``out`` (from ``m``);
    their slots are not freed here. Returns the new ``m``."""
    prev = -1
    w = key_head[k]
    while w >= 0:
        nx = nxt[w]
        if wm >= last[w] + gap + al:
            if prev < 0:
                key_head[k] = nx
            else:
                nxt[prev] = nx
            used[w] = False
            key_nwin[k] -= 1
            out[m] = w
            m += 1
        else:
            prev = w
        w = nx
    return m


@njit(cache=True)
def ingest_unit_keys(
    codes, times, seq0, valid, vf, vi, visf, vref, kinds,
    delay, idle, now, key_wm, key_ib, key_ibpt, no_time, event_basis, gap, al,
    key_head, nxt, wkey, first, last, elements, born, blate, used, free, n_free, born_next,
    cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
    status, out_start, out_end, key_nwin, hexp, hslot, hborn, hn, fired, fired_rec,
):
    """``watermark.scope: key``: each record is judged against its key's watermark as the
    key's earlier records left it (:func:`ingest_unit` on that one record), then raises it
    to ``t - delay`` (``idle``: also the key's idle base, at processing time ``now``); the
    sessions of the key that the raised watermark expires go to ``fired`` (their record in
    ``fired_rec``), unlinked, and their slots are freed only after the unit so their data
    stays readable. Returns ``(n_free, born_next, hn, number fired)``."""
    n = len(times)
    m = 0
    for r in range(n):
        k = codes[r]
        kw = key_wm[k]
        known = kw != no_time
        wm0 = _clamp(kw) if known else 0
        n_free, born_next, hn = ingest_unit(
            codes[r:r + 1], times[r:r + 1], seq0 + r, valid[:, r:r + 1], vf[:, r:r + 1],
            vi[:, r:r + 1], visf[:, r:r + 1], vref[:, r:r + 1], kinds,
            wm0, known, event_basis, gap, al,
            key_head, nxt, wkey, first, last, elements, born, blate, used, free, n_free,
            born_next, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
            status[r:r + 1], out_start[r:r + 1], out_end[r:r + 1], key_nwin,
            hexp, hslot, hborn, hn,
        )
        cand = times[r] - delay
        if not known or cand > kw:
            key_wm[k] = cand
            if idle:
                key_ib[k] = cand
                key_ibpt[k] = now
            m0 = m
            m = _unlink_expired(k, _clamp(cand), gap, al, key_head, nxt, used, last,
                                key_nwin, fired, m)
            for i in range(m0, m):
                fired_rec[i] = r
    for i in range(m):
        free[n_free] = fired[i]
        n_free += 1
    return n_free, born_next, hn, m


@njit(cache=True)
def expire_keys(moved, key_wm, gap, al, key_head, nxt, used, last, key_nwin, free, n_free,
                n_slots):
    """The sessions of the keys in ``moved`` that their own watermark expires: unlinked and
    freed (their data is kept until reused); returns ``(slots, n_free)``."""
    out = np.empty(n_slots, dtype=np.int64)
    m = 0
    for k in moved:
        m = _unlink_expired(k, _clamp(key_wm[k]), gap, al, key_head, nxt, used, last,
                            key_nwin, out, m)
    for i in range(m):
        free[n_free] = out[i]
        n_free += 1
    return out[:m], n_free
