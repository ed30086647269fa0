"""numba kernels of :mod:`.session_side`: the entries each pane of a triggered session reads,
for a whole batch of panes in one pass over entries sorted once by (key, event time,
arrival)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _bisect(skey, st, k, t, right):
    """The first position whose (key, time) is above (``right``) or at least ``(k, t)``."""
    lo, hi = 0, len(skey)
    while lo < hi:
        mid = (lo + hi) >> 1
        a, b = skey[mid], st[mid]
        below = a < k or (a == k and (b <= t if right else b < t))
        if below:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def pane_entries(skey, st, sseq, alive_to, wkey, first, last, bound):
    """Per pane ``i``, the sorted positions of the entries of key ``wkey[i]`` in
    ``[first[i], last[i]]`` that arrived at or before ``bound[i]`` and are alive for it
    (``alive_to`` at least ``bound[i]``): ``(offsets, positions)``,
    pane ``i``'s run being ``positions[offsets[i]:offsets[i + 1]]``, in (time, arrival)
    order."""
    n = len(wkey)
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        lo[i] = _bisect(skey, st, wkey[i], first[i], False)
        hi[i] = _bisect(skey, st, wkey[i], last[i], True)
        c = 0
        for p in range(lo[i], hi[i]):
            if sseq[p] <= bound[i] <= alive_to[p]:
                c += 1
        offsets[i + 1] = offsets[i] + c
    positions = np.empty(offsets[n], dtype=np.int64)
    for i in range(n):
        o = offsets[i]
        for p in range(lo[i], hi[i]):
            if sseq[p] <= bound[i] <= alive_to[p]:
                positions[o] = p
                o += 1
    return offsets, positions


@njit(cache=True)
def unshown_pane_entries(skey, st, sseq, alive_to, wkey, first, last, bound):
    """:func:`pane_entries` for discarding panes, taken in firing order: each pane reads only
    the entries no earlier pane of the batch read (those are gone from its session's
    accumulator, merged sessions' included). Also returns the per-entry ``shown`` flags."""
    n = len(wkey)
    shown = np.zeros(len(skey), dtype=np.bool_)
    offsets = np.zeros(n + 1, dtype=np.int64)
    positions = np.empty(len(skey), dtype=np.int64)
    o = 0
    for i in range(n):
        lo = _bisect(skey, st, wkey[i], first[i], False)
        hi = _bisect(skey, st, wkey[i], last[i], True)
        for p in range(lo, hi):
            if sseq[p] <= bound[i] <= alive_to[p] and not shown[p]:
                shown[p] = True
                positions[o] = p
                o += 1
        offsets[i + 1] = o
    return offsets, positions[:o], shown


@njit(cache=True)
def alive_until(skey, st, sseq, dkey, dfirst, dlast, dseq):
    """Per entry (sorted), the last arrival bound that still reads it: an entry of an
    expired window (key ``dkey[j]``, in ``[dfirst[j], dlast[j]]``, arrived at or before
    its expiry's record ``dseq[j]``) is read by panes up to that record only (a later
    window of its key may cover the same times)."""
    out = np.full(len(skey), np.iinfo(np.int64).max, dtype=np.int64)
    for j in range(len(dkey)):
        lo = _bisect(skey, st, dkey[j], dfirst[j], False)
        hi = _bisect(skey, st, dkey[j], dlast[j], True)
        for p in range(lo, hi):
            if sseq[p] <= dseq[j] and dseq[j] < out[p]:
                out[p] = dseq[j]
    return out


@njit(cache=True)
def distinct_counts(offsets, codes, n_codes):
    """The number of distinct codes in each run ``codes[offsets[i]:offsets[i + 1]]``."""
    n = len(offsets) - 1
    stamp = np.full(max(n_codes, 1), -1, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        c = 0
        for p in range(offsets[i], offsets[i + 1]):
            x = codes[p]
            if stamp[x] != i:
                stamp[x] = i
                c += 1
        out[i] = c
    return out
