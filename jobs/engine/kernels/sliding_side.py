"""``collect`` and ``count_distinct`` of the compiled sliding engine (``emit: final``).

A final sliding window's content is, at every moment, the key's held records inside its
bounds (:mod:`.sliding`), and the held records are sorted by event time, then arrival: the
order of the general engine's ``collect`` accumulator (``aggregates._add_collect`` keeps its
items by ``(t, seq)`` whatever order they are added in, so a record shared by several windows
sits at the same place in each). Both functions therefore keep no entry per window: their
inputs stay beside the held records (the original object by reference, like ``first``, and
for ``count_distinct`` also its code in the records' int column, distinct as the general engine
decides), and a window's value is read from its range of records when it is emitted or
snapshotted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from jobs.engine.kernels._sliding_search import _bl, _br
from jobs.engine.vectorized.value_codes import ValueTable

I64 = NDArray[np.int64]
SIDE_FNS = ("collect", "count_distinct")


@njit(cache=True)
def window_ranges(slots, wstart, wkey, kstart, kend, rt, size):
    """Per window, the held records ``[a, b)`` inside its bounds ``[start, start + size]``."""
    n = len(slots)
    a = np.empty(n, dtype=np.int64)
    b = np.empty(n, dtype=np.int64)
    for i in range(n):
        w = slots[i]
        c = wkey[w]
        a[i] = _bl(rt, kstart[c], kend[c], wstart[w])
        b[i] = _br(rt, kstart[c], kend[c], wstart[w] + size)
    return a, b


@njit(cache=True)
def distinct_counts(a, b, valid, code, n_codes):
    """Per window, the number of distinct codes among its valid records ``[a, b)``: a stamp
    per code (the last window that counted it), one step per member."""
    n = len(a)
    out = np.zeros(n, dtype=np.int64)
    stamp = np.full(n_codes, -1, dtype=np.int64)
    for i in range(n):
        k = 0
        for x in range(a[i], b[i]):
            if valid[x] and stamp[code[x]] != i:
                stamp[code[x]] = i
                k += 1
        out[i] = k
    return out


def _members(a: I64, b: I64, valid: NDArray[np.bool_]) -> tuple[I64, I64]:
    """The held records of each window with a valid input: (window index, record) pairs, by
    window, then record."""
    lens = b - a
    total = int(lens.sum())
    win = np.repeat(np.arange(len(a), dtype=np.int64), lens)
    starts = np.cumsum(lens) - lens
    pos = np.arange(total, dtype=np.int64) - np.repeat(starts, lens) + np.repeat(a, lens)
    keep = valid[pos]
    return win[keep], pos[keep]


def side_values(fn: str, a: I64, b: I64, valid: NDArray[np.bool_], ref: I64, code: I64,
                n_codes: int, objs: NDArray[Any]) -> NDArray[Any]:
    """Each window's emitted value: ``collect`` a list (object array), ``count_distinct`` an
    int64 count."""
    n = len(a)
    if fn == "count_distinct":
        counts: NDArray[np.int64] = distinct_counts(a, b, valid, code, n_codes)
        return counts
    win, pos = _members(a, b, valid)
    vals = objs[ref[pos]].tolist()
    bounds = np.cumsum(np.bincount(win, minlength=n)).tolist()
    out = np.empty(n, dtype=object)
    lo = 0
    for i, hi in enumerate(bounds):
        out[i] = vals[lo:hi]
        lo = hi
    return out


def side_accs(fn: str, a: I64, b: I64, valid: NDArray[np.bool_], ref: I64, rt: I64,
              rseq: I64, objs: list[Any], tokens: list[str], code: I64) -> list[Any]:
    """Each window's accumulator as :mod:`jobs.engine.aggregates` holds it: ``collect``
    ``[t, seq, value]`` items by (t, seq), ``count_distinct`` a dict of tokens."""
    out: list[Any] = []
    for lo, hi in zip(a.tolist(), b.tolist(), strict=True):
        xs = [x for x in range(lo, hi) if valid[x]]
        if fn == "count_distinct":
            out.append({tokens[int(code[x])]: 1 for x in xs})
        else:
            out.append([[int(rt[x]), int(rseq[x]), objs[int(ref[x])]] for x in xs])
    return out


def compact_codes(table: ValueTable, codes: I64, valid: NDArray[np.bool_]
                  ) -> tuple[ValueTable, I64]:
    """A table of only the values the live records' valid ``codes`` use, and ``codes`` in it
    (0 where not valid): the table otherwise keeps every distinct value the stream showed."""
    if 4 * int(valid.sum()) >= len(table):
        return table, codes
    used, new = np.unique(codes[valid], return_inverse=True)
    out = np.zeros(codes.shape, dtype=np.int64)
    out[valid] = new.ravel()
    return ValueTable([table.tokens[c] for c in used.tolist()]), out
