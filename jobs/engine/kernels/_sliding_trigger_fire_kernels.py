"""Compiled firing of triggered KIP-450 sliding windows (the watermark's deadlines and the
processing-time timers), on one key's arrays or, ``fire_keys``, on many keys' arrays
concatenated with offsets; layouts and window rules in :mod:`._sliding_trigger_kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._sliding_trigger_kernels import (
    EARLY,
    LATE,
    NO_TIMER,
    P_GONE,
    P_WIDTH,
    R_T,
    W_PASSED,
    W_PEND,
    W_START,
    W_TIMER,
    _add_panes,
    _emit,
    _run_window,
    _tag_values,
)
from jobs.engine.kernels._sliding_trigger_side_kernels import side_outputs


@njit(cache=True)
def fire_due(wm_known, wm0, ended, size, al, early_n, late_n, at_end, at_expiry, discarding,
             kinds, RT, RF, n_h, W, WF, n_w, early_tv, late_tv, cur, cols, distinct, n_codes):
    """The closing firing for one key (``Firing._fire`` over the key's windows):
    :func:`run_due`, then the pruning of held records (``Firing._prune_records``). Returns
    ``(n_h, n_w, PR, PW, PF, n_p, GONE, n_g, CNT, REFS)``: :func:`run_due`'s outputs and the
    side aggregations' outputs (:func:`._sliding_trigger_side_kernels.side_outputs`), read before the pruning."""
    n_w, PR, PW, PF, n_p, GONE, n_g = run_due(
        wm_known, wm0, ended, size, al, early_n, late_n, at_end, at_expiry, discarding, kinds,
        W, WF, n_w, early_tv, late_tv, cur)
    CNT, REFS = side_outputs(RT, n_h, PR, n_p if len(cols) else 0, size, cols, distinct,
                             n_codes)
    n_h = prune_held(RT, RF, n_h, wm_known, wm0, ended, size, al)
    return n_h, n_w, PR, PW, PF, n_p, GONE, n_g, CNT, REFS


@njit(cache=True)
def run_due(wm_known, wm0, ended, size, al, early_n, late_n, at_end, at_expiry, discarding,
            kinds, W, WF, n_w, early_tv, late_tv, cur):
    """Every window of one key whose deadline ``wm0`` reached (all at the end of input), in
    start order; a window not due that has pending elements and no timer starts the timer of
    its phase. Returns ``(n_w, PR, PW, PF, n_p, GONE, n_g)``: the panes (record -1) and the
    starts of the windows that went without one."""
    PR = np.zeros((8, P_WIDTH), dtype=np.int64)
    PW = np.zeros((8, W.shape[1]), dtype=np.int64)
    PF = np.zeros((8, WF.shape[1]), dtype=np.float64)
    GONE = np.zeros(max(n_w, 1), dtype=np.int64)
    n_p = n_g = 0
    keep = 0  # the surviving windows move down in one pass (no shift per removal)
    for w in range(n_w):
        close = W[w, W_START] + size + 1
        due = ended or (wm_known and wm0 >= (close + al if W[w, W_PASSED] != 0 else close))
        dead = False
        if due:
            before = n_p
            PR, PW, PF, n_p, dead = _run_window(
                W, WF, w, -1, wm_known, wm0, ended, size, al, early_n, late_n, at_end,
                at_expiry, discarding, kinds, PR, PW, PF, n_p, early_tv, late_tv, cur)
            if dead:
                if n_p > before:
                    PR[n_p - 1, P_GONE] = 1
                else:
                    GONE[n_g] = W[w, W_START]
                    n_g += 1
        elif W[w, W_PEND] > 0 and W[w, W_TIMER] == NO_TIMER:
            W[w, W_TIMER] = late_tv if W[w, W_PASSED] != 0 else early_tv
        if not dead:
            if keep != w:
                W[keep] = W[w]
                WF[keep] = WF[w]
            keep += 1
    return keep, PR, PW, PF, n_p, GONE, n_g


@njit(cache=True)
def prune_held(RT, RF, n_h, wm_known, wm0, ended, size, al):
    """Forget the held records no window needs at ``wm0`` (``Firing._prune_records``);
    returns the new ``n_h``."""
    k = 0
    while k < n_h and (ended or (wm_known and wm0 >= RT[k, R_T] + size + 2 + al)):
        k += 1
    if k:
        for i in range(k, n_h):
            RT[i - k] = RT[i]
            RF[i - k] = RF[i]
        n_h -= k
    return n_h


@njit(cache=True)
def next_deadline(W, n_w, size, al, far):
    """The smallest watermark at which one of the key's windows needs attention (``far``:
    none)."""
    d = far
    for w in range(n_w):
        close = W[w, W_START] + size + 1
        x = close + al if W[w, W_PASSED] != 0 else close
        if x < d:
            d = x
    return d


@njit(cache=True)
def fire_timers(W, WF, n_w, now, wm_known, wm0, size, discarding, kinds, cur):
    """``Firing._fire_timers`` on one key's windows: each window whose timer is due at
    ``now`` drops it and, with pending elements, fires an EARLY pane before its close, a LATE
    one after. Returns ``(PR, PW, PF, n_p)``, the pane rows in start order with the timer's
    due time as the record (the caller orders the panes of all keys)."""
    PR = np.zeros((8, P_WIDTH), dtype=np.int64)
    PW = np.zeros((8, W.shape[1]), dtype=np.int64)
    PF = np.zeros((8, WF.shape[1]), dtype=np.float64)
    n_p = 0
    for w in range(n_w):
        due = W[w, W_TIMER]
        if due > now:
            continue
        W[w, W_TIMER] = NO_TIMER
        if W[w, W_PEND] > 0:
            early = not wm_known or wm0 < W[w, W_START] + size + 1
            PR, PW, PF, n_p = _emit(W, WF, w, due, EARLY if early else LATE, 0, discarding,
                                    kinds, PR, PW, PF, n_p, cur)
    return PR, PW, PF, n_p


@njit(cache=True)
def next_timer(W, n_w):
    """The earliest timer of the key's windows (``NO_TIMER``: none)."""
    d = NO_TIMER
    for w in range(n_w):
        if W[w, W_TIMER] < d:
            d = W[w, W_TIMER]
    return d


@njit(cache=True)
def fire_keys(wk, w0, ended, size, al, early_n, late_n, at_end, at_expiry, discarding, kinds,
              RT, hoff, W, WF, woff, early_tv, late_tv, cur, far):
    """:func:`fire_due` for many keys in one pass: key ``k`` (at its watermark: known
    ``wk[k]``, ``w0[k]``) holds rows ``hoff[k]:hoff[k+1]`` of ``RT`` and ``woff[k]:woff[k+1]``
    of ``W`` / ``WF``. Each key's windows that stay move to the start of its rows (in
    place); its held records that stay are the end of its rows (pruning drops the oldest),
    ``RT`` is not changed. Returns per key the first held record that stays and the number
    of windows, the panes ``(PR, PW, PF, PK, n_p)`` (``PK``: the key of each), the windows
    that went without a pane ``GONE`` (start, key), and per key its next deadline
    (:func:`next_deadline`) and next timer (:func:`next_timer`). The side aggregations'
    members are read from ``RT`` (:func:`side_outputs_keys`)."""
    nk = len(hoff) - 1
    hlo = np.zeros(nk, dtype=np.int64)
    nw = np.zeros(nk, dtype=np.int64)
    PR = np.zeros((8, P_WIDTH), dtype=np.int64)
    PW = np.zeros((8, W.shape[1]), dtype=np.int64)
    PF = np.zeros((8, WF.shape[1]), dtype=np.float64)
    PK = np.zeros(8, dtype=np.int64)
    GONE = np.zeros((8, 2), dtype=np.int64)
    dl = np.full(nk, far, dtype=np.int64)
    tm = np.full(nk, NO_TIMER, dtype=np.int64)
    n_p = n_g = 0
    for k in range(nk):
        kW = W[woff[k]:woff[k + 1]]
        kWF = WF[woff[k]:woff[k + 1]]
        n_w, kPR, kPW, kPF, kn_p, kG, kn_g = run_due(
            wk[k], w0[k], ended, size, al, early_n, late_n, at_end, at_expiry, discarding,
            kinds, kW, kWF, woff[k + 1] - woff[k], early_tv, late_tv, cur)
        nw[k] = n_w
        i = hoff[k]
        while i < hoff[k + 1] and (ended or (wk[k] and w0[k] >= RT[i, R_T] + size + 2 + al)):
            i += 1  # prune_held's rule
        hlo[k] = i
        dl[k] = next_deadline(kW, n_w, size, al, far)
        tm[k] = next_timer(kW, n_w)
        if kn_p:
            PR, PW, PF, PK = _add_panes(PR, PW, PF, PK, n_p, kPR, kPW, kPF, kn_p, k)
            n_p += kn_p
        GONE = _tag_values(GONE, n_g, kG, kn_g, k)
        n_g += kn_g
    return hlo, nw, PR[:n_p], PW[:n_p], PF[:n_p], PK[:n_p], n_p, GONE[:n_g], dl, tm
