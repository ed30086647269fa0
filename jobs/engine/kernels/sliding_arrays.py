"""The sliding kernel engine's arrays: its configuration, the held records (a CSR by key,
each key's records sorted by event time then arrival, with prefix sums), the windows by slot,
the deadline runs, per-key and per-window late counts; and the readers the engine and the state
conversion share. :class:`SlidingArrays` is the base of
:class:`~jobs.engine.kernels.sliding.SlidingKernelEngine`."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.engine import Engine
from jobs.engine.kernels import _sliding_kernels as K
from jobs.engine.kernels import _sliding_late_kernels as KL
from jobs.engine.kernels import _sliding_layout as L
from jobs.engine.kernels.handover import HandsOver
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.value_codes import ValueTable

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]

AGG_KINDS = {"count": K.COUNT, "sum": K.SUM, "mean": K.SUM, "min": K.MIN, "max": K.MAX,
             "first": K.FIRST, "last": K.LAST, "collect": K.COUNT, "count_distinct": K.COUNT}
BY_REF = ("count", "first", "last", "collect", "count_distinct")
"""Aggregates whose record input is kept as the original object (a reference into the
engine's value list): first/last/collect emit it, count of an expression keeps it for
snapshots; count_distinct also keeps its code in the int column (:mod:`.sliding_side`)."""
EXACT_INT = 2**53
TIME_LIMIT = 2**60
"""Event times and sizes the kernels take (sums with size and allowed lateness fit int64)."""
SUM_LIMIT = 2**61
"""Held int inputs of a sum may add up to this (a window's sum then fits int64)."""
FAR = 2**62
NO_TIME = np.iinfo(np.int64).min


def _clamp(v: int) -> int:
    return min(max(v, -FAR), FAR)


def _order(major: I64, minor: I64) -> I64:
    """``np.lexsort((minor, major))``: one stable argsort of ``major * span + minor`` when
    that fits int64, else the lexsort (both stable: the same permutation). Timsort finds the
    runs of nearly sorted input (windows pop nearly by start), many times faster than the
    lexsort's two passes."""
    if len(major) < 2:
        return np.arange(len(major), dtype=np.int64)
    lo, mlo = int(minor.min()), int(major.min())
    span = int(minor.max()) - lo + 1
    if (int(major.max()) - mlo + 1) * span >= 2**62:
        return np.lexsort((minor, major))
    return np.argsort((major - mlo) * span + (minor - lo), kind="stable")


class SlidingArrays(HandsOver):
    """Configuration and array state of a sliding kernel engine."""

    def __init__(self, defn: Definition, watermark: WatermarkMode) -> None:
        self.defn = defn
        self.mode: WatermarkMode = watermark
        wmd = defn.watermark
        self._size = int(defn.window.size or 0)
        self._al = int(defn.allowed_lateness)
        self._delay = wmd.delay
        self._event_basis = defn.lateness_basis == "event"
        self._bounded = watermark == "internal" and wmd.strategy == "bounded"
        self._source = wmd.strategy == "source"
        self._key_scope = self._bounded and wmd.scope == "key"
        """Each key's watermark is its own (``key_wm``, :mod:`.sliding_key`)."""
        self._idle = wmd.strategy == "bounded" and wmd.idle_advance
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._kinds = np.array([AGG_KINDS[fn] for fn in self._fns], dtype=np.int64)
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine (see ``_hand_over``)."""
        self.handed_over_because: str | None = None
        self._reset()

    def _reset(self) -> None:
        m = len(self._names)
        self.keys = KeyTable()
        self.kstart = np.zeros(0, dtype=np.int64)
        self.kend = np.zeros(0, dtype=np.int64)
        self.key_nwin = np.zeros(0, dtype=np.int64)
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.late_acc = np.zeros(0, dtype=np.int64)
        self.late_drop = np.zeros(0, dtype=np.int64)
        self.key_wm = np.zeros(0, dtype=np.int64)
        self.key_ib = np.zeros(0, dtype=np.int64)
        self.key_ibpt = np.zeros(0, dtype=np.int64)
        """``watermark.scope: key``: each key's watermark, idle base and the processing time
        of that base (``NO_TIME``: none)."""
        self.late_chunks: list[tuple[I64, I64, I64, I64]] = []
        """Per-window late counts since the last drain: (key code, start, accepted, dropped)
        arrays, summed per window (:meth:`_compact_late`)."""
        self.late_runs: list[tuple[I64, I64, I64, I64, I64]] = []
        """The units' late counts not yet summed into ``late_chunks``, as ``ingest_unit``'s
        runs: (key code per run, late-line starts and run offsets, accepted-late starts and
        run offsets)."""
        self.wm: int | None = None
        self.idle_base: int | None = None
        self.idle_base_pt: int | None = None
        """Idle advance under one watermark: the base it moves on from with processing time,
        and the processing time of that base (``EngineState.idle_base``)."""
        self.ended = False
        self.processing_time = 0
        self.max_t: int | None = None
        self.seq = 0
        self.held_abs = 0.0
        """|int inputs| of sums, added over the held records (bounds every window's sum)."""
        # held records (CSR by key code, each key's sorted by event time then arrival)
        self.rt = np.zeros(0, dtype=np.int64)
        self.rseq = np.zeros(0, dtype=np.int64)
        self.rvalid = np.zeros((m, 0), dtype=np.bool_)
        self.rvi = np.zeros((m, 0), dtype=np.int64)
        self.rvf = np.zeros((m, 0), dtype=np.float64)
        self.risf = np.zeros((m, 0), dtype=np.bool_)
        self.rref = np.zeros((m, 0), dtype=np.int64)
        self._prefix()
        # windows by slot
        self._cap = 0
        self.wstart = np.zeros(0, dtype=np.int64)
        self.wkey = np.zeros(0, dtype=np.int64)
        self.wcseq = np.zeros(0, dtype=np.int64)
        self.wborn = np.zeros(0, dtype=np.int64)
        self.wblate = np.zeros(0, dtype=np.bool_)
        self.wpassed = np.zeros(0, dtype=np.bool_)
        self.used = np.zeros(0, dtype=np.bool_)
        self.free = np.zeros(0, dtype=np.int64)
        self.n_free = 0
        self.born_next = 0
        self.cexp = np.zeros(0, dtype=np.int64)
        self.cslot = np.zeros(0, dtype=np.int64)
        """The windows not yet passed, sorted by close (start + size + 1)."""
        self.xexp = np.zeros(0, dtype=np.int64)
        self.xslot = np.zeros(0, dtype=np.int64)
        """The passed windows, sorted by expiry (close + allowed lateness)."""
        self.objs: list[Any] = []
        """Record inputs kept as objects (``BY_REF``), referenced by ``rref``."""
        self.distinct = ValueTable()
        """Codes of ``count_distinct`` inputs (held in ``rvi``)."""

    def _prefix(self) -> None:
        """Prefix sums over the held records: valid inputs, int sums (int64, wrapping: a
        difference is exact whenever the window's sum fits), float inputs."""
        m, r = self.rvalid.shape
        ints = self.rvalid & ~self.risf
        self.pc = np.zeros((m, r + 1), dtype=np.int64)
        self.pi = np.zeros((m, r + 1), dtype=np.int64)
        self.pf = np.zeros((m, r + 1), dtype=np.int64)
        if r:
            np.cumsum(self.rvalid, axis=1, out=self.pc[:, 1:])
            with np.errstate(over="ignore"):
                np.cumsum(np.where(ints, self.rvi, 0), axis=1, out=self.pi[:, 1:])
            np.cumsum(self.rvalid & self.risf, axis=1, out=self.pf[:, 1:])

    def _ensure_slots(self, need: int) -> None:
        if self.n_free >= need:
            return
        old = self._cap
        cap = max(2 * old, old + need - self.n_free, 1024)
        for name in ("wstart", "wkey", "wcseq", "wborn", "wblate", "wpassed", "used"):
            a = getattr(self, name)
            out = np.zeros(cap, dtype=a.dtype)
            out[:old] = a
            setattr(self, name, out)
        free = np.zeros(cap, dtype=np.int64)
        free[: self.n_free] = self.free[: self.n_free]
        new = np.arange(cap - 1, old - 1, -1, dtype=np.int64)
        free[self.n_free: self.n_free + len(new)] = new
        self.free = free
        self.n_free += len(new)
        self._cap = cap

    def _add_due(self, slots: I64, deadlines: I64, passed: bool) -> None:
        """Windows onto the close run (``passed`` False) or the expiry run: the new ones
        sorted once, then merged with the pending run (sequential, no per-window heap step).
        The order among equal deadlines is not observable (a call's panes are ordered
        afterwards), so the sort need not be stable."""
        o = np.argsort(deadlines)
        if passed:
            self.xexp, self.xslot = K.merge_due(self.xexp, self.xslot, deadlines[o], slots[o])
        else:
            self.cexp, self.cslot = K.merge_due(self.cexp, self.cslot, deadlines[o], slots[o])

    def _grow_keys(self) -> None:
        extra = len(self.keys) - len(self.kstart)
        if extra > 0:
            z = np.zeros(extra, dtype=np.int64)
            self.kstart = np.concatenate([self.kstart, z])
            self.kend = np.concatenate([self.kend, z])
            self.key_nwin = np.concatenate([self.key_nwin, z])
            self.key_max_t = np.concatenate([self.key_max_t, np.full(extra, NO_TIME)])
            self.late_acc = np.concatenate([self.late_acc, z])
            self.late_drop = np.concatenate([self.late_drop, z])
            none = np.full(extra, NO_TIME, dtype=np.int64)
            self.key_wm = np.concatenate([self.key_wm, none])
            self.key_ib = np.concatenate([self.key_ib, none])
            self.key_ibpt = np.concatenate([self.key_ibpt, none])

    def _held_abs(self) -> float:
        best = 0.0
        for j, fn in enumerate(self._fns):
            if fn in ("sum", "mean") and self.rvi.shape[1]:
                best = max(best, float(np.abs(self.rvi[j].astype(np.float64)).sum()))
        return best

    def _compact_late(self) -> None:
        """Sum the late-count chunks and runs into one chunk."""
        chunks = self.late_chunks + [KL.late_window_rows(*r) for r in self.late_runs]
        self.late_runs = []
        if not chunks:
            return
        c, s, a, d = (np.concatenate(x) for x in zip(*chunks, strict=True))
        o = np.lexsort((s, c))
        c, s, a, d = c[o], s[o], a[o], d[o]
        head = np.ones(len(c), dtype=np.bool_)
        head[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
        at = np.flatnonzero(head)
        self.late_chunks = [(c[at], s[at], np.add.reduceat(a, at), np.add.reduceat(d, at))]

    def _late_deltas(self) -> dict[str, list[Any]]:
        """The general engine's ``late_deltas`` (``"<key json>|<start>|<end>"`` to ``[key,
        start, end, accepted, dropped]``) of the counts since the last drain."""
        self._compact_late()
        if not self.late_chunks:
            return {}
        c, s, a, d = self.late_chunks[0]
        kjs = self.keys.json_array()
        kv = self.keys.values
        size = self._size
        out: dict[str, list[Any]] = {}
        for code, st, acc, drop in zip(c.tolist(), s.tolist(), a.tolist(), d.tolist(),
                                       strict=True):
            out[f"{kjs[code]}|{st}|{st + size}"] = [kv[code], st, st + size, acc, drop]
        return out

    def _window_values(self, slots: I64, lim: I64 | None = None) -> tuple[Any, ...]:
        """``K.window_values`` of ``slots`` (in that order): computed by key (in the order of
        ``slots`` within a key: by start for the callers, which makes the records' reads
        sequential), then put back in the order of ``slots``."""
        order = L.by_key(self.wkey[slots], len(self.keys))
        return K.window_values(
            slots[order], order, self.wstart, self.wkey, self.wcseq, self.kstart, self.kend, self.rt,
            self.rseq, self._kinds, self.rvalid, self.rvi, self.rvf, self.risf, self.pc,
            self.pi, self.pf, self._size,
            np.zeros(0, dtype=np.int64) if lim is None else lim[order],
        )
