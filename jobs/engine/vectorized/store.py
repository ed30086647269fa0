"""The columnar slice store: one row per (key code, slice start), partial aggregates as arrays.

Lookups go through a packed int64 id ``(slice index - base) * n_keys + key code`` so that
``pandas.factorize`` / ``Index.get_indexer`` (hash tables in C) do the joining; when the packed id
could overflow (a huge span of slices times many keys) a ``lexsort`` grouping is used instead,
slower but exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.vectorized.aggregates import Agg, CountAgg, ExtremeAgg, RowCounts, SumAgg
from jobs.engine.vectorized.geometry import Geometry
from jobs.engine.vectorized.ordered import OrderedAgg
from jobs.engine.vectorized.side_tables import CollectAgg, DistinctAgg
from jobs.engine.vectorized.values import Column, Unsupported

I64 = NDArray[np.int64]
PACK_LIMIT = 2**62


ELEMENTS = "\x00elements"
"""Hidden per-slice record count (``open_windows`` reports a window's elements)."""


def make_aggs(defn: Definition) -> list[Agg]:
    out: list[Agg] = [CountAgg(ELEMENTS, counts_records=True)]
    for a in defn.aggregations:
        if a.fn == "count":
            out.append(CountAgg(a.name, counts_records=a.of is None))
        elif a.fn in ("sum", "mean"):
            out.append(SumAgg(a.name, mean=a.fn == "mean"))
        elif a.fn in ("min", "max"):
            out.append(ExtremeAgg(a.name, is_max=a.fn == "max"))
        elif a.fn in ("first", "last"):
            out.append(OrderedAgg(a.name, is_last=a.fn == "last"))
        elif a.fn == "collect":
            out.append(CollectAgg(a.name))
        elif a.fn == "count_distinct":
            out.append(DistinctAgg(a.name))
        else:  # pragma: no cover - qualifies() refuses it
            raise Unsupported(f"aggregations.{a.name}: fn {a.fn} is not vectorized")
    return out


def group_pairs(k: I64, s: I64) -> I64:
    """Group ids of the (k, s) pairs, numbered in order of first appearance."""
    n = len(k)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    s_lo, s_hi = int(s.min()), int(s.max())
    n_keys = int(k.max()) + 1
    if (s_hi - s_lo + 1) * n_keys < PACK_LIMIT:
        packed = (s - s_lo) * n_keys + k
        codes, _ = pd.factorize(packed)
        return np.asarray(codes, dtype=np.int64)
    order = np.lexsort((k, s))
    ks, ss = k[order], s[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (ks[1:] != ks[:-1]) | (ss[1:] != ss[:-1])
    sorted_gid = np.cumsum(new) - 1
    gid = np.empty(n, dtype=np.int64)
    gid[order] = sorted_gid
    first = np.full(int(sorted_gid[-1]) + 1, n, dtype=np.int64)
    np.minimum.at(first, gid, np.arange(n, dtype=np.int64))
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
    return rank[gid]


def first_occurrences(gid: I64) -> I64:
    """Positions of the first occurrence of each id of :func:`group_pairs` (ids numbered in
    order of first appearance, so a position is a first one iff its id exceeds all before it;
    linear, no sort)."""
    if len(gid) == 0:
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(gid)
    new = np.empty(len(gid), dtype=bool)
    new[0] = True
    new[1:] = running[1:] > running[:-1]
    return np.flatnonzero(new)


class SliceStore:
    def __init__(self, geometry: Geometry, aggs: list[Agg]) -> None:
        self.geo = geometry
        self.aggs = aggs
        self.key = np.zeros(0, dtype=np.int64)
        self.start = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.key)

    def add(
        self, k: I64, s: I64, cols: dict[str, Column | None], seq: I64
    ) -> None:
        """Fold records (key code, slice start, values, arrival number) into the store."""
        if len(k) == 0:
            return
        n_old = len(self.key)
        gid = group_pairs(np.concatenate([self.key, k]), np.concatenate([self.start, s]))
        rows = gid[n_old:]
        n_rows = int(gid.max()) + 1
        n_new = n_rows - n_old
        if n_new:
            first = np.full(n_new, len(k), dtype=np.int64)
            fresh = rows >= n_old
            np.minimum.at(first, rows[fresh] - n_old, np.flatnonzero(fresh))
            self.key = np.concatenate([self.key, k[first]])
            self.start = np.concatenate([self.start, s[first]])
            for agg in self.aggs:
                agg.extend(n_new)
        counts = RowCounts(rows, n_rows)
        for agg in self.aggs:
            agg.apply(rows, cols.get(agg.name), seq, n_rows, counts)

    def lookup(self, k: I64, s: I64) -> I64:
        """Row of each (key code, slice start), -1 where absent."""
        out = np.full(len(k), -1, dtype=np.int64)
        if len(self.key) == 0 or len(k) == 0:
            return out
        s_lo, s_hi = int(self.start.min()), int(self.start.max())
        n_keys = max(int(self.key.max()), int(k.max())) + 1
        inside = (s >= s_lo) & (s <= s_hi)
        if (s_hi - s_lo + 1) * n_keys < PACK_LIMIT:
            index = pd.Index((self.start - s_lo) * n_keys + self.key)
            q = (s[inside] - s_lo) * n_keys + k[inside]
            out[inside] = index.get_indexer(q)
            return out
        table = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(self.key, self.start, strict=True))}
        out[:] = [table.get((int(a), int(b)), -1) for a, b in zip(k, s, strict=True)]
        return out

    def keep(self, mask: NDArray[np.bool_]) -> None:
        idx = np.flatnonzero(mask)
        self.key, self.start = self.key[idx], self.start[idx]
        for agg in self.aggs:
            agg.take(idx)

    def dump(self) -> dict[str, Any]:
        return {
            "key": self.key.tolist(),
            "start": self.start.tolist(),
            "aggs": {a.name: a.dump() for a in self.aggs},
        }

    def load(self, d: dict[str, Any]) -> None:
        self.key = np.asarray(d["key"], dtype=np.int64)
        self.start = np.asarray(d["start"], dtype=np.int64)
        for a in self.aggs:
            a.load(d["aggs"][a.name])
