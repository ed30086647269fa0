"""The input side of :class:`~.sliding_triggers.SlidingTriggerEngine`: a unit's records
grouped by key, encoded as held-record rows, and its late lines counted.

Why a mixin: these steps run once per unit over all its records (bulk key codes, one column
per aggregation) and keep the engine's per-unit entry point short."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.errors import EngineError
from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels.sliding_trigger_keys import (
    EXACT_INT,
    SUM_LIMIT,
    TIME_LIMIT,
    KeyArrays,
)
from jobs.engine.kernels.sliding_trigger_side import SIDE_FNS
from jobs.engine.records import Key, RecordBatch, plain_key
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.value_codes import ValueTable
from jobs.engine.vectorized.values import (
    Unsupported,
    null_mask,
    numeric_column,
    object_values,
)


class UnitInput:
    """Grouping, encoding and late lines of a unit (see the module docstring)."""

    _key_table: KeyTable
    _out_keys: KeyTable
    _names: list[str]
    _fns: list[str]
    _star: list[bool]
    _distinct: ValueTable
    _size: int
    int_abs: int
    late_deltas: dict[str, list[Any]]

    def _kj(self, key: Key) -> str:
        raise NotImplementedError  # the engine's

    def _group_order(self, keys: Sequence[Any], n: int) -> tuple[
            list[tuple[str, Key]], NDArray[np.int64], NDArray[np.int64]]:
        """The unit's keys in first-seen order (key JSON, key), the records' indexes grouped
        by key (arrival order within a key) and each group's end in them. Keys are coded in
        bulk by the key table; the key JSON is computed once per distinct code (codes of one
        key JSON, e.g. a numpy and a Python int, are one group)."""
        codes = self._key_table.encode(keys)
        uniq, inv = np.unique(codes, return_inverse=True)
        inv = inv.reshape(-1)
        values = self._key_table.values
        gid_of: dict[str, int] = {}
        names: list[tuple[str, Key]] = []
        gmap = np.empty(len(uniq), dtype=np.int64)
        for u, c in enumerate(uniq.tolist()):
            key = plain_key(values[c])
            kj = self._kj(key)
            g = gid_of.get(kj)
            if g is None:
                g = gid_of[kj] = len(names)
                names.append((kj, key))
            gmap[u] = g
        g_rec = gmap[inv]
        first = np.full(len(names), n, dtype=np.int64)
        np.minimum.at(first, g_rec, np.arange(n, dtype=np.int64))
        rank = np.empty(len(names), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(names), dtype=np.int64)
        r_rec = rank[g_rec]
        order = np.argsort(r_rec, kind="stable")
        ends = np.cumsum(np.bincount(r_rec, minlength=len(names)))
        return [names[g] for g in np.argsort(rank).tolist()], order, ends

    def _encode(self, batch: RecordBatch, n: int, times: NDArray[np.int64]) -> tuple[
            NDArray[np.int64], NDArray[np.float64], list[NDArray[Any] | None]]:
        """The unit's held-record rows (refs filled in per key) and, per aggregation, its
        input objects (None for ``count(*)``); raises :class:`Unsupported` before any state
        changes for input the arrays cannot hold."""
        if n and int(np.abs(times).max()) > TIME_LIMIT:
            raise Unsupported("event times beyond 2**60")
        m = len(self._names)
        URT = np.zeros((n, K.R_AGG + K.R_WIDTH * m), dtype=np.int64)
        URF = np.zeros((n, max(m, 1)), dtype=np.float64)
        URT[:, K.R_T] = times
        cols: list[NDArray[Any] | None] = []
        budget = 0
        for j, (name, fn, star) in enumerate(zip(self._names, self._fns, self._star,
                                                 strict=True)):
            b = K.R_AGG + K.R_WIDTH * j
            if star:
                URT[:, b] = 1
                URT[:, b + 1] = 1
                cols.append(None)
                continue
            raw = batch.columns.get(name)
            if raw is None:
                raise EngineError(f"ingest: the batch has no column for aggregation {name!r}")
            ov = object_values(raw, n)  # plain Python values; lists stay one value each
            cols.append(ov)
            if fn in ("count", "first", "last") or fn in SIDE_FNS:
                valid = null_mask(ov, n)
                URT[:, b] = valid
                if fn == "count_distinct":
                    URT[valid, b + 1] = self._distinct.encode(ov[valid])
                continue
            col = numeric_column(name, raw, n)
            if col.max_abs_int > EXACT_INT:
                raise Unsupported(f"column {name!r}: integers beyond 2**53")
            URT[:, b] = col.valid
            URT[:, b + 1] = col.i
            URT[:, b + 2] = col.is_float
            URF[:, j] = col.f
            if fn in ("sum", "mean"):
                ints = col.i[col.valid & ~col.is_float]
                budget += int(np.abs(ints).sum()) if len(ints) else 0
        if self.int_abs + budget >= SUM_LIMIT:
            raise Unsupported("integer sums could leave 64 bits")
        self.int_abs += budget
        return URT, URF, cols

    def _count_late(self, ka: KeyArrays, s: int, accepted: int = 0, dropped: int = 0) -> None:
        ka.late_acc += accepted
        ka.late_drop += dropped
        e = s + self._size
        dk = f"{ka.kj}|{s}|{e}"
        row = self.late_deltas.get(dk)
        if row is None:
            row = self.late_deltas[dk] = [ka.key, s, e, 0, 0]
        row[3] += accepted
        row[4] += dropped
