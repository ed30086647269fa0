"""Compiled (numba) kernels of KIP-450 sliding windows that fire more than once (count-based
early and late triggers, ON_TIME at the window end; discarding, accumulating, retracting),
on one key's arrays (:mod:`.sliding_triggers` holds them); ``ingest_keys`` runs many keys'
arrays, concatenated with offsets, in one call. The firing kernels are in
:mod:`._sliding_trigger_fire_kernels`, the side aggregations' members in
:mod:`._sliding_trigger_side_kernels`.

The rules are the general engine's (``Assigner._apply_sliding``, ``Firing._fire_window``)
under a global watermark ``wm0`` that does not move within an arrival unit:

* per record (arrival order): a record behind the watermark (event basis) joins nothing and
  is dropped from every window the held records give it; otherwise it is held, dropped if
  every window containing it has expired, else it joins (or creates, from the held records)
  each of its live windows and opens its right window ``[t+1, t+1+size]`` when that holds a
  record. With ``step`` (a count trigger: the general engine runs the key's windows after
  each record) the windows the record touched run right after it, in start order (the
  key's other windows ran after their own last change at the same watermark);
* per key whose windows' deadlines the new watermark reached (``fire_due``): each due window,
  in start order, passes (ON_TIME unless born late), expires (the pending pane) or fires its
  late count; then the held records no window needs any more are forgotten.

Layouts. A held record is a row of ``RT`` (event time, arrival sequence, then per aggregation
valid, int value, is float, object ref) and ``RF`` (float value per aggregation), sorted by
(time, sequence). A window is a row of ``W`` (``W_*`` columns, then per aggregation the
``A_*`` accumulator fields) and ``WF`` (float sum, float extreme per aggregation), sorted by
start. A pane row copies the window's rows at emission (``P_*`` columns in ``PR``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

COUNT, SUM, MIN, MAX, MEAN, FIRST, LAST, SIDE = 0, 1, 2, 3, 4, 5, 6, 7
"""Aggregation codes (``FN_CODES`` in sliding_triggers.py maps the names). ``SIDE``
(collect, count_distinct) keeps no accumulator: a pane's values are its members, the held
records :func:`._sliding_trigger_side_kernels.pane_members` lists."""
EARLY, ON_TIME, LATE = 0, 1, 2
BEFORE_WM, EXPIRED = 0, 1
"""Reasons of a dropped record's late rows."""

R_T, R_SEQ, R_AGG = 0, 1, 2
R_WIDTH = 4
"""Per aggregation in ``RT``: valid, int value, is float, object ref."""
(W_START, W_BORN, W_ELEM, W_PEND, W_EMIT, W_PASSED, W_BLATE, W_FIRST, W_LAST, W_TIMER,
 W_CUT) = range(11)
W_AGG = 11
A_CNT, A_ISUM, A_ISF, A_EI, A_EISF, A_HAS, A_OT, A_OSEQ, A_OREF = range(9)
A_WIDTH = 9
P_REC, P_START, P_TIMING, P_INDEX, P_LAST, P_GONE, P_LO, P_HI = range(8)
P_WIDTH = 8
"""A pane row: record (-1: none; a timer's pane: its due time), start, timing, pane index, is
last, the window is gone, and the arrival sequences ``(lo, hi]`` of the held records it shows
(:func:`._sliding_trigger_side_kernels.pane_members`)."""
NO_CUT = -(2**62)
"""``W_CUT`` of a window that has shown nothing yet: every member is new (the sequence of the
last record a discarding window's last pane showed, else)."""
NO_TIMER = np.iinfo(np.int64).max
"""``W_TIMER`` of a window without a processing-time timer (``WindowState.timer`` None)."""


@njit(cache=True)
def _grow(a, need):
    """``a`` with room for ``need`` rows (doubled when it grows; numba compiles one per dtype)."""
    if need <= a.shape[0]:
        return a
    b = np.zeros((max(need, 2 * a.shape[0] + 4), a.shape[1]), dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(cache=True)
def _bisect_in(A, lo, hi, col, v, after):
    """The first row of ``A[lo:hi]`` (sorted on column ``col``) whose value is at or after
    ``v``, strictly after when ``after``."""
    while lo < hi:
        mid = (lo + hi) // 2
        x = A[mid, col]
        if x < v or (after and x == v):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _bisect(A, n, col, v, after):
    """:func:`_bisect_in` on the first ``n`` rows."""
    return _bisect_in(A, 0, n, col, v, after)


@njit(cache=True)
def _starts(t, size, RT, n_h, wm_known, wm0, al, buf):
    """``sliding_starts_containing`` on the held records (records at or before the horizon
    ``wm0 - size - 2 - al`` define no window), sorted and unique, into ``buf``; returns
    ``(buf, count)``."""
    need = 1 + 2 * (n_h + 1)
    if buf.shape[0] < need:
        buf = np.empty(need, dtype=np.int64)
    m = 0
    buf[m] = t - size
    m += 1
    # right windows of the records r in [t-size-1, t-1] (ascending, all below t - size... t)
    lo = _bisect(RT, n_h, R_T, t - size - 1, False)
    hi = _bisect(RT, n_h, R_T, t, False)
    for i in range(lo, hi):
        r = RT[i, R_T]
        if not wm_known or r + size + 2 + al > wm0:
            buf[m] = r + 1
            m += 1
    n_r = m - 1
    # windows ending at the records q in [t, t+size]
    lo = _bisect(RT, n_h, R_T, t, False)
    hi = _bisect(RT, n_h, R_T, t + size, True)
    for i in range(lo, hi):
        q = RT[i, R_T]
        if not wm_known or q + size + 2 + al > wm0:
            buf[m] = q - size
            m += 1
    # three ascending runs: [t - size], the right windows, the left windows: merged in place
    # of a sort (the right windows' starts are at most t, the left ones at least t - size)
    out = buf[:m].copy()
    a, a_end = 1, 1 + n_r
    b, b_end = a_end, m
    k = 0
    last = t - size
    buf[k] = last
    k += 1
    while a < a_end or b < b_end:
        if b >= b_end or (a < a_end and out[a] <= out[b]):
            v = out[a]
            a += 1
        else:
            v = out[b]
            b += 1
        if v != last:
            buf[k] = v
            k += 1
            last = v
    return buf, k


@njit(cache=True)
def _expired(close, wm_known, wm0, al):
    return wm_known and wm0 >= close + al


@njit(cache=True)
def _clear(W, WF, w, kinds):
    for j in range(len(kinds)):
        b = W_AGG + A_WIDTH * j
        for f in range(A_WIDTH):
            W[w, b + f] = 0
        WF[w, 2 * j] = 0.0
        WF[w, 2 * j + 1] = 0.0


@njit(cache=True)
def _add(W, WF, w, RT, RF, i, kinds):
    """``Assigner._add``: held record ``i`` joins window ``w``."""
    t = RT[i, R_T]
    seq = RT[i, R_SEQ]
    for j in range(len(kinds)):
        rb = R_AGG + R_WIDTH * j
        kind = kinds[j]
        if RT[i, rb] == 0 or kind == SIDE:
            continue
        b = W_AGG + A_WIDTH * j
        vi = RT[i, rb + 1]
        visf = RT[i, rb + 2]
        vf = RF[i, j]
        if kind == COUNT:
            W[w, b + A_CNT] += 1
        elif kind == SUM or kind == MEAN:  # noqa: SIM109 (numba: no tuple membership)
            W[w, b + A_CNT] += 1
            if W[w, b + A_ISF] != 0:
                WF[w, 2 * j] += vf if visf != 0 else float(vi)
            elif visf != 0:
                WF[w, 2 * j] = float(W[w, b + A_ISUM]) + vf
                W[w, b + A_ISF] = 1
            else:
                W[w, b + A_ISUM] += vi
        elif kind == MIN or kind == MAX:  # noqa: SIM109 (numba: no tuple membership)
            if W[w, b + A_HAS] == 0:
                take = True
            else:
                cur = WF[w, 2 * j + 1] if W[w, b + A_EISF] != 0 else float(W[w, b + A_EI])
                v = vf if visf != 0 else float(vi)
                if W[w, b + A_EISF] == 0 and visf == 0:
                    take = vi < W[w, b + A_EI] if kind == MIN else W[w, b + A_EI] < vi
                else:
                    take = v < cur if kind == MIN else cur < v
            if take:
                W[w, b + A_HAS] = 1
                W[w, b + A_EI] = vi
                W[w, b + A_EISF] = visf
                WF[w, 2 * j + 1] = vf
        else:  # FIRST, LAST: [t, seq, value] by (t, seq)
            if W[w, b + A_HAS] == 0:
                take = True
            else:
                ot = W[w, b + A_OT]
                oseq = W[w, b + A_OSEQ]
                if kind == FIRST:
                    take = t < ot or (t == ot and seq < oseq)
                else:
                    take = t > ot or (t == ot and seq > oseq)
            if take:
                W[w, b + A_HAS] = 1
                W[w, b + A_OT] = t
                W[w, b + A_OSEQ] = seq
                W[w, b + A_OREF] = RT[i, rb + 3]
    W[w, W_ELEM] += 1
    W[w, W_PEND] += 1
    if W[w, W_ELEM] == 1:
        W[w, W_FIRST] = t
        W[w, W_LAST] = t
    elif t < W[w, W_FIRST]:
        W[w, W_FIRST] = t
    elif t > W[w, W_LAST]:
        W[w, W_LAST] = t


@njit(cache=True)
def _new_window(W, WF, n_w, pos, s, born, blate, size, RT, RF, n_h, kinds):
    """``Assigner._sliding_window``: window ``[s, s+size]`` at row ``pos`` holding the held
    records inside it (in their order). ``W``/``WF`` have room for one more row."""
    for r in range(n_w, pos, -1):
        W[r] = W[r - 1]
        WF[r] = WF[r - 1]
    W[pos] = 0
    WF[pos] = 0.0
    W[pos, W_TIMER] = NO_TIMER
    W[pos, W_CUT] = NO_CUT
    W[pos, W_START] = s
    W[pos, W_BORN] = born
    W[pos, W_BLATE] = blate
    lo = _bisect(RT, n_h, R_T, s, False)
    hi = _bisect(RT, n_h, R_T, s + size, True)
    for i in range(lo, hi):
        _add(W, WF, pos, RT, RF, i, kinds)


@njit(cache=True)
def _emit(W, WF, w, rec, timing, is_last, discarding, kinds, PR, PW, PF, n_p, cur):
    """``Firing._emit``: the pane row (with a copy of the window's rows), then the pane
    bookkeeping (``cur``: the sequence of the last record that arrived: the pane shows the
    members up to it, a discarding window's next pane those after it). Returns the grown
    output arrays and ``n_p``."""
    PR = _grow(PR, n_p + 1)
    PW = _grow(PW, n_p + 1)
    PF = _grow(PF, n_p + 1)
    PR[n_p, P_REC] = rec
    PR[n_p, P_START] = W[w, W_START]
    PR[n_p, P_TIMING] = timing
    PR[n_p, P_INDEX] = W[w, W_EMIT]
    PR[n_p, P_LAST] = is_last
    PR[n_p, P_GONE] = 0
    PR[n_p, P_LO] = W[w, W_CUT] if discarding else NO_CUT
    PR[n_p, P_HI] = cur
    PW[n_p] = W[w]
    PF[n_p] = WF[w]
    W[w, W_EMIT] += 1
    W[w, W_PEND] = 0
    W[w, W_TIMER] = NO_TIMER
    if discarding:
        _clear(W, WF, w, kinds)
        W[w, W_CUT] = cur
    return PR, PW, PF, n_p + 1


@njit(cache=True)
def _run_window(W, WF, w, rec, wm_known, wm0, ended, size, al, early_n, late_n, at_end,
                at_expiry, discarding, kinds, PR, PW, PF, n_p, early_tv, late_tv, cur):
    """``Firing._fire_window`` for window row ``w`` (``early_tv`` / ``late_tv``: the due time
    an early / a late timer started now gets, ``NO_TIMER`` for a part that is not processing
    time based). Returns the outputs, ``n_p`` and whether the window is gone (the caller
    removes its row)."""
    close = W[w, W_START] + size + 1
    if not ended and (not wm_known or wm0 < close):  # early phase
        if early_n > 0 and W[w, W_PEND] > 0 and W[w, W_PEND] >= early_n:
            PR, PW, PF, n_p = _emit(W, WF, w, rec, EARLY, 0, discarding, kinds, PR, PW, PF,
                                    n_p, cur)
        elif W[w, W_PEND] > 0 and W[w, W_TIMER] == NO_TIMER:
            W[w, W_TIMER] = early_tv
        return PR, PW, PF, n_p, False
    expired = ended or wm0 >= close + al
    if W[w, W_PASSED] == 0:
        W[w, W_PASSED] = 1
        W[w, W_TIMER] = NO_TIMER  # pending early timers are dropped when the window passes
        if at_end and W[w, W_BLATE] == 0:
            PR, PW, PF, n_p = _emit(W, WF, w, rec, ON_TIME, 1 if expired else 0, discarding,
                                    kinds, PR, PW, PF, n_p, cur)
            return PR, PW, PF, n_p, expired
    if expired:
        if W[w, W_PEND] > 0:
            PR, PW, PF, n_p = _emit(W, WF, w, rec, ON_TIME if at_expiry else LATE, 1,
                                    discarding, kinds, PR, PW, PF, n_p, cur)
        return PR, PW, PF, n_p, True
    if late_n > 0 and W[w, W_PEND] > 0 and W[w, W_PEND] >= late_n:
        PR, PW, PF, n_p = _emit(W, WF, w, rec, LATE, 0, discarding, kinds, PR, PW, PF, n_p,
                                cur)
    elif W[w, W_PEND] > 0 and W[w, W_TIMER] == NO_TIMER:
        W[w, W_TIMER] = late_tv
    return PR, PW, PF, n_p, False


@njit(cache=True)
def _remove_window(W, WF, n_w, w):
    for r in range(w, n_w - 1):
        W[r] = W[r + 1]
        WF[r] = WF[r + 1]
    return n_w - 1


@njit(cache=True)
def _late_row(LR, n_l, rec, s, reason):
    LR = _grow(LR, n_l + 1)
    LR[n_l, 0] = rec
    LR[n_l, 1] = s
    LR[n_l, 2] = reason
    return LR, n_l + 1


@njit(cache=True)
def ingest_key(
    times, seqs, recs, URT, URF, kinds, wm_known, wm0, event_basis, size, al, step,
    early_n, late_n, at_end, discarding, RT, RF, n_h, W, WF, n_w, born_next, early_tv, late_tv,
):
    """One key's records of a unit (``recs``: their arrival indexes; ``URT``/``URF``: their
    held-record rows). Returns ``(RT, RF, n_h, W, WF, n_w, born_next, LR, n_l, AR, n_a, PR,
    PW, PF, n_p)``: ``LR`` late rows (record, start, reason), ``AR`` accepted-late rows
    (record, start), ``PR``/``PW``/``PF`` the panes of ``step`` firing."""
    m = len(times)
    LR = np.zeros((8, 3), dtype=np.int64)
    AR = np.zeros((8, 2), dtype=np.int64)
    PR = np.zeros((8, P_WIDTH), dtype=np.int64)
    PW = np.zeros((8, W.shape[1]), dtype=np.int64)
    PF = np.zeros((8, WF.shape[1]), dtype=np.float64)
    n_l = n_a = n_p = 0
    buf = np.empty(16, dtype=np.int64)
    touched = np.empty(16, dtype=np.int64)
    for r in range(m):
        t = times[r]
        rec = recs[r]
        if event_basis and wm_known and t < wm0:
            buf, ns = _starts(t, size, RT, n_h, wm_known, wm0, al, buf)
            for i in range(ns):
                LR, n_l = _late_row(LR, n_l, rec, buf[i], BEFORE_WM)
            continue
        RT = _grow(RT, n_h + 1)
        RF = _grow(RF, n_h + 1)
        pos = _bisect(RT, n_h, R_T, t, True)  # after every held record at t: a later sequence
        for i in range(n_h, pos, -1):
            RT[i] = RT[i - 1]
            RF[i] = RF[i - 1]
        RT[pos] = URT[r]
        RF[pos] = URF[r]
        RT[pos, R_SEQ] = seqs[r]
        n_h += 1
        buf, ns = _starts(t, size, RT, n_h, wm_known, wm0, al, buf)
        gone = True
        for i in range(ns):
            if not _expired(buf[i] + size + 1, wm_known, wm0, al):
                gone = False
                break
        if gone:
            for i in range(pos, n_h - 1):
                RT[i] = RT[i + 1]
                RF[i] = RF[i + 1]
            n_h -= 1
            buf, ns = _starts(t, size, RT, n_h, wm_known, wm0, al, buf)
            for i in range(ns):
                LR, n_l = _late_row(LR, n_l, rec, buf[i], EXPIRED)
            continue
        if touched.shape[0] < ns + 1:
            touched = np.empty(2 * ns + 2, dtype=np.int64)
        n_t = 0
        w = -1  # the starts ascend: after the first search, windows are found by a walk
        for i in range(ns):
            s = buf[i]
            close = s + size + 1
            if _expired(close, wm_known, wm0, al):
                LR, n_l = _late_row(LR, n_l, rec, s, EXPIRED)
                continue
            if w < 0:
                w = _bisect(W, n_w, W_START, s, False)
            else:
                while w < n_w and W[w, W_START] < s:
                    w += 1
            if w < n_w and W[w, W_START] == s:
                _add(W, WF, w, RT, RF, pos, kinds)
            else:
                W = _grow(W, n_w + 1)
                WF = _grow(WF, n_w + 1)
                _new_window(W, WF, n_w, w, s, born_next, wm_known and wm0 >= close, size,
                            RT, RF, n_h, kinds)
                n_w += 1
                born_next += 1
            touched[n_t] = s
            n_t += 1
            w += 1
            if wm_known and wm0 >= close:
                AR = _grow(AR, n_a + 1)
                AR[n_a, 0] = rec
                AR[n_a, 1] = s
                n_a += 1
        s = t + 1
        w = _bisect(W, n_w, W_START, s, False)
        if not (w < n_w and W[w, W_START] == s) and not _expired(
                s + size + 1, wm_known, wm0, al):
            nxt = _bisect(RT, n_h, R_T, t, True)
            if nxt < n_h and RT[nxt, R_T] <= t + 1 + size:
                W = _grow(W, n_w + 1)
                WF = _grow(WF, n_w + 1)
                _new_window(W, WF, n_w, w, s, born_next, wm_known and wm0 >= s + size + 1,
                            size, RT, RF, n_h, kinds)
                n_w += 1
                born_next += 1
                touched[n_t] = s
                n_t += 1
        if step:
            w = -1
            for i in range(n_t):
                if w < 0:
                    w = _bisect(W, n_w, W_START, touched[i], False)
                else:
                    while W[w, W_START] < touched[i]:
                        w += 1
                PR, PW, PF, n_p, dead = _run_window(
                    W, WF, w, rec, wm_known, wm0, False, size, al, early_n, late_n, at_end,
                    False, discarding, kinds, PR, PW, PF, n_p, early_tv, late_tv, seqs[r])
                if dead:
                    PR[n_p - 1, P_GONE] = 1
                    n_w = _remove_window(W, WF, n_w, w)
                else:
                    w += 1
    return RT, RF, n_h, W, WF, n_w, born_next, LR, n_l, AR, n_a, PR, PW, PF, n_p


@njit(cache=True)
def _tag_rows(D, n, S, m, k):
    """``D`` (grown) with the first ``m`` rows of ``S`` appended at row ``n``, each followed by
    the key code ``k`` in ``D``'s last column: one key's rows into the all-keys table."""
    D = _grow(D, n + m)
    w = D.shape[1] - 1
    for i in range(m):
        for c in range(w):
            D[n + i, c] = S[i, c]
        D[n + i, w] = k
    return D


@njit(cache=True)
def _tag_values(D, n, v, m, k):
    """:func:`_tag_rows` for a one-column ``v``: rows ``(v[i], k)``."""
    D = _grow(D, n + m)
    for i in range(m):
        D[n + i, 0] = v[i]
        D[n + i, 1] = k
    return D


@njit(cache=True)
def _key_codes(PK, n, m, k):
    """``PK`` (grown, at least doubled) with ``m`` entries ``k`` from ``n``: the key of each
    of a key's new pane rows."""
    if PK.shape[0] < n + m:
        PK2 = np.zeros(max(n + m, 2 * PK.shape[0]), dtype=np.int64)
        PK2[:n] = PK[:n]
        PK = PK2
    PK[n:n + m] = k
    return PK


@njit(cache=True)
def _append(out, n, rows):
    """``rows`` appended to ``out``'s first ``n`` rows (grown when full)."""
    out = _grow(out, n + rows.shape[0])
    out[n:n + rows.shape[0]] = rows
    return out


@njit(cache=True)
def _unit_tables(goff, hoff, woff, RT_in, RF_in, W_in, WF_in):
    """The empty all-keys tables of a one-pass unit, sized for its keys' held records,
    windows and new records: ``(RT, RF, W, WF, ho, wo, LR, AR, PR, PW, PF, PK)``."""
    nk = len(goff) - 1
    RT = np.zeros((hoff[nk] + goff[nk], RT_in.shape[1]), dtype=np.int64)
    RF = np.zeros((hoff[nk] + goff[nk], RF_in.shape[1]), dtype=np.float64)
    W = np.zeros((woff[nk] + 2 * goff[nk] + 4, W_in.shape[1]), dtype=np.int64)
    WF = np.zeros((W.shape[0], WF_in.shape[1]), dtype=np.float64)
    ho = np.zeros(nk + 1, dtype=np.int64)
    wo = np.zeros(nk + 1, dtype=np.int64)
    LR = np.zeros((8, 4), dtype=np.int64)
    AR = np.zeros((8, 3), dtype=np.int64)
    PR = np.zeros((8, P_WIDTH), dtype=np.int64)
    PW = np.zeros((8, W_in.shape[1]), dtype=np.int64)
    PF = np.zeros((8, WF_in.shape[1]), dtype=np.float64)
    PK = np.zeros(8, dtype=np.int64)
    return RT, RF, W, WF, ho, wo, LR, AR, PR, PW, PF, PK


@njit(cache=True)
def _add_panes(PR, PW, PF, PK, n_p, kPR, kPW, kPF, kn_p, k):
    """Key ``k``'s first ``kn_p`` pane rows appended at row ``n_p`` of the all-keys pane
    tables, with their key code."""
    PR = _append(PR, n_p, kPR[:kn_p])
    PW = _append(PW, n_p, kPW[:kn_p])
    PF = _append(PF, n_p, kPF[:kn_p])
    PK = _key_codes(PK, n_p, kn_p, k)
    return PR, PW, PF, PK


@njit(cache=True)
def ingest_keys(
    goff, times, seqs, recs, URT, URF, kinds, wm_known, wm0, event_basis, size, al, step,
    early_n, late_n, at_end, discarding, RT_in, RF_in, hoff, W_in, WF_in, woff, born,
    early_tv, late_tv,
):
    """:func:`ingest_key` for every key of a unit in one pass. Key ``k``'s records are rows
    ``goff[k]:goff[k+1]`` of ``times`` ... ``URF``, its held records rows
    ``hoff[k]:hoff[k+1]`` of ``RT_in`` / ``RF_in``, its windows rows ``woff[k]:woff[k+1]`` of
    ``W_in`` / ``WF_in`` (which the pass may change), its next creation number ``born[k]``
    (updated in place). Returns the keys' new held records and windows, concatenated with
    their offsets, ``(RT, RF, hoff, W, WF, woff)``, then the late rows (record, start,
    reason, key), the accepted-late rows (record, start, key) and the panes (``PK``: the key
    of each): ``(LR, n_l, AR, n_a, PR, PW, PF, PK, n_p)``."""
    nk = len(goff) - 1
    RT, RF, W, WF, ho, wo, LR, AR, PR, PW, PF, PK = _unit_tables(
        goff, hoff, woff, RT_in, RF_in, W_in, WF_in)
    n_l = n_a = n_p = 0
    for k in range(nk):
        a, b = goff[k], goff[k + 1]
        (kRT, kRF, n_h, kW, kWF, n_w, bn, kLR, kn_l, kAR, kn_a, kPR, kPW, kPF,
         kn_p) = ingest_key(
            times[a:b].copy(), seqs[a:b].copy(), recs[a:b].copy(), URT[a:b].copy(),
            URF[a:b].copy(), kinds, wm_known, wm0, event_basis, size, al, step, early_n,
            late_n, at_end, discarding, RT_in[hoff[k]:hoff[k + 1]],
            RF_in[hoff[k]:hoff[k + 1]], hoff[k + 1] - hoff[k],
            W_in[woff[k]:woff[k + 1]], WF_in[woff[k]:woff[k + 1]],
            woff[k + 1] - woff[k], born[k], early_tv, late_tv)
        born[k] = bn
        RT = _append(RT, ho[k], kRT[:n_h])
        RF = _append(RF, ho[k], kRF[:n_h])
        ho[k + 1] = ho[k] + n_h
        W = _append(W, wo[k], kW[:n_w])
        WF = _append(WF, wo[k], kWF[:n_w])
        wo[k + 1] = wo[k] + n_w
        LR = _tag_rows(LR, n_l, kLR, kn_l, k)
        n_l += kn_l
        AR = _tag_rows(AR, n_a, kAR, kn_a, k)
        n_a += kn_a
        if kn_p:
            PR, PW, PF, PK = _add_panes(PR, PW, PF, PK, n_p, kPR, kPW, kPF, kn_p, k)
            n_p += kn_p
    return (RT, RF, ho, W, WF, wo, LR[:n_l], n_l, AR[:n_a], n_a, PR[:n_p], PW[:n_p],
            PF[:n_p], PK[:n_p], n_p)
