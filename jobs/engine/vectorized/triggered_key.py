"""The triggered engine's per-key bounded watermarks (``watermark.scope: key`` with
``strategy: bounded`` on event time, with or without idle advance).

Each key's watermark moves with that key's records, one record at a time inside a unit; a
record that raises it fires the key's due on-time / late / expiry panes right after the
record's own late lines and count panes (:mod:`trigger_key_kernels`, one kernel pass per
unit). Processing-time timers fire at their key's watermark; idle advance moves every key
with an idle base to ``base + (now - base time)`` and runs what that passes, by window end,
key JSON, window start. ``collect`` / ``count_distinct`` entries are appended before the
kernel pass, each record judged at its key's watermark as it meets it, and forgotten when
that watermark expires their window (:mod:`triggered_side`). State: the per-key watermarks and idle bases are the general
engine's ``KeyState.watermark`` / ``idle_base`` / ``idle_base_pt`` and travel in the table
form (``key_wm``, ``key_ib``, ``key_ibpt``, ``key_hasib``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.state import EngineState, KeyState
from jobs.engine.vectorized import trigger_kernels, trigger_key_kernels
from jobs.engine.vectorized import triggered_side_kernels as SK
from jobs.engine.vectorized.emission_columns import EmissionColumns
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.triggered_output import emission_columns, no_output, out_buffers
from jobs.engine.vectorized.triggered_side import SideTables
from jobs.engine.vectorized.triggered_table import WindowTable

I64 = NDArray[np.int64]
K: Any = trigger_kernels
KK: Any = trigger_key_kernels
_KEY_ARRAYS = (("key_wm", np.int64, K.INT64_MIN), ("key_ib", np.int64, 0),
               ("key_ibpt", np.int64, 0), ("key_hasib", np.bool_, False),
               ("key_head", np.int64, -1), ("key_n", np.int64, 0))


class KeyWatermarks(WindowTable):
    """Per-key watermark arrays and the unit / idle / timer passes that use them (a base of
    :class:`~jobs.engine.vectorized.triggered.TriggeredEngine`; see the module docstring)."""

    keys: KeyTable
    key_wm: I64
    key_ib: I64
    key_ibpt: I64
    key_hasib: NDArray[np.bool_]
    key_head: I64
    key_n: I64
    rnext: I64
    key_max_t: I64
    processing_time: int
    seq: int
    side: SideTables | None
    idle: bool
    _p: I64
    _delay: int

    def _key_arrays(self) -> None:
        """Empty per-key arrays (no key has a watermark yet)."""
        for name, dt, fill in _KEY_ARRAYS:
            setattr(self, name, np.full(0, fill, dtype=dt))
        self.rnext = np.zeros(0, dtype=np.int64)

    def _grow_keys(self) -> None:
        n = len(self.keys)
        if len(self.key_wm) < n:
            m = max(n, 2 * len(self.key_wm))
            for name, dt, fill in _KEY_ARRAYS:
                old = getattr(self, name)
                grown = np.full(m, fill, dtype=dt)
                grown[: len(old)] = old
                setattr(self, name, grown)

    def _rebuild_key_lists(self) -> None:
        """The per-key row lists from the table (after a load or a compaction)."""
        self._grow_keys()
        if len(self.rnext) < len(self.wi):
            self.rnext = np.zeros(len(self.wi), dtype=np.int64)
        KK.build_key_lists(self.wi, self.wb, self.n_rows, self.key_head, self.rnext,
                           self.key_n)

    def _timers_set(self) -> None:
        """Overridden by the engine (its timer bookkeeping)."""

    def _count_accepted(self, pairs: I64) -> None:
        """Overridden by the engine (its late counts)."""

    def _ingest_keys(self, batch: Any, codes: I64, vi: I64, vf: Any, visf: Any,
                     vvalid: Any) -> EmissionColumns:
        """One unit's records under per-key watermarks: each record's late lines and panes
        (those of its own windows, then those its watermark move fires), in arrival order."""
        self._grow_keys()
        if len(self.rnext) < len(self.wi):
            self._rebuild_key_lists()
        n = len(codes)
        t = batch.event_times
        wpr = self.kcache.shape[1]
        a = vi.shape[1]
        cells = n * wpr

        if self.side is not None:  # each record's entries, judged at its key's watermark
            self.side.add_unit(codes, t, self.seq, batch.columns,
                               SK.key_wms_met(codes, t, self.key_wm, self._delay),
                               self._window_params(), int(self._p[K.P_AL]),
                               bool(self._p[K.P_EVENT_BASIS]))
        out_i, ok, oi, of = out_buffers(4 * cells + 2 * int(self.key_n[np.unique(codes)].sum()), a)
        acc_late = np.empty((cells, 2), dtype=np.int64)
        r = n_out = n_acc = 0
        while r < n:  # once, unless the table, its hash table or the output must grow
            due = np.empty(len(self.wi) + wpr, dtype=np.int64)
            r, n_rows, n_out, n_acc, min_close, h_fill, why = KK.ingest_keys_kernel(
                self._p, self._fns, codes, t, vi, vf, visf, vvalid, self.key_wm, self.key_ib,
                self.key_ibpt, self.key_hasib, self.idle, self.processing_time, self._delay,
                *self._table_args(), self.n_rows, self.hk, self.hs, self.hv, self.hst,
                out_i, ok, oi, of, acc_late, r, n_out, n_acc, self._h_fill, self.kcache,
                self.acc_t, self.seq, self.key_head, self.rnext, self.key_n, due)
            self.n_rows, self._h_fill = int(n_rows), int(h_fill)
            self._timers_set()
            self._next_deadline = min(self._next_deadline, int(min_close))
            if why == KK.STOP_TABLE:
                self._reserve(max(1024 * wpr, self.n_rows))
                self._rebuild_key_lists()
            elif why == KK.STOP_OUTPUT:
                bigger: tuple[Any, ...] = out_buffers(2 * len(out_i) + 8 * wpr, a)
                olds: tuple[Any, ...] = (out_i, ok, oi, of)
                for old, new in zip(olds, bigger, strict=True):
                    new[: int(n_out)] = old[: int(n_out)]
                out_i, ok, oi, of = bigger
        if n_acc:
            self._count_accepted(acc_late[:n_acc])
        self.seq += n  # the panes' side values read the unit's records as folded
        out = emission_columns(self, out_i, ok, oi, of, int(n_out), batch)  # type: ignore[arg-type]
        self._free_side_expired()
        return out

    def _window_params(self) -> tuple[int, int, int, int]:
        """The kernels' window type, size, step and alignment."""
        p = self._p
        return int(p[K.P_WTYPE]), int(p[K.P_SIZE]), int(p[K.P_STEP]), int(p[K.P_ALIGN])

    def _free_side_expired(self) -> None:
        """The side table forgets the windows their key's watermark expired (after their
        panes read it)."""
        if self.side is not None and self._p[K.P_WTYPE] != K.WT_GLOBAL:
            self.side.free_expired(self.key_wm, int(self._p[K.P_SIZE] + self._p[K.P_AL]))

    def _idle_keys(self, now: int) -> EmissionColumns:
        """Idle advance: every key with an idle base moves to it plus the processing time
        since; the windows that passes or expires run by window end, key JSON, start."""
        has = np.flatnonzero(self.key_hasib[: len(self.keys)])
        if len(has) == 0:
            return no_output(self)  # type: ignore[arg-type]
        self.key_wm[has] = self.key_ib[has] + (now - self.key_ibpt[has])
        rows = KK.idle_due_rows(self._p, self.wi, self.wb, self.n_rows, self.key_wm,
                                self.key_hasib)
        if len(rows) == 0:
            return no_output(self)  # type: ignore[arg-type]
        rank = self.keys.json_rank()[self.wi[rows, K.C_KEY]]
        order = np.lexsort((self.wi[rows, K.C_START], rank, self.wi[rows, K.C_CLOSE]))
        rows = np.ascontiguousarray(rows[order])
        out_i, ok, oi, of = out_buffers(2 * len(rows), self.acc_i.shape[1])
        n_out = KK.fire_rows_keyed(self._p, self._fns, rows, self.key_wm, *self._table_args(),
                                   self.hk, self.hs, self.hv, self.hst, out_i, ok, oi, of)
        self._timers_set()
        out = emission_columns(self, out_i, ok, oi, of, int(n_out), None)  # type: ignore[arg-type]
        self._free_side_expired()
        return out

    def _fire_timers_keyed(self, rows: I64, out: tuple[Any, ...]) -> int:
        """The due timers ``rows`` (in emission order), each at its key's watermark."""
        return int(KK.fire_timers_keyed(self._p, self._fns, rows, self.key_wm,
                                        *self._table_args(), *out))

    def _key_states(self, st: EngineState, kjs: Any, keys: Any) -> None:
        """Every key's watermark and idle base into the general state."""
        n = len(self.keys)
        for code in np.flatnonzero(self.key_wm[:n] != K.INT64_MIN).tolist():
            kj = kjs[code]
            ks = st.keys.get(kj)
            if ks is None:
                ks = st.keys[kj] = KeyState(key=keys[code], max_event_time=int(
                    self.key_max_t[code]))
            ks.watermark = int(self.key_wm[code])
            if self.key_hasib[code]:
                ks.idle_base, ks.idle_base_pt = int(self.key_ib[code]), int(self.key_ibpt[code])

    def _load_key_states(self, st: EngineState) -> None:
        """The general state's per-key watermarks and idle bases into the arrays."""
        for ks in st.keys.values():
            self.keys.code_of(ks.key)
        self._key_arrays()
        self._rebuild_key_lists()
        for ks in st.keys.values():
            code = self.keys.code_of(ks.key)
            if ks.watermark is not None:
                self.key_wm[code] = ks.watermark
            if ks.idle_base is not None and ks.idle_base_pt is not None:
                self.key_ib[code], self.key_ibpt[code] = ks.idle_base, ks.idle_base_pt
                self.key_hasib[code] = True

    def has_key_wms(self) -> bool:
        """Whether some key has its own watermark (loaded from a table or a state)."""
        return bool((self.key_wm[: len(self.keys)] != K.INT64_MIN).any())

    def _key_table(self) -> dict[str, Any]:
        """The per-key watermarks for the table form (absent: none)."""
        n = len(self.keys)
        return {name: np.ascontiguousarray(getattr(self, name)[:n]).tobytes()
                for name, _, _ in _KEY_ARRAYS[:4]}

    def _load_key_table(self, data: dict[str, Any]) -> None:
        n = len(self.keys)
        self._key_arrays()
        self._rebuild_key_lists()
        for name, dt, _ in _KEY_ARRAYS[:4]:
            if name in data:
                getattr(self, name)[:n] = np.frombuffer(data[name], dtype=dt, count=n)
