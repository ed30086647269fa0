"""Compiled (numba) kernel of KIP-450 sliding windows that fire more than once under per-key
watermarks (``watermark.scope: key``, with or without idle advance), on one key's arrays
(``ingest_keys_scoped``: on all keys of a unit, concatenated with offsets).

The general engine runs a key's windows after each of its records (``Engine.ingest``): first
at the key's watermark as the record met it (the record's own count panes, timers, a window
born late passing), then, when the record raised that watermark, at the new one (windows it
passes or expires). Per record this is :func:`._sliding_trigger_kernels.ingest_key` on that
one record, then :func:`._sliding_trigger_fire_kernels.run_due` at the raised watermark, so every
operation is the global-watermark engine's. Held records are not pruned inside the pass: a
record the raise would prune lies only in windows that raise expired, so it joins no later
window, and the panes of the pass read their members (``P_LO``, ``P_HI``) after it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._sliding_trigger_fire_kernels import run_due
from jobs.engine.kernels._sliding_trigger_kernels import (
    P_REC,
    P_WIDTH,
    _grow,
    _tag_rows,
    _tag_values,
    _unit_tables,
    ingest_key,
)


@njit(cache=True)
def _clamp(v, far):
    return min(max(v, -far), far)


@njit(cache=True)
def _put2(dst, n, src, k):
    """``dst`` (grown) with ``src[:k]`` appended at row ``n``."""
    dst = _grow(dst, n + k)
    for i in range(k):
        dst[n + i] = src[i]
    return dst


@njit(cache=True)
def _put_wm(PM, n, k, wm, known, no_time):
    if PM.shape[0] < n + k:
        b = np.empty(max(n + k, 2 * PM.shape[0]), dtype=np.int64)
        b[:n] = PM[:n]
        PM = b
    for i in range(k):
        PM[n + i] = wm if known else no_time
    return PM


@njit(cache=True)
def ingest_key_scoped(
    times, seqs, recs, URT, URF, kinds, known, kwm, delay, event_basis, size, al,
    early_n, late_n, at_end, at_expiry, discarding, RT, RF, n_h, W, WF, n_w, born_next,
    early_tv, late_tv, far, no_time,
):
    """One key's records of a unit under its own watermark ``kwm`` (``known``: it exists).
    Returns ``ingest_key``'s outputs (the panes of both runs, each with the record that fired
    it) and ``PM`` (the watermark each pane shows, ``no_time``: none), ``GONE``/``n_g`` (the
    starts of windows that went without a pane) and the key's watermark after the unit."""
    m = len(times)
    LR = np.zeros((8, 3), dtype=np.int64)
    AR = np.zeros((8, 2), dtype=np.int64)
    PR = np.zeros((8, P_WIDTH), dtype=np.int64)
    PW = np.zeros((8, W.shape[1]), dtype=np.int64)
    PF = np.zeros((8, WF.shape[1]), dtype=np.float64)
    PM = np.zeros(8, dtype=np.int64)
    GONE = np.zeros(8, dtype=np.int64)
    n_l = n_a = n_p = n_g = 0
    for r in range(m):
        wm0 = _clamp(kwm, far) if known else 0
        (RT, RF, n_h, W, WF, n_w, born_next, lr, nl, ar, na, pr, pw, pf,
         npp) = ingest_key(times[r:r + 1], seqs[r:r + 1], recs[r:r + 1], URT[r:r + 1],
                           URF[r:r + 1], kinds, known, wm0, event_basis, size, al, True,
                           early_n, late_n, at_end, discarding, RT, RF, n_h, W, WF, n_w,
                           born_next, early_tv, late_tv)
        LR = _put2(LR, n_l, lr, nl)
        n_l += nl
        AR = _put2(AR, n_a, ar, na)
        n_a += na
        PR = _put2(PR, n_p, pr, npp)
        PW = _put2(PW, n_p, pw, npp)
        PF = _put2(PF, n_p, pf, npp)
        PM = _put_wm(PM, n_p, npp, kwm, known, no_time)
        n_p += npp
        cand = times[r] - delay
        if known and cand <= kwm:
            continue
        known = True
        kwm = cand
        n_w, pr, pw, pf, npp, gone, ng = run_due(
            True, _clamp(cand, far), False, size, al, early_n, late_n, at_end, at_expiry,
            discarding, kinds, W, WF, n_w, early_tv, late_tv, seqs[r])
        for i in range(npp):
            pr[i, P_REC] = recs[r]
        PR = _put2(PR, n_p, pr, npp)
        PW = _put2(PW, n_p, pw, npp)
        PF = _put2(PF, n_p, pf, npp)
        PM = _put_wm(PM, n_p, npp, kwm, True, no_time)
        n_p += npp
        if GONE.shape[0] < n_g + ng:
            b = np.zeros(2 * (n_g + ng), dtype=np.int64)
            b[:n_g] = GONE[:n_g]
            GONE = b
        GONE[n_g:n_g + ng] = gone[:ng]
        n_g += ng
    return (RT, RF, n_h, W, WF, n_w, born_next, LR, n_l, AR, n_a, PR, PW, PF, n_p, PM, GONE,
            n_g, known, kwm)


@njit(cache=True)
def ingest_keys_scoped(
    goff, times, seqs, recs, URT, URF, kinds, known, kwm, delay, event_basis, size, al,
    early_n, late_n, at_end, at_expiry, discarding, RT_in, RF_in, hoff, W_in, WF_in, woff,
    born, early_tv, late_tv, far, no_time,
):
    """:func:`ingest_key_scoped` for every key of a unit in one pass, laid out as
    :func:`._sliding_trigger_kernels.ingest_keys` (``known`` / ``kwm``: each key's watermark,
    updated in place with ``born``). Returns ``ingest_keys``' outputs, then ``PM`` (the
    watermark each pane shows) and ``GONE`` (start, key) of the windows that went without a
    pane."""
    nk = len(goff) - 1
    RT, RF, W, WF, ho, wo, LR, AR, PR, PW, PF, PK = _unit_tables(
        goff, hoff, woff, RT_in, RF_in, W_in, WF_in)
    PM = np.zeros(8, dtype=np.int64)
    GONE = np.zeros((8, 2), dtype=np.int64)
    n_l = n_a = n_p = n_g = 0
    for k in range(nk):
        a, b = goff[k], goff[k + 1]
        (kRT, kRF, n_h, kW, kWF, n_w, bn, kLR, kn_l, kAR, kn_a, kPR, kPW, kPF, kn_p, kPM,
         kG, kn_g, kk, kw) = ingest_key_scoped(
            times[a:b].copy(), seqs[a:b].copy(), recs[a:b].copy(), URT[a:b].copy(),
            URF[a:b].copy(), kinds, known[k], kwm[k], delay, event_basis, size, al, early_n,
            late_n, at_end, at_expiry, discarding, RT_in[hoff[k]:hoff[k + 1]],
            RF_in[hoff[k]:hoff[k + 1]], hoff[k + 1] - hoff[k],
            W_in[woff[k]:woff[k + 1]], WF_in[woff[k]:woff[k + 1]],
            woff[k + 1] - woff[k], born[k], early_tv, late_tv, far, no_time)
        born[k] = bn
        known[k] = kk
        kwm[k] = kw
        RT = _put2(RT, ho[k], kRT, n_h)
        RF = _put2(RF, ho[k], kRF, n_h)
        ho[k + 1] = ho[k] + n_h
        W = _put2(W, wo[k], kW, n_w)
        WF = _put2(WF, wo[k], kWF, n_w)
        wo[k + 1] = wo[k] + n_w
        LR = _tag_rows(LR, n_l, kLR, kn_l, k)
        n_l += kn_l
        AR = _tag_rows(AR, n_a, kAR, kn_a, k)
        n_a += kn_a
        PR = _put2(PR, n_p, kPR, kn_p)
        PW = _put2(PW, n_p, kPW, kn_p)
        PF = _put2(PF, n_p, kPF, kn_p)
        if PK.shape[0] < n_p + kn_p:
            PK2 = np.zeros(max(n_p + kn_p, 2 * PK.shape[0]), dtype=np.int64)
            PK2[:n_p] = PK[:n_p]
            PK = PK2
            PM2 = np.zeros(PK.shape[0], dtype=np.int64)
            PM2[:n_p] = PM[:n_p]
            PM = PM2
        PK[n_p:n_p + kn_p] = k
        PM[n_p:n_p + kn_p] = kPM[:kn_p]
        n_p += kn_p
        GONE = _tag_values(GONE, n_g, kG, kn_g, k)
        n_g += kn_g
    return (RT, RF, ho, W, WF, wo, LR[:n_l], n_l, AR[:n_a], n_a, PR[:n_p], PW[:n_p],
            PF[:n_p], PK[:n_p], n_p, PM[:n_p], GONE[:n_g])
