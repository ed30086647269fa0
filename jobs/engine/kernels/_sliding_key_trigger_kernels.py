"""Compiled (numba) kernel of KIP-450 sliding windows that fire more than once under per-key
watermarks (``watermark.scope: key``, with or without idle advance), on one key's arrays.

The general engine runs a key's windows after each of its records (``Engine.ingest``): first
at the key's watermark as the record met it (the record's own count panes, timers, a window
born late passing), then, when the record raised that watermark, at the new one (windows it
passes or expires). Per record this is :func:`._sliding_trigger_kernels.ingest_key` on that
one record, then :func:`._sliding_trigger_kernels.run_due` at the raised watermark, so every
operation is the global-watermark engine's. Held records are not pruned inside the pass: a
record the raise would prune lies only in windows that raise expired, so it joins no later
window, and the panes of the pass read their members (``P_LO``, ``P_HI``) after it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._sliding_trigger_kernels import (
    P_REC,
    P_WIDTH,
    _grow,
    ingest_key,
    run_due,
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
