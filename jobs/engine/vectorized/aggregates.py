"""Columnar partial aggregates: one numpy array per part, one row per slice.

Each aggregate knows how to fold a batch into its rows (``apply``, in arrival order so float sums
add in the same order as the general engine's running sum), how to combine several slices into a
window (``combine``), how to drop rows (``take``) and how to turn a row into the output value.
Ties of ``min``/``max`` between equal values of different types (``1`` and ``1.0``) keep the
earliest arrival, like Python's ``min``; that is why the winner's arrival number is kept.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from jobs.engine.vectorized.values import Column, Unsupported

I64 = NDArray[np.int64]
SAFE_INT = 2**62


class Agg(Protocol):
    name: str
    needs_numbers: bool
    PARTS: tuple[tuple[str, Any], ...]
    """(attribute, value of an empty row) of each per-row array (the dense store resets,
    re-lays out and gathers them generically)."""

    def precheck(self, col: Column | None) -> None: ...
    def extend(self, n: int) -> None: ...
    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None: ...
    def take(self, idx: I64) -> None: ...
    def values(self, idx: I64) -> list[Any]: ...
    def combine(self, idx: NDArray[np.int64]) -> list[Any]: ...
    def values_array(self, idx: I64) -> NDArray[Any]: ...
    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]: ...
    def dump(self) -> dict[str, list[Any]]: ...
    def load(self, d: dict[str, list[Any]]) -> None: ...


def _cat(a: NDArray[Any], n: int, fill: Any) -> NDArray[Any]:
    return np.concatenate([a, np.full(n, fill, dtype=a.dtype)])


class RowCounts:
    """Records per row of one batch (``bincount`` of its rows), computed at most once: the
    hidden element count, ``count`` and the value counts of ``sum`` / ``mean`` over a column
    without nulls all need exactly this array (one ``bincount`` over all cells each was a
    visible part of a replay's folding)."""

    def __init__(self, rows: I64, n_rows: int) -> None:
        self.rows = rows
        self.n_rows = n_rows
        self._counts: I64 | None = None

    def __call__(self) -> I64:
        if self._counts is None:
            self._counts = np.asarray(np.bincount(self.rows, minlength=self.n_rows), dtype=np.int64)
        return self._counts


def _all_valid(col: Column) -> bool:
    return len(col.valid) == 0 or bool(col.valid.all())


def object_array(values: list[Any]) -> NDArray[Any]:
    """A 1-d object array holding exactly these Python objects (``np.array`` would try to
    find a common dtype, or nest sequences)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class CountAgg:
    """``count`` (of records, or of non-null values of an expression)."""

    needs_numbers = False
    PARTS: tuple[tuple[str, Any], ...] = (("n", 0),)

    def __init__(self, name: str, counts_records: bool) -> None:
        self.name = name
        self.counts_records = counts_records
        self.n = np.zeros(0, dtype=np.int64)

    def precheck(self, col: Column | None) -> None:
        return None

    def extend(self, n: int) -> None:
        self.n = _cat(self.n, n, 0)

    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None:
        if counts is not None and (col is None or _all_valid(col)):
            self.n += counts()
            return
        r = rows if col is None else rows[col.valid]
        self.n += np.bincount(r, minlength=n_rows).astype(np.int64)

    def take(self, idx: I64) -> None:
        self.n = self.n[idx]

    def values(self, idx: I64) -> list[Any]:
        return self.values_array(idx).tolist()

    def combine(self, idx: NDArray[np.int64]) -> list[Any]:
        return self.combine_array(idx).tolist()

    def values_array(self, idx: I64) -> NDArray[Any]:
        return self.n[idx]

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        # an absent slice (-1) reads cell 0 and is zeroed; summing slice by slice is cheaper
        # than a masked (windows x slices) gather plus an axis sum
        total = np.zeros(len(idx), dtype=np.int64)
        for j in range(idx.shape[1]):
            col = idx[:, j]
            part = self.n[col]
            if (col < 0).any():
                part[col < 0] = 0
            total += part
        return total

    def dump(self) -> dict[str, list[Any]]:
        return {"n": self.n.tolist()}

    def load(self, d: dict[str, list[Any]]) -> None:
        self.n = np.asarray(d["n"], dtype=np.int64)


class SumAgg:
    """``sum`` and ``mean``: an int running sum until the first float, then a float one."""

    needs_numbers = True
    PARTS: tuple[tuple[str, Any], ...] = (("isum", 0), ("fsum", 0.0), ("has_float", False), ("nn", 0))

    def __init__(self, name: str, mean: bool) -> None:
        self.name = name
        self.mean = mean
        self.isum = np.zeros(0, dtype=np.int64)
        self.fsum = np.zeros(0, dtype=np.float64)
        self.has_float = np.zeros(0, dtype=bool)
        self.nn = np.zeros(0, dtype=np.int64)

    def precheck(self, col: Column | None) -> None:
        """Refuse a batch whose int sums could leave int64, before any state changes."""
        assert col is not None
        if col.all_float or col.max_abs_int == 0:
            return
        # no group can gain more than the batch's total |value| (float: cannot overflow)
        bound = float(np.abs(self.isum).max(initial=0)) + float(np.abs(col.i).sum(dtype=np.float64))
        if bound >= SAFE_INT / 2:
            raise Unsupported(f"aggregation {self.name!r}: integer sum may exceed 64 bits")

    def extend(self, n: int) -> None:
        self.isum = _cat(self.isum, n, 0)
        self.fsum = _cat(self.fsum, n, 0.0)
        self.has_float = _cat(self.has_float, n, False)
        self.nn = _cat(self.nn, n, 0)

    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None:
        assert col is not None
        all_valid = _all_valid(col)
        if all_valid and counts is not None:
            self.nn += counts()
        else:
            self.nn += np.bincount(rows[col.valid], minlength=n_rows).astype(np.int64)
        if all_valid and not col.any_float and not self.has_float.any():
            # the common case, ints only so far: every record adds to its row's int sum
            np.add.at(self.isum, rows, col.i)  # precheck() made sure this cannot overflow
            return
        r = rows[col.valid]
        if col.any_float:
            fl = col.is_float & col.valid
            turning = np.zeros(n_rows, dtype=bool)
            turning[rows[fl]] = True
            turning &= ~self.has_float
            self.fsum[turning] = self.isum[turning].astype(np.float64)
            self.has_float |= turning
        if col.all_float:
            np.add.at(self.fsum, r, col.f[col.valid])
            return
        in_float = self.has_float[rows] & col.valid
        if in_float.any():
            np.add.at(self.fsum, rows[in_float], col.f[in_float])
        in_int = ~self.has_float[rows] & col.valid
        r_int = rows[in_int]
        if len(r_int):  # precheck() made sure this cannot overflow
            np.add.at(self.isum, r_int, col.i[in_int])

    def take(self, idx: I64) -> None:
        self.isum, self.fsum = self.isum[idx], self.fsum[idx]
        self.has_float, self.nn = self.has_float[idx], self.nn[idx]

    def _out(self, total: Any, is_float: bool, nn: int) -> Any:
        if self.mean:
            return None if nn == 0 else float(total) / nn
        return float(total) if is_float else int(total)

    def _finish(
        self, hf: NDArray[np.bool_] | None, fsum: NDArray[np.float64] | None, isum: I64,
        nn: I64,
    ) -> NDArray[Any]:
        """Output values as an array: ``mean`` as float(sum) / n (None without values), ``sum``
        an int unless a float took part. A numeric dtype when every value has one Python type
        (``tolist()`` then gives exactly the Python objects), an object array otherwise.
        ``hf``/``fsum`` None: no float took part anywhere (the common all-int case)."""
        if self.mean:
            total = isum.astype(np.float64)
            if hf is not None:
                assert fsum is not None
                total = np.where(hf, fsum, total)
            res = total / np.maximum(nn, 1)
            if (nn == 0).any():
                out = object_array(res.tolist())
                out[nn == 0] = None
                return out
            return res
        if hf is None or not hf.any():
            return isum
        assert fsum is not None
        if hf.all():
            return fsum
        return object_array([
            f if h else i
            for h, f, i in zip(hf.tolist(), fsum.tolist(), isum.tolist(), strict=True)
        ])

    def values(self, idx: I64) -> list[Any]:
        return self.values_array(idx).tolist()

    def combine(self, idx: NDArray[np.int64]) -> list[Any]:
        return self.combine_array(idx).tolist()

    def values_array(self, idx: I64) -> NDArray[Any]:
        return self._finish(self.has_float[idx], self.fsum[idx], self.isum[idx], self.nn[idx])

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        absent = idx < 0
        any_absent = bool(absent.any())
        isum = np.zeros(len(idx), dtype=np.int64)
        nn = np.zeros(len(idx), dtype=np.int64)
        for j in range(idx.shape[1]):  # slice by slice: no (windows x slices) temporaries
            col = idx[:, j]
            pi, pn = self.isum[col], self.nn[col]
            if any_absent and absent[:, j].any():
                pi[absent[:, j]] = 0
                pn[absent[:, j]] = 0
            isum += pi
            nn += pn
        hf_part = self.has_float[idx] & ~absent
        if not hf_part.any():
            return self._finish(None, None, isum, nn)
        # floats took part: add each slice's partial sum (its float sum, or its int sum as a
        # float) left to right, as the general engine's running sum would have
        present = ~absent
        part = np.where(
            hf_part, self.fsum[idx], np.where(present, self.isum[idx], 0).astype(np.float64)
        )
        fsum = np.zeros(len(idx), dtype=np.float64)
        for j in range(idx.shape[1]):  # slice order, left to right
            fsum = fsum + part[:, j]
        return self._finish(np.asarray(hf_part.any(axis=1), dtype=np.bool_), fsum, isum, nn)

    def dump(self) -> dict[str, list[Any]]:
        return {
            "isum": self.isum.tolist(), "fsum": self.fsum.tolist(),
            "has_float": self.has_float.tolist(), "nn": self.nn.tolist(),
        }

    def load(self, d: dict[str, list[Any]]) -> None:
        self.isum = np.asarray(d["isum"], dtype=np.int64)
        self.fsum = np.asarray(d["fsum"], dtype=np.float64)
        self.has_float = np.asarray(d["has_float"], dtype=bool)
        self.nn = np.asarray(d["nn"], dtype=np.int64)


class ExtremeAgg:
    """``min`` / ``max``: the value (float64, exact for |ints| <= 2**53), whether the winner was
    an int, and the winner's arrival number (ties keep the earliest)."""

    needs_numbers = True
    PARTS: tuple[tuple[str, Any], ...] = (("v", 0.0), ("is_int", False), ("seq", -1))

    def __init__(self, name: str, is_max: bool) -> None:
        self.name = name
        self.is_max = is_max
        self.v = np.zeros(0, dtype=np.float64)
        self.is_int = np.zeros(0, dtype=bool)
        self.seq = np.zeros(0, dtype=np.int64)  # -1 = no value yet

    def precheck(self, col: Column | None) -> None:
        assert col is not None
        if col.max_abs_int > 2**53:
            raise Unsupported(f"aggregation {self.name!r}: integers beyond 2**53")

    def extend(self, n: int) -> None:
        self.v = _cat(self.v, n, 0.0)
        self.is_int = _cat(self.is_int, n, False)
        self.seq = _cat(self.seq, n, -1)

    def _better(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
        return np.asarray(a > b) if self.is_max else np.asarray(a < b)

    def apply(
        self, rows: I64, col: Column | None, seq: I64, n_rows: int,
        counts: RowCounts | None = None,
    ) -> None:
        assert col is not None
        r = rows[col.valid]
        if len(r) == 0:
            return
        f = col.f[col.valid]
        s = seq[col.valid]
        ufunc = np.maximum if self.is_max else np.minimum
        best = np.full(n_rows, -np.inf if self.is_max else np.inf)
        ufunc.at(best, r, f)
        # earliest arrival among the values equal to the batch's best, per row
        cand = f == best[r]
        first = np.full(n_rows, np.iinfo(np.int64).max, dtype=np.int64)
        pos = np.flatnonzero(cand)
        np.minimum.at(first, r[pos], pos)
        touched = first != np.iinfo(np.int64).max
        rows_t = np.flatnonzero(touched)
        win = first[rows_t]
        new_v = f[win]
        take = (self.seq[rows_t] < 0) | self._better(new_v, self.v[rows_t])
        rows_t, win, new_v = rows_t[take], win[take], new_v[take]
        self.v[rows_t] = new_v
        self.seq[rows_t] = s[win]
        self.is_int[rows_t] = ~col.is_float[col.valid][win]

    def take(self, idx: I64) -> None:
        self.v, self.is_int, self.seq = self.v[idx], self.is_int[idx], self.seq[idx]

    @staticmethod
    def _finish(
        v: NDArray[np.float64], is_int: NDArray[np.bool_], has: NDArray[np.bool_]
    ) -> NDArray[Any]:
        """Output values as an array (int64 / float64 when all of one type, else objects)."""
        if has.all():
            if is_int.all():
                return v.astype(np.int64)
            if not is_int.any():
                return v
        return object_array([
            None if not h else int(x) if i else x
            for x, i, h in zip(v.tolist(), is_int.tolist(), has.tolist(), strict=True)
        ])

    def values(self, idx: I64) -> list[Any]:
        return self.values_array(idx).tolist()

    def combine(self, idx: NDArray[np.int64]) -> list[Any]:
        return self.combine_array(idx).tolist()

    def values_array(self, idx: I64) -> NDArray[Any]:
        return self._finish(self.v[idx], self.is_int[idx], self.seq[idx] >= 0)

    def combine_array(self, idx: NDArray[np.int64]) -> NDArray[Any]:
        present = idx >= 0
        safe = np.where(present, idx, 0)
        has = present & (self.seq[safe] >= 0)
        v = np.where(has, self.v[safe], -np.inf if self.is_max else np.inf)
        best = v.max(axis=1) if self.is_max else v.min(axis=1)
        seq = np.where(has & (v == best[:, None]), self.seq[safe], np.iinfo(np.int64).max)
        j = seq.argmin(axis=1)
        winner = safe[np.arange(len(idx)), j]
        any_has = np.asarray(has.any(axis=1), dtype=np.bool_)
        return self._finish(self.v[winner], self.is_int[winner], any_has)

    def dump(self) -> dict[str, list[Any]]:
        return {"v": self.v.tolist(), "is_int": self.is_int.tolist(), "seq": self.seq.tolist()}

    def load(self, d: dict[str, list[Any]]) -> None:
        self.v = np.asarray(d["v"], dtype=np.float64)
        self.is_int = np.asarray(d["is_int"], dtype=bool)
        self.seq = np.asarray(d["seq"], dtype=np.int64)
