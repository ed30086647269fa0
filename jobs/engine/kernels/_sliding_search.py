"""Binary searches over a sorted int64 slice for the sliding kernels (:mod:`._sliding_kernels`).

Plain bisections, and galloping ones that probe from one end of the slice in doubling steps:
the kernels search a key's held times from whichever end the answer is nearer, where a
galloping search costs O(log d) for an answer ``d`` places away.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def _bl(a, lo, hi, x):
    """bisect_left over a[lo:hi] (absolute position)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _br(a, lo, hi, x):
    """bisect_right over a[lo:hi] (absolute position)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _blt(a, lo, hi, x):
    """bisect_left over a[lo:hi], probing down from ``hi`` in doubling steps: O(log d) for
    an answer ``d`` places below the top (a record's searches mostly land near its key's
    newest held times)."""
    r = hi
    step = 1
    while r > lo:
        p = r - step
        if p < lo:
            p = lo
        if a[p] < x:
            return _bl(a, p + 1, r, x)
        r = p
        step *= 2
    return lo


@njit(cache=True, inline="always")
def _brt(a, lo, hi, x):
    """bisect_right over a[lo:hi], probing down from ``hi`` (as :func:`_blt`)."""
    r = hi
    step = 1
    while r > lo:
        p = r - step
        if p < lo:
            p = lo
        if a[p] <= x:
            return _br(a, p + 1, r, x)
        r = p
        step *= 2
    return lo


@njit(cache=True, inline="always")
def _blb(a, lo, hi, x):
    """bisect_left over a[lo:hi], probing up from ``lo`` in doubling steps: O(log d) for an
    answer ``d`` places above the bottom."""
    lo0 = lo
    step = 1
    while lo0 < hi:
        p = lo0 + step - 1
        if p >= hi:
            p = hi - 1
        if a[p] >= x:
            return _bl(a, lo0, p, x)
        lo0 = p + 1
        step *= 2
    return hi


@njit(cache=True, inline="always")
def _brb(a, lo, hi, x):
    """bisect_right over a[lo:hi], probing up from ``lo`` (as :func:`_blb`)."""
    lo0 = lo
    step = 1
    while lo0 < hi:
        p = lo0 + step - 1
        if p >= hi:
            p = hi - 1
        if a[p] > x:
            return _br(a, lo0, p, x)
        lo0 = p + 1
        step *= 2
    return hi
