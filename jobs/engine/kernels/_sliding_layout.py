"""Compiled (numba) kernels that lay out the sliding engine's held records (:mod:`.sliding`).

After :func:`._sliding_kernels.ingest_unit` decides the new CSR order of the held records,
:func:`relay` moves every record array into it in one pass and writes the prefix sums the
window values are read from; :func:`by_key` groups positions by key code (a counting sort),
for the unit's records and for the due windows.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def relay(perm, S, seq0, old_seq, old_valid, valid, old_vi, vi, old_vf, vf, old_isf, isf,
          old_ref, ref):
    """The held records' arrays in the new CSR order ``perm`` of :func:`ingest_unit` (ids
    below ``S`` are old records, ``S + i`` the unit's record ``i``, arrival sequence
    ``seq0 + i``), in one pass that also writes the prefix sums (valid count, int sum wrapping
    modulo 2**64, float count) and, per aggregation, the sum of |int input| over the held
    records (the bound the int-sum check uses)."""
    R = len(perm)
    m = old_valid.shape[0]
    rseq = np.empty(R, dtype=np.int64)
    for k in range(R):
        p = perm[k]
        rseq[k] = old_seq[p] if p < S else seq0 + (p - S)
    rvalid = np.empty((m, R), dtype=np.bool_)
    rvi = np.empty((m, R), dtype=np.int64)
    rvf = np.empty((m, R), dtype=np.float64)
    risf = np.empty((m, R), dtype=np.bool_)
    rref = np.empty((m, R), dtype=np.int64)
    pc = np.zeros((m, R + 1), dtype=np.int64)
    pi = np.zeros((m, R + 1), dtype=np.int64)
    pf = np.zeros((m, R + 1), dtype=np.int64)
    absum = np.zeros(m, dtype=np.float64)
    for j in range(m):
        c = np.int64(0)
        si = np.int64(0)
        f = np.int64(0)
        ab = 0.0
        for k in range(R):
            p = perm[k]
            if p < S:
                va = old_valid[j, p]
                x = old_vi[j, p]
                y = old_vf[j, p]
                fl = old_isf[j, p]
                r = old_ref[j, p]
            else:
                i = p - S
                va = valid[j, i]
                x = vi[j, i]
                y = vf[j, i]
                fl = isf[j, i]
                r = ref[j, i]
            rvalid[j, k] = va
            rvi[j, k] = x
            rvf[j, k] = y
            risf[j, k] = fl
            rref[j, k] = r
            ab += abs(np.float64(x))
            if va:
                c += 1
                if fl:
                    f += 1
                else:
                    si += x
            pc[j, k + 1] = c
            pi[j, k + 1] = si
            pf[j, k + 1] = f
        absum[j] = ab
    return rseq, rvalid, rvi, rvf, risf, rref, pc, pi, pf, absum


@njit(cache=True)
def by_key(codes, n_keys):
    """Positions of ``codes`` grouped by key code, in their order within a key (a counting
    sort: O(len(codes) + n_keys))."""
    off = np.zeros(n_keys + 1, dtype=np.int64)
    for c in codes:
        off[c + 1] += 1
    for c in range(n_keys):
        off[c + 1] += off[c]
    out = np.empty(len(codes), dtype=np.int64)
    for i in range(len(codes)):
        c = codes[i]
        out[off[c]] = i
        off[c] += 1
    return out
