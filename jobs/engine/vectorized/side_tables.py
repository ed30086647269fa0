"""``collect`` and ``count_distinct`` as side tables: rows of (store row, ...) entries rather
than one fixed-size partial per store row.

Why: their accumulators are lists / sets of arbitrary JSON values, of any length per window.
``collect`` keeps one entry per accepted non-null value: (row, event time, arrival number,
value object); a window's list is its slices' entries sorted by (event time, arrival) when it
fires, as the general engine's sorted insertion would have built it. ``count_distinct`` keeps
one entry per distinct (row, value code) (codes from :class:`ValueTable`); a window counts the
distinct codes over its slices. Folding a batch is array appends (plus a hash ``unique`` of
the pairs for ``count_distinct``); gathering a window's entries is a ragged join through a
per-row index, no Python loop per record. The stores re-lay out rows through
:meth:`SideTable.map_rows` (the dense store's cells move when its key capacity grows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from jobs.engine.vectorized.aggregates import I64, RowCounts
from jobs.engine.vectorized.value_codes import ValueTable
from jobs.engine.vectorized.values import Column


def _objects(values: list[Any]) -> NDArray[Any]:
    return np.fromiter(values, dtype=object, count=len(values))


class SideTable:
    """Entries keyed by store row; subclasses name their per-entry arrays in ``COLS``."""

    needs_numbers = False
    PARTS: tuple[tuple[str, Any], ...] = ()
    COLS: tuple[str, ...] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self.n = 0
        """Store rows (or dense cells) the table addresses."""
        self.row = np.zeros(0, dtype=np.int64)

    def precheck(self, col: Column | None) -> None:
        return None

    def extend(self, n: int) -> None:
        self.n += n

    def _select(self, keep: I64, new_rows: I64, n: int) -> None:
        self.row = new_rows
        for c in self.COLS:
            setattr(self, c, getattr(self, c)[keep])
        self.n = n

    def map_rows(self, f: Callable[[I64], I64], n: int) -> None:
        """Move every entry to row ``f(row)``; entries mapped to -1 are dropped."""
        new = f(self.row)
        keep = np.flatnonzero(new >= 0)
        self._select(keep, new[keep], n)

    def take(self, idx: I64) -> None:
        """Keep the rows ``idx`` (row ``idx[i]`` becomes row ``i``)."""
        inv = np.full(self.n, -1, dtype=np.int64)
        inv[idx] = np.arange(len(idx), dtype=np.int64)
        self.map_rows(lambda r: inv[r], len(idx))

    def absorb(self, other: SideTable, rows: I64) -> None:
        """This table (empty) gets ``other``'s entries, its row ``i`` as row ``rows[i]``."""
        self.row = rows[other.row]
        for c in self.COLS:
            setattr(self, c, getattr(other, c).copy())

    def _gather(self, idx: NDArray[np.int64]) -> tuple[I64, I64]:
        """Entries of each window (a row of slice rows, -1 absent): (window, entry) pairs."""
        w_n, s_n = idx.shape
        flat = idx.ravel()
        present = flat >= 0
        win = np.repeat(np.arange(w_n, dtype=np.int64), s_n)[present]
        rows = flat[present]
        if len(self.row) == 0 or len(rows) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        order = np.argsort(self.row, kind="stable")
        counts = np.bincount(self.row, minlength=max(self.n, int(rows.max()) + 1))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        lens = counts[rows]
        total = int(lens.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        win_e = np.repeat(win, lens)
        offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        entry = order[np.repeat(starts[rows], lens) + offs]
        return win_e, entry

    def values(self, idx: I64) -> list[Any]:
        return self.values_array(idx).tolist()

    def combine(self, idx: NDArray[np.int64]) -> list[Any]:
        return self.combine_array(idx).tolist()

    def values_array(self, idx: I64) -> NDArray[Any]:
        return self.combine_array(idx[:, None])

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        raise NotImplementedError

    def engine_accs(self, idx: NDArray[np.int64]) -> list[Any]:
        raise NotImplementedError


class CollectAgg(SideTable):
    """``collect``: (row, t, seq, value) per accepted non-null value."""

    COLS = ("t", "seq", "v")

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.t = np.zeros(0, dtype=np.int64)
        self.seq = np.zeros(0, dtype=np.int64)
        self.v = np.zeros(0, dtype=object)

    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None:
        assert col is not None and col.obj is not None and col.t is not None
        valid = col.valid
        self.row = np.concatenate([self.row, rows[valid]])
        self.t = np.concatenate([self.t, col.t[valid]])
        self.seq = np.concatenate([self.seq, seq[valid]])
        self.v = np.concatenate([self.v, col.obj[valid]])

    def _sorted(self, idx: NDArray[np.int64]) -> tuple[I64, I64]:
        """(window, entry) pairs, per window in (event time, arrival) order."""
        win, entry = self._gather(idx)
        order = np.lexsort((self.seq[entry], self.t[entry], win))
        return win[order], entry[order]

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        win, entry = self._sorted(idx)
        vals = self.v[entry].tolist()
        ends = np.cumsum(np.bincount(win, minlength=len(idx))).tolist()
        starts = [0, *ends[:-1]]
        return np.fromiter((vals[a:b] for a, b in zip(starts, ends, strict=True)),
                           dtype=object, count=len(idx))

    def engine_accs(self, idx: NDArray[np.int64]) -> list[Any]:
        """Per window, the general engine's accumulator: ``[[t, seq, value], ...]`` sorted."""
        win, entry = self._sorted(idx)
        items = [list(x) for x in zip(self.t[entry].tolist(), self.seq[entry].tolist(),
                                      self.v[entry].tolist(), strict=True)]
        ends = np.cumsum(np.bincount(win, minlength=len(idx))).tolist()
        starts = [0, *ends[:-1]]
        return [items[a:b] for a, b in zip(starts, ends, strict=True)]

    def dump(self) -> dict[str, list[Any]]:
        return {"row": self.row.tolist(), "t": self.t.tolist(), "seq": self.seq.tolist(),
                "v": self.v.tolist(), "n": [self.n]}

    def load(self, d: dict[str, list[Any]]) -> None:
        self.row = np.asarray(d["row"], dtype=np.int64)
        self.t = np.asarray(d["t"], dtype=np.int64)
        self.seq = np.asarray(d["seq"], dtype=np.int64)
        self.v = _objects(list(d["v"]))
        self.n = int(d["n"][0])


class DistinctAgg(SideTable):
    """``count_distinct``: one (row, value code) entry per distinct value of a row."""

    COLS = ("code",)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.code = np.zeros(0, dtype=np.int64)
        self.table = ValueTable()

    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None:
        assert col is not None and col.obj is not None
        valid = col.valid
        if not valid.any():
            return
        codes = self.table.encode(col.obj[valid])
        n_codes = len(self.table)
        packed = np.concatenate([self.row * n_codes + self.code, rows[valid] * n_codes + codes])
        packed = np.asarray(pd.unique(packed), dtype=np.int64)  # hash: order is irrelevant
        self.row, self.code = packed // n_codes, packed % n_codes

    def _distinct(self, idx: NDArray[np.int64]) -> tuple[I64, I64]:
        """Distinct (window, code) pairs of the windows."""
        win, entry = self._gather(idx)
        n_codes = max(len(self.table), 1)
        packed = np.asarray(pd.unique(win * n_codes + self.code[entry]), dtype=np.int64)
        return packed // n_codes, packed % n_codes

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        win, _ = self._distinct(idx)
        return np.bincount(win, minlength=len(idx)).astype(np.int64)

    def engine_accs(self, idx: NDArray[np.int64]) -> list[Any]:
        """Per window, the general engine's accumulator: ``{token: 1}`` per distinct value."""
        win, code = self._distinct(idx)
        out: list[dict[str, int]] = [{} for _ in range(len(idx))]
        tokens = self.table.tokens
        for w, c in zip(win.tolist(), code.tolist(), strict=True):
            out[w][tokens[c]] = 1
        return out

    def dump(self) -> dict[str, list[Any]]:
        return {"row": self.row.tolist(), "code": self.code.tolist(),
                "tokens": list(self.table.tokens), "n": [self.n]}

    def load(self, d: dict[str, list[Any]]) -> None:
        self.row = np.asarray(d["row"], dtype=np.int64)
        self.code = np.asarray(d["code"], dtype=np.int64)
        self.table = ValueTable(list(d["tokens"]))
        self.n = int(d["n"][0])
