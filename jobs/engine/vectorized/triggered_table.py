"""The triggered engine's window table: one row per open (key, window) in column arrays,
found through an open-addressing hash table on (key, start), grown and compacted between
kernel calls. :class:`TriggeredEngine` is built on it; the kernels read and write the arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.vectorized import trigger_kernels

I64 = NDArray[np.int64]
K: Any = trigger_kernels


def _pow2(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


class WindowTable:
    """The arrays of open windows and their hash index (the engine's subclass sets ``_fns``
    and ``_wpr`` before calling :meth:`_alloc`)."""

    _fns: I64
    _wpr: int
    _h_fill: int
    _next_deadline: int

    def _alloc(self, cap: int) -> None:
        a = max(1, len(self._fns))
        self.kcache = np.full((0, self._wpr), -1, dtype=np.int64)
        """Row a key last used per window slot (a hint checked against the row)."""
        self.n_rows = 0
        self.wi = np.zeros((cap, K.N_INT_COLS), dtype=np.int64)
        self.wb = np.zeros((cap, K.N_FLAGS), dtype=np.bool_)
        self.acc_i = np.zeros((cap, a), dtype=np.int64)
        self.acc_f = np.zeros((cap, a), dtype=np.float64)
        self.acc_k = np.zeros((cap, a), dtype=np.int8)
        self.acc_n = np.zeros((cap, a), dtype=np.int64)
        self.acc_t = np.zeros((cap, a), dtype=np.int64)
        self.lp_k = np.zeros((cap, a), dtype=np.int8)
        self.lp_i = np.zeros((cap, a), dtype=np.int64)
        self.lp_f = np.zeros((cap, a), dtype=np.float64)
        self._rehash(4 * cap)
        self._next_deadline = K.INT64_MAX

    _TABLE = ("wi", "wb", "acc_i", "acc_f", "acc_k", "acc_n", "acc_t", "lp_k", "lp_i", "lp_f")

    def _rehash(self, want: int) -> None:
        hc = _pow2(want)
        self.hk = np.zeros(hc, dtype=np.int64)
        self.hs = np.zeros(hc, dtype=np.int64)
        self.hv = np.zeros(hc, dtype=np.int64)
        self.hst = np.zeros(hc, dtype=np.int8)
        K.h_build(self.hk, self.hs, self.hv, self.hst, self.wi, self.wb, self.n_rows)
        self._h_fill = int(self.wb[: self.n_rows, K.B_LIVE].sum())

    def _reserve(self, new_rows: int) -> None:
        """Room for ``new_rows`` more windows: drop dead rows when they are many, grow the
        arrays, and keep the hash table at most half full (tombstones included)."""
        n = self.n_rows
        live = self.wb[:n, K.B_LIVE].copy()
        n_live = int(live.sum())
        cap = len(self.wi)
        if n + new_rows > cap or self._h_fill + new_rows > len(self.hk) // 2:
            if n_live < n:  # compact: keep live rows, in order
                for name in self._TABLE:
                    arr = getattr(self, name)
                    kept = arr[:n][live]
                    arr[:n_live] = kept
                self.n_rows = n = n_live
                self.kcache.fill(-1)  # row numbers moved
            need = n + new_rows
            if need > cap:
                new_cap = max(need, 2 * cap)
                for name in self._TABLE:
                    arr = getattr(self, name)
                    grown = np.zeros((new_cap, *arr.shape[1:]), dtype=arr.dtype)
                    grown[:n] = arr[:n]
                    setattr(self, name, grown)
            self._rehash(4 * (n + new_rows))

    def _table_args(self) -> tuple[Any, ...]:
        return (self.wi, self.wb, self.acc_i, self.acc_f, self.acc_k, self.acc_n,
                self.lp_k, self.lp_i, self.lp_f)
