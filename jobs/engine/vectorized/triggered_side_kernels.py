"""Compiled loops of the triggered engine's side table (:mod:`triggered_side`): the window
index from (key code, window start) to a side window id, each window's entries as a linked
list in arrival order, and the per-pane arrival ranges.

Entries of a window are linked in arrival order (``head`` / ``tail`` per window, ``nxt`` per
entry), so a pane walks its own window's entries only and stops at its upper bound.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.vectorized.window_hash import h_delete, h_find, h_insert

MIN = np.iinfo(np.int64).min


@njit(cache=True)
def resolve(hk, hs, hv, hst, w_k, w_s, w_last, w_live, w_loaded, n_w, k, s):
    """The window id of each (k, s), creating absent windows; returns (ids, new n_w). The
    caller has made room for ``len(k)`` more windows in the arrays and the hash."""
    out = np.empty(len(k), dtype=np.int64)
    for i in range(len(k)):
        w = h_find(hk, hs, hv, hst, k[i], s[i])
        if w < 0:
            w = n_w
            n_w += 1
            w_k[w] = k[i]
            w_s[w] = s[i]
            w_last[w] = MIN
            w_live[w] = True
            w_loaded[w] = False
            h_insert(hk, hs, hv, hst, k[i], s[i], w)
        out[i] = w
    return out, n_w


@njit(cache=True)
def link(head, tail, nxt, wids, n_e):
    """Append entries ``n_e ..`` (one per ``wids``) to their windows' lists."""
    for i in range(len(wids)):
        e = n_e + i
        w = wids[i]
        nxt[e] = -1
        if head[w] < 0:
            head[w] = e
        else:
            nxt[tail[w]] = e
        tail[w] = e


@njit(cache=True)
def pane_ranges(hk, hs, hv, hst, w_last, w_loaded, pk, ps, retraction, bound,
                discarding):
    """Per pane in emission order: its window id (-1: no entries ever), the arrival range
    ``(lo, hi]`` it shows, and whether it retracts a restored window's pane (its values are
    the state's), and for a retraction the pane of this call it retracts (-1: an earlier
    call's); updates each window's previous-pane bound."""
    m = len(pk)
    wid = np.empty(m, dtype=np.int64)
    lo = np.full(m, MIN, dtype=np.int64)
    hi = bound.copy()
    loaded = np.zeros(m, dtype=np.bool_)
    prev = np.full(m, -1, dtype=np.int64)
    last_in_call = np.full(len(w_last), -1, dtype=np.int64)
    for i in range(m):
        w = h_find(hk, hs, hv, hst, pk[i], ps[i])
        wid[i] = w
        if w < 0:
            if retraction[i]:
                hi[i] = MIN
            continue
        if retraction[i]:
            loaded[i] = w_loaded[w]
            hi[i] = w_last[w]
            prev[i] = last_in_call[w]
            continue
        if discarding and not w_loaded[w]:
            lo[i] = w_last[w]
        w_last[w] = bound[i]
        w_loaded[w] = False
        last_in_call[w] = i
    return wid, lo, hi, loaded, prev


@njit(cache=True)
def _range_counts(head, nxt, seq, wid, lo, hi):
    """Per pane, how many entries of its window (``wid``, -1 for none) have arrival in
    ``(lo, hi]``: a walk of the window's list, stopped past ``hi``."""
    m = len(wid)
    cnt = np.zeros(m, dtype=np.int64)
    for i in range(m):
        w = wid[i]
        if w < 0:
            continue
        e = head[w]
        c = 0
        while e >= 0:
            q = seq[e]
            if q > hi[i]:
                break
            if q > lo[i]:
                c += 1
            e = nxt[e]
        cnt[i] = c
    return cnt


@njit(cache=True)
def gather(head, nxt, seq, wid, lo, hi):
    """Per pane, how many entries of its window have arrival in ``(lo, hi]``, and those
    entries pane after pane (each pane's in arrival order)."""
    m = len(wid)
    cnt = _range_counts(head, nxt, seq, wid, lo, hi)
    out = np.empty(cnt.sum(), dtype=np.int64)
    o = 0
    for i in range(m):
        w = wid[i]
        if w < 0 or cnt[i] == 0:
            continue
        e = head[w]
        while e >= 0:
            q = seq[e]
            if q > hi[i]:
                break
            if q > lo[i]:
                out[o] = e
                o += 1
            e = nxt[e]
    return cnt, out


@njit(cache=True)
def collect_panes(head, nxt, seq, t, wid, lo, hi):
    """``gather`` with each pane's entries by (event time, arrival), the order of the
    general engine's lists: a window's entries are sorted once per call (up to its panes'
    highest bound), and each of its panes takes its arrival range from that order."""
    m = len(wid)
    cnt = _range_counts(head, nxt, seq, wid, lo, hi)
    off = np.zeros(m + 1, dtype=np.int64)
    for i in range(m):
        off[i + 1] = off[i] + cnt[i]
    out = np.empty(off[m], dtype=np.int64)
    order = np.argsort(wid, kind="mergesort")
    g = 0
    while g < m:
        w = wid[order[g]]
        h = g
        top = MIN
        while h < m and wid[order[h]] == w:
            if hi[order[h]] > top:
                top = hi[order[h]]
            h += 1
        if w >= 0:
            n = 0
            e = head[w]
            while e >= 0 and seq[e] <= top:
                n += 1
                e = nxt[e]
            buf = np.empty(n, dtype=np.int64)
            e = head[w]
            for x in range(n):
                buf[x] = e
                e = nxt[e]
            # entries are in arrival order: a stable sort by event time gives (t, arrival)
            srt = buf[np.argsort(t[buf], kind="mergesort")]
            for y in range(g, h):
                i = order[y]
                o = off[i]
                for x in range(n):
                    q = seq[srt[x]]
                    if q > lo[i] and q <= hi[i]:
                        out[o] = srt[x]
                        o += 1
        g = h
    return cnt, out


@njit(cache=True)
def link_distinct(head, tail, nxt, wids, n_e, codes, dk, ds, dv, dst, w_nd, cd):
    """``link`` for ``count_distinct`` entries, also keeping each window's set of codes (a
    hash of (window, code)), its distinct count ``w_nd`` and per entry ``cd``, the window's
    distinct count over its entries up to this one."""
    for i in range(len(wids)):
        e = n_e + i
        w = wids[i]
        nxt[e] = -1
        if head[w] < 0:
            head[w] = e
        else:
            nxt[tail[w]] = e
        tail[w] = e
        c = codes[e]
        if h_find(dk, ds, dv, dst, w, c) < 0:
            h_insert(dk, ds, dv, dst, w, c, 1)
            w_nd[w] += 1
        cd[e] = w_nd[w]


@njit(cache=True)
def distinct_panes(head, nxt, seq, cd, cur, wid, hi, retraction):
    """Accumulating / retracting ``count_distinct``: per pane in emission order, the distinct
    count over its window's entries up to ``hi``, from a per-window cursor (the last entry
    the window's previous pane showed) that only moves forward; a retraction reads it."""
    m = len(wid)
    out = np.zeros(m, dtype=np.int64)
    for i in range(m):
        w = wid[i]
        if w < 0:
            continue
        c = cur[w]
        if not retraction[i]:
            e = head[w] if c < 0 else nxt[c]
            while e >= 0 and seq[e] <= hi[i]:
                c = e
                e = nxt[e]
            cur[w] = c
        out[i] = cd[c] if c >= 0 else 0
    return out


@njit(cache=True)
def drop_shown(head, nxt, seq, w_last, wid):
    """Discarding: unlink the entries a window's last pane showed; returns how many."""
    dropped = 0
    for i in range(len(wid)):
        w = wid[i]
        if w < 0:
            continue
        e = head[w]
        while e >= 0 and seq[e] <= w_last[w]:
            e = nxt[e]
            dropped += 1
        head[w] = e
    return dropped


@njit(cache=True)
def free_windows(hk, hs, hv, hst, w_live, k, s):
    """Forget windows (k, s) (those present); returns their ids."""
    out = np.full(len(k), -1, dtype=np.int64)
    for i in range(len(k)):
        w = h_find(hk, hs, hv, hst, k[i], s[i])
        if w >= 0:
            h_delete(hk, hs, hv, hst, k[i], s[i])
            w_live[w] = False
            out[i] = w
    return out


@njit(cache=True)
def find(hk, hs, hv, hst, k, s):
    """The window id of (k, s), or -1."""
    return h_find(hk, hs, hv, hst, k, s)


@njit(cache=True)
def count_entries(head, nxt, wids):
    """Entries held by each of ``wids``."""
    out = np.zeros(len(wids), dtype=np.int64)
    for i in range(len(wids)):
        e = head[wids[i]] if wids[i] >= 0 else -1
        while e >= 0:
            out[i] += 1
            e = nxt[e]
    return out


@njit(cache=True)
def window_order(head, nxt, wids, total):
    """The entries of windows ``wids`` window after window, each in arrival order, with
    each window's count (for compaction and the table form)."""
    src = np.empty(total, dtype=np.int64)
    cnt = np.zeros(len(wids), dtype=np.int64)
    o = 0
    for i in range(len(wids)):
        e = head[wids[i]]
        while e >= 0:
            src[o] = e
            o += 1
            cnt[i] += 1
            e = nxt[e]
    return src[:o], cnt


@njit(cache=True)
def rehash(hk, hs, hv, hst, w_k, w_s, wids):
    """Insert live windows ``wids`` into an empty hash."""
    for i in range(len(wids)):
        w = wids[i]
        h_insert(hk, hs, hv, hst, w_k[w], w_s[w], w)


@njit(cache=True)
def rebuild_distinct(head, nxt, codes, wids, dk, ds, dv, dst):
    """Insert the (window, code) pairs of windows ``wids`` into an empty hash; returns how
    many."""
    n = 0
    for i in range(len(wids)):
        w = wids[i]
        e = head[w]
        while e >= 0:
            if h_find(dk, ds, dv, dst, w, codes[e]) < 0:
                h_insert(dk, ds, dv, dst, w, codes[e], 1)
                n += 1
            e = nxt[e]
    return n


@njit(cache=True)
def key_wms_met(codes, times, key_wm, delay):
    """Per record of a unit under per-key watermarks, its key's watermark as the record
    meets it (raised by that key's earlier records of the unit, as the kernel raises it).
    ``key_wm`` is moved along and put back."""
    n = len(codes)
    out = np.empty(n, dtype=np.int64)
    for r in range(n):
        k = codes[r]
        out[r] = key_wm[k]
        cand = times[r] - delay
        if cand > key_wm[k]:
            key_wm[k] = cand
    for r in range(n - 1, -1, -1):  # each key back to its first record's (the unit's start)
        key_wm[codes[r]] = out[r]
    return out
