"""Compiled members of triggered KIP-450 sliding panes for ``collect`` / ``count_distinct``:
a pane's values are the held records it shows (``P_LO``, ``P_HI`` of its row); layouts in
:mod:`._sliding_trigger_kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._sliding_trigger_kernels import (
    P_HI,
    P_LO,
    P_START,
    R_SEQ,
    R_T,
    _bisect,
    _bisect_in,
)


@njit(cache=True)
def pane_members(RT, n_h, PR, n_p, size):
    """The held records each of the first ``n_p`` pane rows shows: those inside its window
    whose arrival sequence is in ``(P_LO, P_HI]`` (what the general engine's accumulator
    received since the window's last reset, in (time, sequence) order as ``collect`` keeps
    them). Returns ``(MP, MR)``: the pane of each member (by pane, then record) and a copy of
    its ``RT`` row (later passes move or prune the held records)."""
    lo = np.empty(n_p, dtype=np.int64)
    hi = np.empty(n_p, dtype=np.int64)
    total = 0
    for p in range(n_p):
        s = PR[p, P_START]
        lo[p] = _bisect(RT, n_h, R_T, s, False)
        hi[p] = _bisect(RT, n_h, R_T, s + size, True)
        for i in range(lo[p], hi[p]):
            q = RT[i, R_SEQ]
            if PR[p, P_LO] < q <= PR[p, P_HI]:
                total += 1
    MP = np.empty(total, dtype=np.int64)
    MR = np.empty((total, RT.shape[1]), dtype=np.int64)
    k = 0
    for p in range(n_p):
        for i in range(lo[p], hi[p]):
            q = RT[i, R_SEQ]
            if PR[p, P_LO] < q <= PR[p, P_HI]:
                MP[k] = p
                MR[k] = RT[i]
                k += 1
    return MP, MR


@njit(cache=True)
def _side_values(RT, PR, n_p, lo, hi, cols, distinct, n_codes):
    """The ``(CNT, REFS)`` of :func:`side_outputs` once each pane's held rows ``lo[p]:hi[p]``
    of ``RT`` are known."""
    ns = len(cols)
    CNT = np.zeros((ns, n_p), dtype=np.int64)
    stamp = np.full(max(n_codes, 1), -1, dtype=np.int64)
    total = 0
    for k in range(ns):
        b = cols[k]
        for p in range(n_p):
            c = 0
            tag = k * n_p + p
            for i in range(lo[p], hi[p]):
                q = RT[i, R_SEQ]
                if RT[i, b] != 0 and PR[p, P_LO] < q <= PR[p, P_HI]:
                    if not distinct[k]:
                        c += 1
                    elif stamp[RT[i, b + 1]] != tag:
                        stamp[RT[i, b + 1]] = tag
                        c += 1
            CNT[k, p] = c
            if not distinct[k]:
                total += c
    REFS = np.empty(total, dtype=np.int64)
    j = 0
    for k in range(ns):
        if distinct[k]:
            continue
        b = cols[k]
        for p in range(n_p):
            for i in range(lo[p], hi[p]):
                q = RT[i, R_SEQ]
                if RT[i, b] != 0 and PR[p, P_LO] < q <= PR[p, P_HI]:
                    REFS[j] = RT[i, b + 3]
                    j += 1
    return CNT, REFS


@njit(cache=True)
def side_outputs(RT, n_h, PR, n_p, size, cols, distinct, n_codes):
    """The side aggregations' values of the first ``n_p`` pane rows, from their members (as
    :func:`pane_members` selects them; ``cols``: each side aggregation's first ``RT`` column,
    ``distinct``: whether it is ``count_distinct``, whose codes are below ``n_codes``).
    Returns ``(CNT, REFS)``: per side aggregation and pane, the number of valid members
    (``collect``) or of distinct codes among them (``count_distinct``); and the object refs
    of the ``collect`` members, by aggregation, pane, then record."""
    lo = np.empty(n_p, dtype=np.int64)
    hi = np.empty(n_p, dtype=np.int64)
    for p in range(n_p):
        s = PR[p, P_START]
        lo[p] = _bisect(RT, n_h, R_T, s, False)
        hi[p] = _bisect(RT, n_h, R_T, s + size, True)
    return _side_values(RT, PR, n_p, lo, hi, cols, distinct, n_codes)


@njit(cache=True)
def side_outputs_keys(RT, hoff, PK, PR, n_p, size, cols, distinct, n_codes):
    """:func:`side_outputs` of panes of many keys: pane ``p`` reads the held records of key
    ``PK[p]``, rows ``hoff[k]:hoff[k+1]`` of ``RT``."""
    lo = np.empty(n_p, dtype=np.int64)
    hi = np.empty(n_p, dtype=np.int64)
    for p in range(n_p):
        s = PR[p, P_START]
        k = PK[p]
        lo[p] = _bisect_in(RT, hoff[k], hoff[k + 1], R_T, s, False)
        hi[p] = _bisect_in(RT, hoff[k], hoff[k + 1], R_T, s + size, True)
    return _side_values(RT, PR, n_p, lo, hi, cols, distinct, n_codes)
