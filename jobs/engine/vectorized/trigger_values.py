"""Per-aggregation accumulators of the triggered engine's window table, compiled: folding one
input into a window (the general engine's ``aggregates`` adders, restated over int / float /
kind arrays) and writing a window's pane values (kind 0 null, 1 int, 2 float)."""

from __future__ import annotations

from numba import njit

F_COUNT_STAR, F_COUNT, F_SUM, F_MEAN, F_MIN, F_MAX, F_FIRST, F_LAST = 0, 1, 2, 3, 4, 5, 6, 7
"""Aggregation function codes."""


@njit(cache=True, inline="always")
def _less(ak, ai, af, bk, bi, bf):
    """a < b for two non-null min/max values (kind 1 int, 2 float), as Python compares them
    (ints mixed with floats stay within 2**53, so the float comparison is exact)."""
    if ak == 1 and bk == 1:
        return ai < bi
    x = af if ak == 2 else float(ai)
    y = bf if bk == 2 else float(bi)
    return x < y


@njit(cache=True, inline="always")
def _add_value(fns, acc_i, acc_f, acc_k, acc_n, acc_t, row, vi, vf, visf, vvalid, r, t, seq):
    for a in range(len(fns)):
        fn = fns[a]
        if fn == F_COUNT_STAR:
            acc_i[row, a] += 1
            continue
        if not vvalid[r, a]:
            continue
        if fn == F_COUNT:
            acc_i[row, a] += 1
        elif fn in (F_SUM, F_MEAN):
            if acc_k[row, a] == 1:
                acc_f[row, a] += vf[r, a] if visf[r, a] else float(vi[r, a])
            elif visf[r, a]:
                acc_f[row, a] = float(acc_i[row, a]) + vf[r, a]
                acc_k[row, a] = 1
            else:
                acc_i[row, a] += vi[r, a]
            if fn == F_MEAN:
                acc_n[row, a] += 1
        elif fn in (F_FIRST, F_LAST):
            # [t, seq, value] of the earliest / latest input by (event time, arrival)
            cur = acc_k[row, a]
            if cur == 0:
                take = True
            elif fn == F_FIRST:
                take = t < acc_t[row, a] or (t == acc_t[row, a] and seq < acc_n[row, a])
            else:
                take = t > acc_t[row, a] or (t == acc_t[row, a] and seq > acc_n[row, a])
            if take:
                acc_k[row, a] = 2 if visf[r, a] else 1
                acc_i[row, a] = vi[r, a]
                acc_f[row, a] = vf[r, a]
                acc_t[row, a] = t
                acc_n[row, a] = seq
        else:
            k = 2 if visf[r, a] else 1
            cur = acc_k[row, a]
            if cur == 0:
                take = True
            elif fn == F_MIN:
                take = _less(k, vi[r, a], vf[r, a], cur, acc_i[row, a], acc_f[row, a])
            else:
                take = _less(cur, acc_i[row, a], acc_f[row, a], k, vi[r, a], vf[r, a])
            if take:
                acc_k[row, a] = k
                acc_i[row, a] = vi[r, a]
                acc_f[row, a] = vf[r, a]


@njit(cache=True, inline="always")
def _write_values(fns, acc_i, acc_f, acc_k, acc_n, row, ok, oi, of, o):
    """The pane values of window ``row`` into output row ``o``."""
    for a in range(len(fns)):
        fn = fns[a]
        if fn in (F_COUNT_STAR, F_COUNT):
            ok[o, a] = 1
            oi[o, a] = acc_i[row, a]
        elif fn == F_SUM:
            if acc_k[row, a] == 1:
                ok[o, a] = 2
                of[o, a] = acc_f[row, a]
            else:
                ok[o, a] = 1
                oi[o, a] = acc_i[row, a]
        elif fn == F_MEAN:
            n = acc_n[row, a]
            if n == 0:
                ok[o, a] = 0
            else:
                ok[o, a] = 2
                s = acc_f[row, a] if acc_k[row, a] == 1 else float(acc_i[row, a])
                of[o, a] = s / n
        else:
            ok[o, a] = acc_k[row, a]
            oi[o, a] = acc_i[row, a]
            of[o, a] = acc_f[row, a]
