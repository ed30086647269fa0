"""Compiled (numba) kernels of the session engine: one pass over an arrival unit's records in
arrival order, and the scan for windows a watermark expires.

The state is a struct of arrays indexed by a window *slot* (see :mod:`.session`); each key's
open sessions form a singly linked list (``key_head`` / ``nxt``), freed slots a stack. The
arithmetic of every aggregate follows :mod:`jobs.engine.aggregates` operation by operation
(Python's int/float rules for ``sum``: an int accumulator turns float at its first float
input; merges add the replaced windows in start order, then the record), so float results
are bit-identical to the general engine's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# aggregation kinds (``AGG_KINDS`` in session.py maps function names to these)
COUNT, SUM, MIN, MAX, FIRST, LAST = 0, 1, 2, 3, 4, 5  # the kernels test ranges: keep the order

# per-record outcome of ``ingest_unit``
JOINED, DROPPED_BEFORE_WM, DROPPED_EXPIRED, ACCEPTED_LATE = 0, 1, 2, 3


@njit(cache=True, inline="always")
def _add_value(kind, j, w, vf, vi, visf, t, seq, ref, cnt, isum, fsum, isf, ei, ef, eisf, has,
               ot, oseq, oref):
    """One non-null input into accumulator ``j`` of window slot ``w``: its number (``vf`` /
    ``vi`` / ``visf``), or for first/last its order ``(t, seq)`` and value reference."""
    cnt[j, w] += 1
    if kind == SUM:
        if isf[j, w]:
            fsum[j, w] += vf if visf else np.float64(vi)
        elif visf:
            fsum[j, w] = np.float64(isum[j, w]) + vf
            isf[j, w] = True
        else:
            isum[j, w] += vi
    elif kind >= FIRST:  # first or last
        if not has[j, w]:
            take = True
        elif kind == FIRST:
            take = t < ot[j, w] or (t == ot[j, w] and seq < oseq[j, w])
        else:
            take = t > ot[j, w] or (t == ot[j, w] and seq > oseq[j, w])
        if take:
            has[j, w] = True
            ot[j, w] = t
            oseq[j, w] = seq
            oref[j, w] = ref
    elif kind >= MIN:  # min or max (first and last are above)
        if not has[j, w]:
            take = True
        elif visf or eisf[j, w]:
            a = vf if visf else np.float64(vi)
            b = ef[j, w] if eisf[j, w] else np.float64(ei[j, w])
            take = bool(a < b) if kind == MIN else bool(b < a)
        else:
            take = bool(vi < ei[j, w]) if kind == MIN else bool(ei[j, w] < vi)
        if take:
            has[j, w] = True
            eisf[j, w] = visf
            ei[j, w] = vi
            ef[j, w] = vf


@njit(cache=True, inline="always")
def _merge_into(kind, j, a, b, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref):
    """Accumulator ``j`` of slot ``a`` := merge(a, b) (``aggregates.merge``)."""
    cnt[j, a] += cnt[j, b]
    if kind == SUM:
        if isf[j, a]:
            fsum[j, a] += fsum[j, b] if isf[j, b] else np.float64(isum[j, b])
        elif isf[j, b]:
            fsum[j, a] = np.float64(isum[j, a]) + fsum[j, b]
            isf[j, a] = True
        else:
            isum[j, a] += isum[j, b]
    elif kind != COUNT and has[j, b]:  # min, max, first, last
        _add_value(kind, j, a, ef[j, b], ei[j, b], eisf[j, b], ot[j, b], oseq[j, b], oref[j, b],
                   cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
        cnt[j, a] -= 1  # _add_value counted it; cnt already holds b's


@njit(cache=True)
def _clear(w, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref):
    for j in range(n_aggs):
        cnt[j, w] = 0
        isum[j, w] = 0
        fsum[j, w] = 0.0
        isf[j, w] = False
        ei[j, w] = 0
        ef[j, w] = 0.0
        eisf[j, w] = False
        has[j, w] = False
        ot[j, w] = 0
        oseq[j, w] = 0
        oref[j, w] = -1


@njit(cache=True)
def _heap_push(hexp, hslot, hborn, hn, exp, slot, b):
    """Push (expiry, slot, born) on the min-heap of window expiries; returns its new size."""
    i = hn
    while i > 0:
        parent = (i - 1) // 2
        if hexp[parent] <= exp:
            break
        hexp[i], hslot[i], hborn[i] = hexp[parent], hslot[parent], hborn[parent]
        i = parent
    hexp[i], hslot[i], hborn[i] = exp, slot, b
    return hn + 1


@njit(cache=True)
def _heap_pop(hexp, hslot, hborn, hn):
    """Remove the top entry of the heap of size ``hn``; returns the new size."""
    hn -= 1
    exp, slot, b = hexp[hn], hslot[hn], hborn[hn]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= hn:
            break
        if c + 1 < hn and hexp[c + 1] < hexp[c]:
            c += 1
        if hexp[c] >= exp:
            break
        hexp[i], hslot[i], hborn[i] = hexp[c], hslot[c], hborn[c]
        i = c
    if hn > 0:
        hexp[i], hslot[i], hborn[i] = exp, slot, b
    return hn


@njit(cache=True)
def ingest_unit(
    codes, times, seq0, valid, vf, vi, visf, vref, kinds,
    wm0, wm_known, event_basis, gap, al,
    key_head, nxt, wkey, first, last, elements, born, blate, used, free, n_free, born_next,
    cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
    status, out_start, out_end, key_nwin, hexp, hslot, hborn, hn,
):
    """Apply one arrival unit's records (arrival order) to the sessions of their keys,
    judging each against ``wm0`` (the global watermark before the unit; ``wm_known`` false
    is minus infinity). Fills ``status`` / ``out_start`` / ``out_end`` per record (the window
    a dropped record missed, or the already-closed window an accepted-late record joined).
    Every new window goes on the expiry heap (``hexp``/``hslot``/``hborn``, size ``hn``). The
    caller guarantees free slots and heap room for one new window per record. Returns
    ``(n_free, born_next, hn)``."""
    n = len(times)
    n_aggs = len(kinds)
    hits = np.empty(64, dtype=np.int64)
    for r in range(n):
        k = codes[r]
        t = times[r]
        if event_basis and wm_known and t < wm0:
            status[r] = DROPPED_BEFORE_WM
            out_start[r] = t
            out_end[r] = t + gap
            continue
        nh = 0
        w = key_head[k]
        while w >= 0:
            if first[w] < t + gap and t < last[w] + gap:
                if nh == len(hits):
                    bigger = np.empty(2 * nh, dtype=np.int64)
                    bigger[:nh] = hits
                    hits = bigger
                hits[nh] = w
                nh += 1
            w = nxt[w]
        if nh == 0:
            close = t + gap
            if wm_known and wm0 >= close + al:
                status[r] = DROPPED_EXPIRED
                out_start[r] = t
                out_end[r] = close
                continue
            n_free -= 1
            w = free[n_free]
            _clear(w, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
            used[w] = True
            wkey[w] = k
            blate[w] = wm_known and wm0 >= close
            first[w] = t
            last[w] = t
            elements[w] = 0
            born[w] = born_next
            hn = _heap_push(hexp, hslot, hborn, hn, close + al, w, born_next)
            born_next += 1
            nxt[w] = key_head[k]
            key_head[k] = w
            key_nwin[k] += 1
        elif nh == 1 and first[hits[0]] <= t and t <= last[hits[0]]:
            w = hits[0]
        else:
            # a new window replacing the hits: their accumulators folded in start order
            hs = hits[:nh].copy()
            order = np.argsort(first[hs])
            hs = hs[order]
            n_free -= 1
            w = free[n_free]
            _clear(w, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
            used[w] = True
            lo = t
            hi = t
            tot = 0
            for h in hs:
                if first[h] < lo:
                    lo = first[h]
                if last[h] > hi:
                    hi = last[h]
                tot += elements[h]
            # first hit's accumulators are copied, the others merged into them
            h0 = hs[0]
            for j in range(n_aggs):
                cnt[j, w] = cnt[j, h0]
                isum[j, w] = isum[j, h0]
                fsum[j, w] = fsum[j, h0]
                isf[j, w] = isf[j, h0]
                ei[j, w] = ei[j, h0]
                ef[j, w] = ef[j, h0]
                eisf[j, w] = eisf[j, h0]
                has[j, w] = has[j, h0]
                ot[j, w] = ot[j, h0]
                oseq[j, w] = oseq[j, h0]
                oref[j, w] = oref[j, h0]
            for i in range(1, nh):
                for j in range(n_aggs):
                    _merge_into(kinds[j], j, w, hs[i], cnt, isum, fsum, isf, ei, ef, eisf, has,
                                ot, oseq, oref)
            wkey[w] = k
            blate[w] = wm_known and wm0 >= hi + gap
            first[w] = lo
            last[w] = hi
            elements[w] = tot
            born[w] = born_next
            hn = _heap_push(hexp, hslot, hborn, hn, hi + gap + al, w, born_next)
            born_next += 1
            # unlink the hits, free their slots, link the new window
            for h in hs:
                prev = -1
                c = key_head[k]
                while c != h:
                    prev = c
                    c = nxt[c]
                if prev < 0:
                    key_head[k] = nxt[h]
                else:
                    nxt[prev] = nxt[h]
                used[h] = False
                free[n_free] = h
                n_free += 1
            nxt[w] = key_head[k]
            key_head[k] = w
            key_nwin[k] += 1 - nh
        # the record joins w
        for j in range(n_aggs):
            if valid[j, r]:
                _add_value(kinds[j], j, w, vf[j, r], vi[j, r], visf[j, r], t, seq0 + r,
                           vref[j, r], cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
        elements[w] += 1
        if t < first[w]:
            first[w] = t
        elif t > last[w]:
            last[w] = t
        if wm_known and wm0 >= last[w] + gap:
            status[r] = ACCEPTED_LATE
            out_start[r] = first[w]
            out_end[r] = last[w] + gap
        else:
            status[r] = JOINED
    return n_free, born_next, hn


@njit(cache=True)
def expired_slots(wm, ended, used, born, wkey, key_head, nxt, key_nwin, free, n_free,
                  hexp, hslot, hborn, hn):
    """Unlink and free every window that ``wm`` expires (all of them once ``ended``), popped
    from the expiry heap (entries of windows a merge replaced are skipped); returns
    ``(slots, n_free, hn)`` with the expired slots (their data is kept until reused)."""
    out = np.empty(hn, dtype=np.int64)
    m = 0
    while hn > 0 and (ended or hexp[0] <= wm):
        w = hslot[0]
        if used[w] and born[w] == hborn[0]:
            out[m] = w
            m += 1
        hn = _heap_pop(hexp, hslot, hborn, hn)
    for i in range(m):
        h = out[i]
        k = wkey[h]
        prev = -1
        c = key_head[k]
        while c != h:
            prev = c
            c = nxt[c]
        if prev < 0:
            key_head[k] = nxt[h]
        else:
            nxt[prev] = nxt[h]
        used[h] = False
        key_nwin[k] -= 1
        free[n_free] = h
        n_free += 1
    return out[:m], n_free, hn
