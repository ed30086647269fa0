"""Compiled (numba) kernels of the KIP-450 sliding engine (:mod:`.sliding`).

The held records of all keys live in one CSR layout: record arrays sorted by (key code, event
time, arrival sequence), key ``c`` holding positions ``kstart[c]:kend[c]``. A window is not an
accumulator but a start (plus its creation data): with ``emit: final`` its content is, at any
moment, exactly the held records inside ``[start, start + size]`` (a record joins every live
window containing it, a new window takes every held record inside it, and no record a live
window holds is forgotten), so its values are computed from the records when it is read.

``ingest_unit`` applies one arrival unit key by key (keys are independent within a unit), each
key's records in arrival order, and writes the new CSR order. Which windows a record creates is
decided on the held record times (the general engine's ``starts`` of a record, see
``docs/semantics.md``): its left window, the right window of the record before it, its own right
window; existence of a window follows from the held times. Work per record: a few binary
searches, plus one step per late line or accepted-late count it produces.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._sliding_search import _bl, _blb, _blt, _br, _brb, _brt

# aggregation kinds (``AGG_KINDS`` in sliding.py); the kernels test ranges: keep the order
COUNT, SUM, MIN, MAX, FIRST, LAST = 0, 1, 2, 3, 4, 5

# drop reasons
EXPIRED, BEFORE_WM = 0, 1


@njit(cache=True)
def _grow(a, n):
    out = np.empty(max(2 * len(a), n + 16), dtype=a.dtype)
    out[: len(a)] = a
    return out


@njit(cache=True)
def _starts(ot, lo, hi, t, size, horizon, limit, buf, n0):
    """Ascending distinct starts of the windows containing ``t`` defined by the held times
    ``ot[lo:hi]`` (records at or before ``horizon`` define none; ``t - size`` always), up to
    ``limit``; written to ``buf`` from position ``n0`` on (grown as needed). Returns ``(buf,
    count)``.

    The starts are ``t - size``, the left windows ``q - size`` of the held ``q`` in
    ``[t, t+size]`` and the right windows ``r + 1`` of the held ``r`` in ``[t-size-1, t-1]``:
    two ascending runs of the slice, whose bounds (horizon, limit) are searched once, then
    merged without a test per step beyond the merge's own."""
    qa = _blt(ot, lo, hi, t)
    qb = _brt(ot, lo, hi, t + size)
    ra = _blb(ot, lo, hi, t - size - 1)
    rb = qa
    if horizon >= t - size - 1:  # the held times at or before it are a prefix of the slice
        h = _brb(ot, lo, hi, horizon)
        qa = max(qa, h)
        ra = max(ra, h)
    if limit < t:  # q - size <= limit and r + 1 <= limit
        qb = min(qb, _brt(ot, lo, hi, limit + size))
        rb = min(rb, _brt(ot, lo, hi, limit - 1))
    need = n0 + 1 + max(qb - qa, 0) + max(rb - ra, 0)
    if need > len(buf):
        buf = _grow(buf, need)
    n = n0
    last = np.int64(-(2**62) - 1)
    s0 = t - size
    if s0 <= limit:
        buf[n] = s0
        n += 1
        last = s0
    i, j = qa, ra
    while i < qb and j < rb:
        sq = ot[i] - size
        sr = ot[j] + 1
        if sq <= sr:
            s = sq
            i += 1
        else:
            s = sr
            j += 1
        if s != last:
            buf[n] = s
            n += 1
            last = s
    while i < qb:
        s = ot[i] - size
        i += 1
        if s != last:
            buf[n] = s
            n += 1
            last = s
    while j < rb:
        s = ot[j] + 1
        j += 1
        if s != last:
            buf[n] = s
            n += 1
            last = s
    return buf, n - n0


@njit(cache=True, inline="always")
def _has_at(ot, lo, hi, x, bottom):
    i = _blb(ot, lo, hi, x) if bottom else _blt(ot, lo, hi, x)
    return i < hi and ot[i] == x


@njit(cache=True)
def ingest_unit(
    n_keys, kstart, kend, st_t, order, codes, times, seq0,
    event_basis, r_known, r_wm0, r_horizon, r_hz1, r_cl, size,
):
    """Apply one unit's records (``order``: positions grouped by key code, arrival order within
    a key) to the held records ``st_t`` (CSR by ``kstart``/``kend``).

    The watermark each record meets, as arrays of one entry (the same for every record) or
    one per unit record (``watermark.scope: key``: the key's watermark as the key's earlier
    records left it): whether it is known, its value, ``horizon`` (records at or before it
    define no window), ``hz1`` (a start ``s <= hz1`` is expired) and ``cl`` (``s <= cl`` is
    closed); all -2**62 while the watermark is minus infinity.
    Returns ``(perm, nkstart, nkend, out_t, win_start, win_key, win_blate, win_cseq,
    drop_start, drop_rec, drop_off, drop_reason, acc_start, acc_rec, acc_off)``: ``perm``
    holds, for the new CSR, ids into the old held records (``< len(st_t)``) or ``len(st_t) + i``
    for unit record ``i``; the windows created, in creation order per key; the late lines'
    starts and the accepted-late pairs' starts, as runs of one record each (its ascending
    starts): run ``r`` is record ``*_rec[r]`` with starts ``*_start[*_off[r]:*_off[r+1]]``
    (and, for late lines, reason ``drop_reason[r]``), so no per-line record or reason column
    is written."""
    S = len(st_t)
    n = len(times)
    total = 0
    for c in range(n_keys):
        total += kend[c] - kstart[c]
    total += n
    perm = np.empty(total, dtype=np.int64)
    out_t = np.empty(total, dtype=np.int64)
    nkstart = np.zeros(n_keys, dtype=np.int64)
    nkend = np.zeros(n_keys, dtype=np.int64)
    win_start = np.empty(16, dtype=np.int64)
    win_key = np.empty(16, dtype=np.int64)
    win_blate = np.empty(16, dtype=np.bool_)
    win_cseq = np.empty(16, dtype=np.int64)
    n_win = 0
    drop_start = np.empty(64, dtype=np.int64)
    n_drop = 0
    drop_rec = np.empty(16, dtype=np.int64)
    drop_off = np.zeros(17, dtype=np.int64)
    drop_reason = np.empty(16, dtype=np.int8)
    n_drun = 0
    acc_start = np.empty(64, dtype=np.int64)
    n_acc = 0
    acc_rec = np.empty(16, dtype=np.int64)
    acc_off = np.zeros(17, dtype=np.int64)
    n_arun = 0
    pos = 0  # write position in the new CSR
    p = 0  # position in order
    for c in range(n_keys):
        lo = pos
        for x in range(kstart[c], kend[c]):
            perm[pos] = x
            out_t[pos] = st_t[x]
            pos += 1
        hi = pos
        while p < n and codes[order[p]] == c:
            i = order[p]
            p += 1
            t = times[i]
            ix = i if len(r_wm0) > 1 else 0
            wm_known = r_known[ix]
            wm0 = r_wm0[ix]
            horizon = r_horizon[ix]
            hz1 = r_hz1[ix]
            cl = r_cl[ix]
            seq = seq0 + i
            limit = np.int64(2**62)
            reason = -1
            if event_basis and wm_known and t < wm0:
                reason = BEFORE_WM
            elif t - size <= hz1:
                # every window expired: the record has no effect (its late lines only); the
                # latest start mx is >= t - size, so this needs t - size <= hz1
                mx = t - size
                qb = _brt(out_t, lo, hi, t + size) - 1
                if (qb >= lo and out_t[qb] >= t and out_t[qb] > horizon
                        and out_t[qb] - size > mx):
                    mx = out_t[qb] - size
                rb = _blt(out_t, lo, hi, t) - 1
                if (rb >= lo and out_t[rb] >= t - size - 1 and out_t[rb] > horizon
                        and out_t[rb] + 1 > mx):
                    mx = out_t[rb] + 1
                if mx <= hz1:
                    reason = EXPIRED
            if reason >= 0:
                drop_start, k = _starts(out_t, lo, hi, t, size, horizon, limit, drop_start,
                                        n_drop)
                if k:
                    if n_drun + 1 >= len(drop_rec):
                        drop_rec = _grow(drop_rec, n_drun)
                        drop_reason = _grow(drop_reason, n_drun)
                        drop_off = _grow(drop_off, n_drun + 1)
                    drop_rec[n_drun] = i
                    drop_reason[n_drun] = reason
                    n_drop += k
                    n_drun += 1
                    drop_off[n_drun] = n_drop
                continue
            # windows to create, decided on the held times before this record; ``at`` (first
            # held time > t) and ``pb`` (last < t) answer most of the existence tests
            at = _brt(out_t, lo, hi, t)
            pb = _blt(out_t, lo, at, t) - 1
            held_t = pb + 1 < at  # a record held at t
            # [t-size, t] exists iff a record is held at t, or at t-size-1 with one in
            # (t-size-1, t]: the newest held time below t (or t itself) is that one
            make_left = (t - size > hz1 and not held_t
                         and not (pb >= lo and out_t[pb] > t - size - 1
                                  and _has_at(out_t, lo, hi, t - size - 1, True)))
            make_pred = False
            pred = np.int64(0)
            if pb >= lo:
                pred = out_t[pb]
                # [pred+1, pred+1+size] exists iff a held time lies in (pred, pred+1+size]
                # (a record at pred+1+size is one): the first held time above pred is at pb+1
                make_pred = (pred >= t - size - 1 and pred > horizon
                             and not (pb + 1 < hi and out_t[pb + 1] <= pred + 1 + size))
            make_right = (
                t + 1 > hz1 and not held_t and at < hi and out_t[at] <= t + 1 + size
                and not _has_at(out_t, at, hi, t + 1 + size, True)
            )
            # hold the record (after equal times: (t, seq) order)
            for x in range(hi, at, -1):
                perm[x] = perm[x - 1]
                out_t[x] = out_t[x - 1]
            perm[at] = S + i
            out_t[at] = t
            hi += 1
            pos += 1
            # late lines of expired windows, accepted-late counts of closed ones
            if t - size <= cl:  # every start is >= t - size: none closed otherwise
                # ascending starts: the expired ones (late lines), then the closed ones
                drop_start, k = _starts(out_t, lo, hi, t, size, horizon, cl, drop_start, n_drop)
                k1 = 0
                while k1 < k and drop_start[n_drop + k1] <= hz1:
                    k1 += 1
                if k > k1:
                    if n_acc + (k - k1) > len(acc_start):
                        acc_start = _grow(acc_start, n_acc + (k - k1))
                    acc_start[n_acc: n_acc + (k - k1)] = drop_start[n_drop + k1: n_drop + k]
                    if n_arun + 1 >= len(acc_rec):
                        acc_rec = _grow(acc_rec, n_arun)
                        acc_off = _grow(acc_off, n_arun + 1)
                    acc_rec[n_arun] = i
                    n_acc += k - k1
                    n_arun += 1
                    acc_off[n_arun] = n_acc
                if k1:
                    if n_drun + 1 >= len(drop_rec):
                        drop_rec = _grow(drop_rec, n_drun)
                        drop_reason = _grow(drop_reason, n_drun)
                        drop_off = _grow(drop_off, n_drun + 1)
                    drop_rec[n_drun] = i
                    drop_reason[n_drun] = EXPIRED
                    n_drop += k1
                    n_drun += 1
                    drop_off[n_drun] = n_drop
            # creation, in the general engine's order (ascending starts, then the right one)
            for kind in range(3):
                if kind == 0:
                    if not make_left:
                        continue
                    s = t - size
                elif kind == 1:
                    if not make_pred or (make_left and pred + 1 == t - size):
                        continue
                    s = pred + 1
                else:
                    if not make_right:
                        continue
                    s = t + 1
                if n_win + 1 >= len(win_start):
                    win_start = _grow(win_start, n_win)
                    win_key = _grow(win_key, n_win)
                    win_blate = _grow(win_blate, n_win)
                    win_cseq = _grow(win_cseq, n_win)
                win_start[n_win] = s
                win_key[n_win] = c
                win_blate[n_win] = s <= cl
                win_cseq[n_win] = seq
                n_win += 1
        nkstart[c] = lo
        nkend[c] = hi
    return (perm[:pos], nkstart, nkend, out_t[:pos], win_start[:n_win], win_key[:n_win],
            win_blate[:n_win], win_cseq[:n_win], drop_start[:n_drop], drop_rec[:n_drun],
            drop_off[:n_drun + 1], drop_reason[:n_drun], acc_start[:n_acc], acc_rec[:n_arun],
            acc_off[:n_arun + 1])


@njit(cache=True)
def merge_due(ae, aslot, be, bslot):
    """Two deadline runs, each sorted by deadline, merged into one (stable: ``a`` first on
    ties)."""
    na = len(ae)
    nb = len(be)
    oe = np.empty(na + nb, dtype=np.int64)
    os_ = np.empty(na + nb, dtype=np.int64)
    i = 0
    j = 0
    k = 0
    while i < na and j < nb:
        if be[j] < ae[i]:
            oe[k] = be[j]
            os_[k] = bslot[j]
            j += 1
        else:
            oe[k] = ae[i]
            os_[k] = aslot[i]
            i += 1
        k += 1
    while i < na:
        oe[k] = ae[i]
        os_[k] = aslot[i]
        i += 1
        k += 1
    while j < nb:
        oe[k] = be[j]
        os_[k] = bslot[j]
        j += 1
        k += 1
    return oe, os_


@njit(cache=True)
def pop_due(wm, ended, size, al, wstart, wkey, wpassed, used, key_nwin, free, n_free,
            cexp, cslot, xexp, xslot, visited):
    """The general engine's deadlines without a heap: a window is due at its close (it then
    passes and waits for close + allowed lateness) and at its expiry (it fires and is freed).
    ``cexp``/``cslot`` are the windows not yet passed, sorted by close; ``xexp``/``xslot`` the
    passed ones, sorted by expiry. Both are consumed from the front (sequential reads); the
    windows a call passes join the expiry run in close order, which is their expiry order.
    Marks the keys of every window popped in ``visited``; returns ``(expired slots, n_free,
    closes consumed, new expiry run, its slots)`` (the slots' data stays until reused). The
    panes are put in emission order afterwards, so the order of pops is not observable."""
    out = np.empty(16, dtype=np.int64)
    m = 0
    nc = len(cexp)
    pe = np.empty(16, dtype=np.int64)
    ps = np.empty(16, dtype=np.int64)
    npend = 0
    i = 0
    while i < nc and (ended or cexp[i] <= wm):
        w = cslot[i]
        i += 1
        if not used[w]:
            continue
        visited[wkey[w]] = True
        close = wstart[w] + size + 1
        wpassed[w] = True
        if not ended and close + al > wm:
            if npend == len(pe):
                pe = _grow(pe, npend)
                ps = _grow(ps, npend)
            pe[npend] = close + al
            ps[npend] = w
            npend += 1
            continue
        if m == len(out):
            out = _grow(out, m)
        out[m] = w
        m += 1
        used[w] = False
        key_nwin[wkey[w]] -= 1
        free[n_free] = w
        n_free += 1
    nx = len(xexp)
    j = 0
    while j < nx and (ended or xexp[j] <= wm):
        w = xslot[j]
        j += 1
        if not used[w]:
            continue
        visited[wkey[w]] = True
        if m == len(out):
            out = _grow(out, m)
        out[m] = w
        m += 1
        used[w] = False
        key_nwin[wkey[w]] -= 1
        free[n_free] = w
        n_free += 1
    ne, ns = merge_due(xexp[j:], xslot[j:], pe[:npend], ps[:npend])
    return out[:m], n_free, i, ne, ns


@njit(cache=True)
def prune(keys, kstart, kend, rt, wm, ended, size, al):
    """Forget the held records of ``keys`` that no live or future window needs (the general
    engine's ``_prune_records``: t + size + 2 + allowed lateness <= watermark)."""
    for c in keys:
        a = kstart[c]
        while a < kend[c] and (ended or rt[a] + size + 2 + al <= wm):
            a += 1
        kstart[c] = a


@njit(cache=True)
def window_values(slots, at, wstart, wkey, wcseq, kstart, kend, rt, rseq, kinds, valid, vi,
                  vf, isf, pc, pi, pf, size, lim):
    """Bounds, element count and per-aggregation accumulator of each window in ``slots``,
    from the held records inside it. Sums of int inputs (and counts) come from the prefix
    sums ``pc`` (valid count), ``pi`` (int sum, modulo 2**64: exact for any sum that fits),
    ``pf`` (float count); a window holding a float input folds its inputs in the general
    engine's order (the records it was created with, by event time, then later ones by
    arrival) so float results are bit-identical. Given ``slots`` by key and start, the
    records are read sequentially (each search goes on from the key's previous window); the
    results of ``slots[i]`` go to position ``at[i]``. ``lim`` (empty, or one per slot): window
    ``slots[i]`` holds only the records with a sequence number up to ``lim[i]`` (read by a
    scan of its records when one of them arrived later). The first / last record's time,
    sequence and position (``ot``, ``oseq``, ``oidx``) have a column per window only when
    ``kinds`` has first or last (none otherwise)."""
    W = len(slots)
    m = len(kinds)
    first_t = np.zeros(W, dtype=np.int64)
    last_t = np.zeros(W, dtype=np.int64)
    elements = np.zeros(W, dtype=np.int64)
    cnt = np.zeros((m, W), dtype=np.int64)
    osum = np.zeros((m, W), dtype=np.int64)
    ofs = np.zeros((m, W), dtype=np.float64)
    oisf = np.zeros((m, W), dtype=np.bool_)
    has = np.zeros((m, W), dtype=np.bool_)
    # the record of first / last (its time, sequence, position): only for those kinds
    wo = 0
    for j in range(m):
        if kinds[j] >= FIRST:
            wo = W
    ot = np.zeros((m, wo), dtype=np.int64)
    oseq = np.zeros((m, wo), dtype=np.int64)
    oidx = np.full((m, wo), -1, dtype=np.int64)
    ordered = np.empty(16, dtype=np.int64)
    pc_ = np.int64(-1)
    ps_ = np.int64(0)
    a = np.int64(0)
    b = np.int64(0)
    for qq in range(W):
        w = slots[qq]
        q = at[qq]
        c = wkey[w]
        s = wstart[w]
        if c == pc_ and s >= ps_:  # the key's next window: search on from the last one
            a = _blb(rt, a, kend[c], s)
            b = _brb(rt, b, kend[c], s + size)
        else:
            a = _bl(rt, kstart[c], kend[c], s)
            b = _br(rt, kstart[c], kend[c], s + size)
        pc_ = c
        ps_ = s
        lw = lim[qq] if len(lim) else np.int64(2**62)
        cut = False
        if lw < 2**62:
            for x in range(a, b):
                if rseq[x] > lw:
                    cut = True
                    break
        if cut:
            n_in = 0
            for x in range(a, b):
                if rseq[x] <= lw:
                    if n_in == 0:
                        first_t[q] = rt[x]
                    last_t[q] = rt[x]
                    n_in += 1
            elements[q] = n_in
        else:
            lw = np.int64(2**62)
            elements[q] = b - a
            if b > a:
                first_t[q] = rt[a]
                last_t[q] = rt[b - 1]
        cs = wcseq[w]
        made = False
        n_ord = 0
        for j in range(m):
            kind = kinds[j]
            if cut:
                k_ = 0
                for x in range(a, b):
                    if valid[j, x] and rseq[x] <= lw:
                        k_ += 1
                cnt[j, q] = k_
            else:
                cnt[j, q] = pc[j, b] - pc[j, a]
            if kind == COUNT:
                continue
            if kind >= FIRST:
                if kind == FIRST:
                    x = a
                    while x < b and not (valid[j, x] and rseq[x] <= lw):
                        x += 1
                    if x < b:
                        has[j, q] = True
                        oidx[j, q] = x
                else:
                    x = b - 1
                    while x >= a and not (valid[j, x] and rseq[x] <= lw):
                        x -= 1
                    if x >= a:
                        has[j, q] = True
                        oidx[j, q] = x
                if has[j, q]:
                    ot[j, q] = rt[oidx[j, q]]
                    oseq[j, q] = rseq[oidx[j, q]]
                continue
            floats = pf[j, b] - pf[j, a]
            if kind == SUM and floats == 0:
                if cut:
                    for x in range(a, b):
                        if valid[j, x] and rseq[x] <= lw:
                            osum[j, q] += vi[j, x]
                else:
                    osum[j, q] = pi[j, b] - pi[j, a]
                continue
            if floats == 0:  # min / max of ints: any order gives the same value
                for x in range(a, b):
                    if valid[j, x] and rseq[x] <= lw:
                        v = vi[j, x]
                        if not has[j, q] or (v < osum[j, q] if kind == MIN else osum[j, q] < v):
                            has[j, q] = True
                            osum[j, q] = v
                continue
            if not made:  # the general engine's order of additions
                made = True
                if len(ordered) < b - a:
                    ordered = np.empty(2 * (b - a), dtype=np.int64)
                later = 0
                for x in range(a, b):
                    if rseq[x] > cs and rseq[x] <= lw:
                        later += 1
                lat = np.empty(later, dtype=np.int64)
                k0 = 0
                k1 = 0
                for x in range(a, b):
                    if rseq[x] > lw:
                        continue
                    if rseq[x] > cs:
                        lat[k1] = x
                        k1 += 1
                    else:
                        ordered[k0] = x
                        k0 += 1
                srt = np.argsort(rseq[lat])
                for y in range(later):
                    ordered[k0 + y] = lat[srt[y]]
                n_ord = k0 + later
            for y in range(n_ord):
                x = ordered[y]
                if not valid[j, x]:
                    continue
                if kind == SUM:
                    if oisf[j, q]:
                        ofs[j, q] += vf[j, x] if isf[j, x] else np.float64(vi[j, x])
                    elif isf[j, x]:
                        ofs[j, q] = np.float64(osum[j, q]) + vf[j, x]
                        oisf[j, q] = True
                    else:
                        osum[j, q] += vi[j, x]
                    continue
                if not has[j, q]:
                    take = True
                elif isf[j, x] or oisf[j, q]:
                    va = vf[j, x] if isf[j, x] else np.float64(vi[j, x])
                    vb = ofs[j, q] if oisf[j, q] else np.float64(osum[j, q])
                    take = bool(va < vb) if kind == MIN else bool(vb < va)
                else:
                    take = bool(vi[j, x] < osum[j, q]) if kind == MIN else bool(
                        osum[j, q] < vi[j, x])
                if take:
                    has[j, q] = True
                    oisf[j, q] = isf[j, x]
                    osum[j, q] = vi[j, x]
                    ofs[j, q] = vf[j, x]
    return first_t, last_t, elements, cnt, osum, ofs, oisf, has, ot, oseq, oidx
