"""``first`` / ``last`` as columnar partials: per row the winner's event time, arrival number
and value (any JSON value, held in an object array).

The general engine keeps ``[t, seq, value]`` and picks the smallest (first) or largest (last)
``(t, seq)``: the earliest / latest event time, ties broken by arrival order. A batch's records
all arrive after every record already folded, so within a batch the winner per row is found
with two ``ufunc.at`` passes (best time, then the earliest / latest arrival among the records at
that time) and it replaces the stored one when its time is strictly better, or equal for
``last`` (a later arrival wins a tie).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.vectorized.aggregates import I64, RowCounts
from jobs.engine.vectorized.values import Column

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


class OrderedAgg:
    """``first`` (``is_last`` False) or ``last`` of a column of arbitrary values."""

    needs_numbers = False
    PARTS: tuple[tuple[str, Any], ...] = (("t", 0), ("seq", -1), ("v", None))

    def __init__(self, name: str, is_last: bool) -> None:
        self.name = name
        self.is_last = is_last
        self.t = np.zeros(0, dtype=np.int64)
        self.seq = np.zeros(0, dtype=np.int64)  # -1 = no value yet
        self.v = np.zeros(0, dtype=object)

    def precheck(self, col: Column | None) -> None:
        return None

    def extend(self, n: int) -> None:
        self.t = np.concatenate([self.t, np.zeros(n, dtype=np.int64)])
        self.seq = np.concatenate([self.seq, np.full(n, -1, dtype=np.int64)])
        self.v = np.concatenate([self.v, np.full(n, None, dtype=object)])

    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None:
        assert col is not None and col.obj is not None and col.t is not None
        valid = col.valid
        r, t, s = rows[valid], col.t[valid], seq[valid]
        if len(r) == 0:
            return
        best = np.full(n_rows, _MIN if self.is_last else _MAX, dtype=np.int64)
        (np.maximum if self.is_last else np.minimum).at(best, r, t)
        pos = np.flatnonzero(t == best[r])  # records at their row's best time
        win = np.full(n_rows, -1 if self.is_last else _MAX, dtype=np.int64)
        (np.maximum if self.is_last else np.minimum).at(win, r[pos], pos)
        rows_t = np.flatnonzero(best != (_MIN if self.is_last else _MAX))
        w = win[rows_t]
        new_t = t[w]
        old_t = self.t[rows_t]
        better = new_t >= old_t if self.is_last else new_t < old_t
        take = (self.seq[rows_t] < 0) | better
        rows_t, w = rows_t[take], w[take]
        self.t[rows_t] = t[w]
        self.seq[rows_t] = s[w]
        self.v[rows_t] = col.obj[valid][w]

    def take(self, idx: I64) -> None:
        self.t, self.seq, self.v = self.t[idx], self.seq[idx], self.v[idx]

    def _winners(self, idx: NDArray[np.int64]) -> tuple[I64, NDArray[np.bool_]]:
        """Per window (a row of slice rows, -1 absent): the row holding its winner, and
        whether it has one."""
        present = idx >= 0
        safe = np.where(present, idx, 0)
        has = present & (self.seq[safe] >= 0)
        if self.is_last:
            t = np.where(has, self.t[safe], _MIN)
            best = t.max(axis=1)
            s = np.where(has & (t == best[:, None]), self.seq[safe], -1)
            j = s.argmax(axis=1)
        else:
            t = np.where(has, self.t[safe], _MAX)
            best = t.min(axis=1)
            s = np.where(has & (t == best[:, None]), self.seq[safe], _MAX)
            j = s.argmin(axis=1)
        winner = safe[np.arange(len(idx)), j]
        return winner, np.asarray(has.any(axis=1), dtype=np.bool_)

    def values(self, idx: I64) -> list[Any]:
        return self.values_array(idx).tolist()

    def combine(self, idx: NDArray[np.int64]) -> list[Any]:
        return self.combine_array(idx).tolist()

    def values_array(self, idx: I64) -> NDArray[Any]:
        return self.v[idx]  # an empty row holds None, the general engine's empty result

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        winner, has = self._winners(idx)
        out = self.v[winner]
        out[~has] = None
        return out

    def engine_accs(self, idx: NDArray[np.int64]) -> list[Any]:
        """Per window, the general engine's accumulator: ``[t, seq, value]`` or None."""
        winner, has = self._winners(idx)
        return [
            [t, s, v] if h else None
            for t, s, v, h in zip(
                self.t[winner].tolist(), self.seq[winner].tolist(), self.v[winner].tolist(),
                has.tolist(), strict=True,
            )
        ]

    def dump(self) -> dict[str, list[Any]]:
        return {"t": self.t.tolist(), "seq": self.seq.tolist(), "v": self.v.tolist()}

    def load(self, d: dict[str, list[Any]]) -> None:
        self.t = np.asarray(d["t"], dtype=np.int64)
        self.seq = np.asarray(d["seq"], dtype=np.int64)
        self.v = np.fromiter(d["v"], dtype=object, count=len(d["v"]))
