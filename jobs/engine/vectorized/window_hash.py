"""The open-addressing hash table (linear probing, tombstones) that finds a window row of the
triggered engine's table from (key code, window start); compiled, inlined into the kernels."""

from __future__ import annotations

import numpy as np
from numba import njit

H_EMPTY, H_USED, H_TOMB = 0, 1, 2


@njit(cache=True, inline="always")
def _hash(k, s, mask):
    h = (k * np.int64(-7046029254386353131)) ^ (s * np.int64(-4658895280553007687))
    h ^= h >> np.int64(29)
    return h & mask


@njit(cache=True, inline="always")
def h_find(hk, hs, hv, hst, k, s):
    """Row of window (k, s), or -1."""
    mask = len(hk) - 1
    i = _hash(k, s, mask)
    while True:
        st = hst[i]
        if st == H_EMPTY:
            return -1
        if st == H_USED and hk[i] == k and hs[i] == s:
            return hv[i]
        i = (i + 1) & mask


@njit(cache=True, inline="always")
def h_insert(hk, hs, hv, hst, k, s, row):
    """Insert (k, s) -> row; the caller knows (k, s) is absent and the table has room."""
    mask = len(hk) - 1
    i = _hash(k, s, mask)
    while hst[i] == H_USED:
        i = (i + 1) & mask
    hk[i] = k
    hs[i] = s
    hv[i] = row
    hst[i] = H_USED


@njit(cache=True, inline="always")
def h_delete(hk, hs, hv, hst, k, s):
    mask = len(hk) - 1
    i = _hash(k, s, mask)
    while True:
        st = hst[i]
        if st == H_EMPTY:
            return
        if st == H_USED and hk[i] == k and hs[i] == s:
            hst[i] = H_TOMB
            return
        i = (i + 1) & mask
