"""Compiled (numba) kernels of the sliding engine under per-key watermarks (``watermark.scope:
key``): the watermark each record of a unit meets and leaves behind, the record whose move of
its key's watermark fires a window, and the pruning of held records at each key's own
watermark."""

from __future__ import annotations

import numpy as np
from numba import njit

FAR = 2**62


@njit(cache=True)
def _clamp(v):
    if v < -FAR:
        return -FAR
    if v > FAR:
        return FAR
    return v


@njit(cache=True)
def key_marks(codes, times, delay, key_wm, no_time, idle, key_ib, key_ibpt, now, size, al):
    """Per unit record (arrival order within its key): the key's watermark it is judged
    against (known, value, horizon, expiry and close bounds as ``ingest_unit`` takes them),
    then its raise of the key's watermark to ``t - delay`` (``idle``: also the key's idle
    base at processing time ``now``). Returns those five arrays and the key's watermark after
    each record."""
    n = len(times)
    known = np.zeros(n, dtype=np.bool_)
    wm0 = np.full(n, -FAR, dtype=np.int64)
    hz = np.full(n, -FAR, dtype=np.int64)
    hz1 = np.full(n, -FAR, dtype=np.int64)
    cl = np.full(n, -FAR, dtype=np.int64)
    after = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = codes[i]
        kw = key_wm[k]
        if kw != no_time:
            known[i] = True
            w = _clamp(kw)  # then each step stays inside int64 (size, al <= 2**62)
            wm0[i] = w
            hz[i] = _clamp(_clamp(w - size - 2) - al)
            hz1[i] = _clamp(_clamp(w - size - 1) - al)
            cl[i] = _clamp(w - size - 1)
        cand = times[i] - delay
        if kw == no_time or cand > kw:
            key_wm[k] = cand
            if idle:
                key_ib[k] = cand
                key_ibpt[k] = now
        after[i] = key_wm[k]
    return known, wm0, hz, hz1, cl, after


@njit(cache=True)
def firing_records(codes, after, n_keys, fkey, fdue):
    """For each fired window (its key ``fkey``, its expiry ``fdue``): the first record of its
    key in the unit (arrival order) that left the key's watermark at or past the expiry (the
    key's watermark after each record never goes down)."""
    n = len(codes)
    cnt = np.zeros(n_keys + 1, dtype=np.int64)
    for i in range(n):
        cnt[codes[i] + 1] += 1
    for k in range(n_keys):
        cnt[k + 1] += cnt[k]
    pos = cnt[:n_keys].copy()
    recs = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = codes[i]
        recs[pos[k]] = i
        pos[k] += 1
    out = np.empty(len(fkey), dtype=np.int64)
    for q in range(len(fkey)):
        k = fkey[q]
        lo = cnt[k]
        hi = cnt[k + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if after[recs[mid]] >= fdue[q]:
                hi = mid
            else:
                lo = mid + 1
        out[q] = recs[lo] if lo < cnt[k + 1] else -1
    return out


@njit(cache=True)
def prune_keys(keys, kstart, kend, rt, key_wm, no_time, size, al):
    """Forget the held records of ``keys`` that no live or future window needs at the key's
    own watermark (``t + size + 2 + allowed lateness <= watermark``)."""
    for c in keys:
        kw = key_wm[c]
        if kw == no_time:
            continue
        wm = _clamp(kw)
        a = kstart[c]
        while a < kend[c] and rt[a] + size + 2 + al <= wm:
            a += 1
        kstart[c] = a


@njit(cache=True)
def any_after(a, b, rseq, lim):
    """Per window, whether its held records ``[a, b)`` include one that arrived after its
    limit ``lim`` (a sequence number)."""
    out = np.zeros(len(a), dtype=np.bool_)
    for q in range(len(a)):
        for x in range(a[q], b[q]):
            if rseq[x] > lim[q]:
                out[q] = True
                break
    return out


@njit(cache=True)
def gather_upto(a, b, rseq, lim):
    """The held records ``[a, b)`` of each window that arrived up to its limit ``lim``,
    concatenated (each window's in held order), and each window's offsets into them."""
    off = np.zeros(len(a) + 1, dtype=np.int64)
    total = 0
    for q in range(len(a)):
        total += b[q] - a[q]
    out = np.empty(total, dtype=np.int64)
    m = 0
    for q in range(len(a)):
        for x in range(a[q], b[q]):
            if rseq[x] <= lim[q]:
                out[m] = x
                m += 1
        off[q + 1] = m
    return out[:m], off
