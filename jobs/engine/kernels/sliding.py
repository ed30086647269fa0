"""SlidingKernelEngine: the general engine's API and output for KIP-450 sliding windows with
``emit: final``, on array state driven by compiled kernels (:mod:`._sliding_kernels`).

For a qualifying definition (:func:`jobs.engine.kernels.qualify.qualifies`) a sliding window
emits one pane, at its expiry, and nothing fires between the records of an arrival unit. A
window's content is then, at every moment, exactly the key's held records inside its bounds, so
the state holds no accumulator per window: the held records (one CSR of arrays sorted by key,
event time and arrival), and per window its start, creation data and whether the watermark
passed its close. One kernel pass applies a unit's records (window creation, late lines,
accepted-late counts), the watermark advances once, a second pass pops the windows it closes or
expires, and their values are computed from the records (prefix sums for counts and int sums).
Cost per record: a few binary searches plus its late lines; a window costs its creation and its
pane, never one step per record that joins it.

Python work per unit: encoding keys and value columns, re-laying the held records (numpy
gathers, O(held records)), one ``LateRecord`` per late line, one ``Pane`` and values dict per
fired window.

State snapshots *are* the general engine's (:meth:`SlidingKernelEngine.to_engine_state`); a
state the arrays cannot hold (or an input batch they cannot: non-numeric values, ints beyond
2**53, times beyond 2**60), or a loaded window whose float accumulator depends on an arrival
order the records no longer show, hands over to the general engine for good.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.definition.windows import Sliding, kind_class
from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _sliding_kernels as K
from jobs.engine.kernels.handover import HandsOver, KernelState
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.records import Emission, LateRecord, RecordBatch, make_pane
from jobs.engine.state import EngineState, KeyState, WindowState
from jobs.engine.vectorized.columns import _no_gc
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.values import Unsupported, null_mask, numeric_column

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]

AGG_KINDS = {"count": K.COUNT, "sum": K.SUM, "mean": K.SUM, "min": K.MIN, "max": K.MAX,
             "first": K.FIRST, "last": K.LAST}
BY_REF = ("count", "first", "last")
"""Aggregates whose record input is kept as the original object (a reference into the
engine's value list): first/last emit it, count of an expression keeps it for snapshots."""
EXACT_INT = 2**53
TIME_LIMIT = 2**60
"""Event times and sizes the kernels take (sums with size and allowed lateness fit int64)."""
SUM_LIMIT = 2**61
"""Held int inputs of a sum may add up to this (a window's sum then fits int64)."""
FAR = 2**62
NO_TIME = np.iinfo(np.int64).min


def _late_maker() -> Any:
    """``LateRecord(...)`` without the frozen dataclass's per-field ``object.__setattr__``
    (as ``jobs.engine.records.make_pane`` does for panes); an ordinary, equal ``LateRecord``."""
    from dataclasses import fields

    names = tuple(f.name for f in fields(LateRecord))
    slots = [LateRecord.__dict__.get(n) for n in names]
    if names != ("key", "event_time", "window_start", "window_end", "reason", "record",
                 "type") or not all(type(d).__name__ == "member_descriptor" for d in slots):
        return None  # pragma: no cover - LateRecord changed: use the constructor
    s_key, s_t, s_ws, s_we, s_reason, s_rec, s_type = (d.__set__ for d in slots)  # type: ignore[union-attr]
    new = object.__new__

    def make_late(key: Any, event_time: int, window_start: int, window_end: int, reason: str,
                  record: Any) -> LateRecord:
        r = new(LateRecord)
        s_key(r, key)
        s_t(r, event_time)
        s_ws(r, window_start)
        s_we(r, window_end)
        s_reason(r, reason)
        s_rec(r, record)
        s_type(r, "late")
        return r

    return make_late


make_late = _late_maker() or LateRecord


def _dicts(names: list[str], cols: list[list[Any]]) -> list[dict[str, Any]]:
    """One ``values`` dict per pane (dict displays for one to three names: ~2x faster)."""
    if len(names) == 1:
        (a,), (ca,) = names, cols
        return [{a: x} for x in ca]
    if len(names) == 2:
        (a, b), (ca, cb) = names, cols
        return [{a: x, b: y} for x, y in zip(ca, cb, strict=True)]
    if len(names) == 3:
        (a, b, c), (ca, cb, cc) = names, cols
        return [{a: x, b: y, c: z} for x, y, z in zip(ca, cb, cc, strict=True)]
    return [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]


class SlidingKernelEngine(HandsOver):
    """Same API and observable output as :class:`jobs.engine.Engine` for qualifying sliding
    definitions (see the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        problems = qualification_problems(defn)
        if problems or kind_class(defn.window.type) is not Sliding:
            raise EngineError("sliding kernel engine: " + "; ".join(
                problems or [f"window.type: {defn.window.type} is not sliding"]))
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        self.defn = defn
        self.mode: WatermarkMode = watermark
        wmd = defn.watermark
        self._size = int(defn.window.size or 0)
        self._al = int(defn.allowed_lateness)
        self._delay = wmd.delay
        self._event_basis = defn.lateness_basis == "event"
        self._bounded = watermark == "internal" and wmd.strategy == "bounded"
        self._source = wmd.strategy == "source"
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._kinds = np.array([AGG_KINDS[fn] for fn in self._fns], dtype=np.int64)
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine (see ``_hand_over``)."""
        self.handed_over_because: str | None = None
        self._reset()
        if state is not None:
            self._load(state)

    # ------------------------------------------------------------------ state arrays

    def _reset(self) -> None:
        m = len(self._names)
        self.keys = KeyTable()
        self.kstart = np.zeros(0, dtype=np.int64)
        self.kend = np.zeros(0, dtype=np.int64)
        self.key_nwin = np.zeros(0, dtype=np.int64)
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.late_acc = np.zeros(0, dtype=np.int64)
        self.late_drop = np.zeros(0, dtype=np.int64)
        self.late_chunks: list[tuple[I64, I64, I64, I64]] = []
        """Per-window late counts since the last drain: (key code, start, accepted, dropped)
        arrays, one chunk per unit (summed when read)."""
        self.wm: int | None = None
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
        self.hexp = np.zeros(0, dtype=np.int64)
        self.hslot = np.zeros(0, dtype=np.int64)
        self.hn = 0
        """A min-heap of (deadline, slot): a window's close, then its expiry."""
        self.objs: list[Any] = []
        """Record inputs kept as objects (``BY_REF``), referenced by ``rref``."""

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
        hcap = 2 * cap  # a window has at most one heap entry
        if len(self.hexp) < hcap:
            for name in ("hexp", "hslot"):
                h = np.zeros(hcap, dtype=np.int64)
                h[: self.hn] = getattr(self, name)[: self.hn]
                setattr(self, name, h)

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

    # ------------------------------------------------------------------ public API

    @property
    def state(self) -> SlidingKernelState | EngineState:
        """``.snapshot()`` gives the general engine's snapshot data of this state."""
        if self.general is not None:
            return self.general.state
        return SlidingKernelState(self)

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit (:meth:`jobs.engine.Engine.ingest`): each record's late lines in
        arrival order, then the panes of the windows the unit's watermark advance expires."""
        if self.general is not None:
            return self.general.ingest(batch)
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            self.processing_time = batch.processing_time
        n = len(batch)
        if n == 0:
            return []
        try:
            cols = self._columns(batch, n)
            times = batch.event_times
            if int(times.min()) < -TIME_LIMIT or int(times.max()) > TIME_LIMIT:
                raise Unsupported(f"event times beyond +-2**60 ms (key {batch.keys[0]!r})")
        except Unsupported as exc:
            return self._hand_over(batch, str(exc))
        valid, vi, vf, isf, ref, objs = cols
        self.objs.extend(objs)
        codes = self.keys.encode(batch.keys)
        self._grow_keys()
        order = np.argsort(codes, kind="stable")
        size, al = self._size, self._al
        known = self.wm is not None
        if known:
            assert self.wm is not None
            wm0 = _clamp(self.wm)
            horizon = _clamp(self.wm - size - 2 - al)
            hz1 = _clamp(self.wm - size - 1 - al)
            cl = _clamp(self.wm - size - 1)
        else:
            wm0 = horizon = hz1 = cl = -FAR
        seq0 = self.seq
        (perm, kstart, kend, rt, win_start, win_key, win_blate, win_cseq, drop_idx, drop_start,
         drop_reason, acc_idx, acc_start) = K.ingest_unit(
            len(self.keys), self.kstart, self.kend, self.rt, order, codes, times, seq0,
            self._event_basis, known, wm0, horizon, hz1, cl, size,
        )
        # the new held records
        self.kstart, self.kend, self.rt = kstart, kend, rt
        self.rseq = np.concatenate([self.rseq, np.arange(seq0, seq0 + n, dtype=np.int64)])[perm]
        self.rvalid = np.concatenate([self.rvalid, valid], axis=1)[:, perm]
        self.rvi = np.concatenate([self.rvi, vi], axis=1)[:, perm]
        self.rvf = np.concatenate([self.rvf, vf], axis=1)[:, perm]
        self.risf = np.concatenate([self.risf, isf], axis=1)[:, perm]
        self.rref = np.concatenate([self.rref, ref], axis=1)[:, perm]
        self._prefix()
        self.held_abs = self._held_abs()
        self.seq += n
        # the new windows, on the heap at their close
        nw = len(win_start)
        if nw:
            self._ensure_slots(nw)
            slots = self.free[self.n_free - nw: self.n_free][::-1].copy()
            self.n_free -= nw
            self.wstart[slots] = win_start
            self.wkey[slots] = win_key
            self.wcseq[slots] = win_cseq
            self.wblate[slots] = win_blate
            self.wpassed[slots] = False
            self.used[slots] = True
            self.wborn[slots] = np.arange(self.born_next, self.born_next + nw, dtype=np.int64)
            self.born_next += nw
            np.add.at(self.key_nwin, win_key, 1)
            self.hn = K.push_windows(slots, win_start, size, self.hexp, self.hslot, self.hn)
        out = self._late(batch, codes, drop_idx, drop_start, drop_reason, acc_idx, acc_start)
        np.maximum.at(self.key_max_t, codes, times)
        tmax = int(times.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self._bounded:
            cand = tmax - self._delay
            if self.wm is None or cand > self.wm:
                self.wm = cand
        out.extend(self._fire(np.unique(codes)))
        if len(self.objs) > 65536:
            self._compact_objs()
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark to ``wm_ms`` (never back): ``source`` strategy, or a host that
        drives the watermark (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        if not (self._source or self.mode == "external"):
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use Engine(..., watermark='external') to drive it)"
            )
        if self.ended or (self.wm is not None and wm_ms <= self.wm):
            return []
        self.wm = int(wm_ms)
        return self._fire(np.zeros(0, dtype=np.int64))

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        if self.ended:
            return []
        self.ended = True
        return self._fire(np.arange(len(self.keys), dtype=np.int64))

    def open_windows(self) -> list[dict[str, Any]]:
        """Open windows as :meth:`jobs.engine.Engine.open_windows` reports them."""
        if self.general is not None:
            return self.general.open_windows()
        slots = np.flatnonzero(self.used)
        if len(slots) == 0:
            return []
        kjs = self.keys.json_array()
        k = self.wkey[slots]
        order = sorted(range(len(slots)), key=lambda i: (kjs[k[i]], int(self.wstart[slots[i]])))
        slots = slots[order]
        vals = self._window_values(slots)
        values = self._values(vals)
        first_t, last_t, elements = (v.tolist() for v in vals[:3])
        out = []
        for i, w in enumerate(slots.tolist()):
            s = int(self.wstart[w])
            out.append({
                "key": self.keys.values[int(self.wkey[w])], "window_start": s,
                "window_end": s + self._size, "elements": elements[i], "pending": elements[i],
                "panes_emitted": 0, "values": values[i], "first_event_time": first_t[i],
                "last_event_time": last_t[i],
            })
        return out

    def drain_late_counts(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per (key, window) since the last drain."""
        if self.general is not None:
            return self.general.drain_late_counts()
        deltas = self._late_deltas()
        self.late_chunks = []
        return [
            {"key": v[0], "window_start": v[1], "window_end": v[2], "accepted": v[3],
             "dropped": v[4]}
            for _, v in sorted(deltas.items())
        ]

    def late_totals(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per key since the engine's state began."""
        if self.general is not None:
            return self.general.late_totals()
        kjs = self.keys.json_array()
        have = np.flatnonzero((self.late_acc > 0) | (self.late_drop > 0)).tolist()
        return [
            {"key": self.keys.values[c], "accepted": int(self.late_acc[c]),
             "dropped": int(self.late_drop[c])}
            for c in sorted(have, key=lambda c: kjs[c])
        ]

    # ------------------------------------------------------------------ internals

    def _columns(self, batch: RecordBatch, n: int) -> tuple[
            NDArray[np.bool_], I64, NDArray[np.float64], NDArray[np.bool_], I64, list[Any]]:
        """The aggregation inputs as (aggregation, record) arrays; raises
        :class:`Unsupported` (before any state changes) for values the arrays cannot hold."""
        m = len(self._names)
        valid = np.ones((m, n), dtype=np.bool_)
        vi = np.zeros((m, n), dtype=np.int64)
        vf = np.zeros((m, n), dtype=np.float64)
        isf = np.zeros((m, n), dtype=np.bool_)
        ref = np.full((m, n), -1, dtype=np.int64)
        objs: list[Any] = []
        budget = 0.0
        for j, (name, fn, star) in enumerate(zip(self._names, self._fns, self._star,
                                                 strict=True)):
            if star:
                continue
            raw = batch.columns.get(name)
            if raw is None:
                raise EngineError(f"ingest: the batch has no column for aggregation {name!r}")
            if fn in BY_REF:
                valid[j] = null_mask(raw, n)
                ref[j] = np.arange(n, dtype=np.int64) + len(self.objs) + len(objs)
                objs.extend(raw.tolist() if isinstance(raw, np.ndarray) else raw)
                continue
            col = numeric_column(name, raw, n)
            if col.max_abs_int > EXACT_INT:
                raise Unsupported(f"column {name!r}: integers beyond 2**53")
            valid[j] = col.valid
            vf[j] = col.f
            vi[j] = col.i
            isf[j] = col.is_float
            if fn in ("sum", "mean"):
                budget = max(budget, float(n) * col.max_abs_int)
        if self.held_abs + budget >= SUM_LIMIT:
            raise Unsupported("integer sums could leave 64 bits")
        return valid, vi, vf, isf, ref, objs

    def _compact_objs(self) -> None:
        """Drop the input objects no held record refers to, when they are most of the list
        (it grows by every unit's values of count-of-expression, first and last)."""
        rows = [j for j, (fn, star) in enumerate(zip(self._fns, self._star, strict=True))
                if fn in BY_REF and not star]
        if not rows:
            self.objs = []
            return
        live = np.zeros(self.rref.shape[1], dtype=np.bool_)
        for c0, c1 in zip(self.kstart.tolist(), self.kend.tolist(), strict=True):
            live[c0:c1] = True
        refs = self.rref[rows][:, live]
        if 4 * refs.size >= len(self.objs):
            return
        objs = self.objs
        self.objs = [objs[r] for r in refs.ravel().tolist()]
        new = np.full(self.rref.shape, -1, dtype=np.int64)
        new[np.ix_(np.array(rows, dtype=np.int64), np.flatnonzero(live))] = np.arange(refs.size, dtype=np.int64).reshape(
            refs.shape)
        self.rref = new

    def _held_abs(self) -> float:
        best = 0.0
        for j, fn in enumerate(self._fns):
            if fn in ("sum", "mean") and self.rvi.shape[1]:
                best = max(best, float(np.abs(self.rvi[j].astype(np.float64)).sum()))
        return best

    def _late(self, batch: RecordBatch, codes: I64, drop_idx: I64, drop_start: I64,
              drop_reason: NDArray[np.int8], acc_idx: I64, acc_start: I64) -> list[Emission]:
        """Late lines (arrival order, then window start) and late counts of one unit."""
        if len(drop_idx) == 0 and len(acc_idx) == 0:
            return []
        size = self._size
        dcodes = codes[drop_idx]
        acodes = codes[acc_idx]
        np.add.at(self.late_drop, dcodes, 1)
        np.add.at(self.late_acc, acodes, 1)
        self.late_chunks.append((
            np.concatenate([acodes, dcodes]), np.concatenate([acc_start, drop_start]),
            np.concatenate([np.ones(len(acodes), dtype=np.int64),
                            np.zeros(len(dcodes), dtype=np.int64)]),
            np.concatenate([np.zeros(len(acodes), dtype=np.int64),
                            np.ones(len(dcodes), dtype=np.int64)]),
        ))
        if len(self.late_chunks) > 64:
            self._compact_late()
        if len(drop_idx) == 0:
            return []
        o = np.lexsort((drop_start, drop_idx))
        idx = drop_idx[o]
        starts = drop_start[o]
        kv = self.keys.values
        records = batch.records
        reasons = ("expired", "before_watermark")
        keys = [kv[c] for c in codes[idx].tolist()]
        recs: list[Any] = ([records[i] for i in idx.tolist()] if records is not None
                           else [None] * len(idx))
        why = [reasons[r] for r in drop_reason[o].tolist()]
        with _no_gc():
            return list(map(make_late, keys, batch.event_times[idx].tolist(), starts.tolist(),
                            (starts + size).tolist(), why, recs))

    def _compact_late(self) -> None:
        """Sum the late-count chunks into one."""
        if not self.late_chunks:
            return
        c, s, a, d = (np.concatenate(x) for x in zip(*self.late_chunks, strict=True))
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

    def _fire(self, touched: I64) -> list[Emission]:
        """Pop the windows whose close or expiry the watermark reached; emit the expired ones
        by window end, key JSON, window start; forget the held records no window needs any
        more and the keys left with nothing (the general engine does both for the keys it
        visits: those of the unit and those whose windows it popped)."""
        if self.wm is None and not self.ended:
            return []
        wm = _clamp(self.wm) if self.wm is not None else 0
        visited = np.zeros(len(self.keys), dtype=np.bool_)
        visited[touched] = True
        slots, self.n_free, self.hn = K.pop_due(
            wm, self.ended, self._size, self._al, self.wstart, self.wkey, self.wpassed,
            self.used, self.key_nwin, self.free, self.n_free, self.hexp, self.hslot, self.hn,
            visited,
        )
        panes: list[Emission] = []
        if len(slots):
            k = self.wkey[slots]
            s = self.wstart[slots]
            order = np.lexsort((s, self.keys.json_rank()[k], s))
            slots = slots[order]
            vals = self._window_values(slots)
            wm_out = None if self.ended else self.wm
            now = self.processing_time
            kv = self.keys.values
            size = self._size
            with _no_gc():
                values = self._values(vals)
                panes = [
                    make_pane(kv[c], st, st + size, "ON_TIME", 0, True, True, False, v, now,
                              wm_out, ft, lt)
                    for c, st, ft, lt, v in zip(self.wkey[slots].tolist(),
                                                self.wstart[slots].tolist(), vals[0].tolist(),
                                                vals[1].tolist(), values, strict=True)
                ]
        keys = np.flatnonzero(visited)
        K.prune(keys, self.kstart, self.kend, self.rt, wm, self.ended, self._size, self._al)
        gone = keys[(self.key_nwin[keys] == 0) & (self.kstart[keys] == self.kend[keys])
                    & (self.late_acc[keys] == 0) & (self.late_drop[keys] == 0)]
        self.key_max_t[gone] = NO_TIME
        return panes

    def _window_values(self, slots: I64) -> tuple[Any, ...]:
        return K.window_values(
            slots, self.wstart, self.wkey, self.wcseq, self.kstart, self.kend, self.rt,
            self.rseq, self._kinds, self.rvalid, self.rvi, self.rvf, self.risf, self.pc,
            self.pi, self.pf, self._size,
        )

    def _values(self, vals: tuple[Any, ...]) -> list[dict[str, Any]]:
        """The ``values`` dict of each window (``aggregates.result``'s rules)."""
        _, _, elements, cnt, osum, ofs, oisf, has, _, _, oidx = vals
        cols: list[list[Any]] = []
        for j, fn in enumerate(self._fns):
            c = cnt[j]
            if fn == "count":
                cols.append(c.tolist())
                continue
            if fn in ("first", "last"):
                objs = self.objs
                refs = np.where(has[j], self.rref[j, np.maximum(oidx[j], 0)], -1).tolist()
                cols.append([objs[r] if r >= 0 else None for r in refs])
                continue
            isf = oisf[j]
            if fn == "mean":
                num = np.where(isf, ofs[j], osum[j].astype(np.float64))
                with np.errstate(divide="ignore", invalid="ignore"):
                    mean = num / c
                cols.append([None if n == 0 else x
                             for n, x in zip(c.tolist(), mean.tolist(), strict=True)])
                continue
            if fn == "sum":
                if isf.any():
                    cols.append([f if b else i for i, f, b in zip(
                        osum[j].tolist(), ofs[j].tolist(), isf.tolist(), strict=True)])
                else:
                    cols.append(osum[j].tolist())
                continue
            cols.append([(f if b else i) if h else None for h, b, i, f in zip(
                has[j].tolist(), isf.tolist(), osum[j].tolist(), ofs[j].tolist(), strict=True)])
        if not cols:
            return [{} for _ in range(len(elements))]
        return _dicts(self._names, cols)

    def _hand_over(self, batch: RecordBatch, why: str) -> list[Emission]:
        """Convert the state to the general engine's and let it run from now on (this batch
        included): exactness over speed for input the arrays cannot hold."""
        self.handed_over_because = why
        self.general = Engine(self.defn, state=self.to_engine_state(), watermark=self.mode)
        return self.general.ingest(batch)

    # ------------------------------------------------------------------ state conversion

    def _record_vals(self, x: int) -> list[Any]:
        """Held record ``x``'s inputs as the general engine holds them."""
        out: list[Any] = []
        for j, (fn, star) in enumerate(zip(self._fns, self._star, strict=True)):
            if star:
                out.append(1)
            elif fn in BY_REF:
                out.append(self.objs[int(self.rref[j, x])])
            elif not self.rvalid[j, x]:
                out.append(None)
            elif self.risf[j, x]:
                out.append(float(self.rvf[j, x]))
            else:
                out.append(int(self.rvi[j, x]))
        return out

    def _accs(self, vals: tuple[Any, ...], q: int) -> list[Any]:
        """Window ``q``'s accumulators (of ``_window_values``) as the general engine's."""
        _, _, _, cnt, osum, ofs, oisf, has, ot, oseq, oidx = vals
        out: list[Any] = []
        for j, fn in enumerate(self._fns):
            s: Any = float(ofs[j, q]) if oisf[j, q] else int(osum[j, q])
            if fn == "count":
                out.append(int(cnt[j, q]))
            elif fn == "sum":
                out.append(s)
            elif fn == "mean":
                out.append([s, int(cnt[j, q])])
            elif not has[j, q]:
                out.append(None)
            elif fn in ("first", "last"):
                out.append([int(ot[j, q]), int(oseq[j, q]),
                            self.objs[int(self.rref[j, int(oidx[j, q])])]])
            else:
                out.append(s)
        return out

    def to_engine_state(self) -> EngineState:
        """This state as the general engine's :class:`EngineState` (equal to the one the
        general engine would hold after the same calls)."""
        if self.general is not None:
            return self.general.state
        st = EngineState(
            processing_time=self.processing_time, watermark=self.wm, ended=self.ended,
            max_event_time=self.max_t, seq=self.seq, late_deltas=self._late_deltas(),
        )
        nrec = self.kend - self.kstart
        present = np.flatnonzero((self.key_nwin > 0) | (nrec > 0) | (self.late_acc > 0)
                                 | (self.late_drop > 0))
        kjs = self.keys.json_array()
        slots = np.flatnonzero(self.used)
        slots = slots[np.argsort(self.wborn[slots], kind="stable")]
        vals = self._window_values(slots)
        first_t, last_t, elements = (v.tolist() for v in vals[:3])
        by_key: dict[int, list[int]] = {}
        for q, w in enumerate(slots.tolist()):
            by_key.setdefault(int(self.wkey[w]), []).append(q)
        size = self._size
        for c in present.tolist():
            mt = int(self.key_max_t[c])
            ks = KeyState(
                key=self.keys.values[c], max_event_time=None if mt == NO_TIME else mt,
                late_accepted=int(self.late_acc[c]), late_dropped=int(self.late_drop[c]),
                records=[[int(self.rt[x]), int(self.rseq[x]), self._record_vals(x)]
                         for x in range(int(self.kstart[c]), int(self.kend[c]))],
            )
            for q in by_key.get(c, []):
                w = int(slots[q])
                s = int(self.wstart[w])
                ks.windows[s] = WindowState(
                    start=s, end=s + size, close=s + size + 1, accs=self._accs(vals, q),
                    first_t=first_t[q], last_t=last_t[q], elements=elements[q],
                    pending=elements[q], emitted=0, passed=bool(self.wpassed[w]),
                    born_late=bool(self.wblate[w]),
                )
            st.keys[str(kjs[c])] = ks
        return st

    def _load(self, state: Any) -> None:
        """Start from a general-engine state or snapshot (the format both engines write);
        one the arrays cannot hold keeps running on the general engine."""
        if isinstance(state, SlidingKernelState):
            state = state.snapshot()
        st = state if isinstance(state, EngineState) else EngineState.restore(state)
        why = self._cannot_hold(st)
        if why is None:
            why = self._load_arrays(st)
        if why is not None:
            self._reset()
            self.handed_over_because = why
            self.general = Engine(self.defn, state=st, watermark=self.mode)

    def _load_arrays(self, st: EngineState) -> str | None:
        """Fill the arrays from ``st`` (checked by ``_cannot_hold``); returns why the result is
        not ``st`` exactly (a window whose float inputs were added in an order the held
        records do not show), or None."""
        self.wm, self.ended = st.watermark, st.ended
        self.processing_time, self.max_t, self.seq = st.processing_time, st.max_event_time, st.seq
        kss = list(st.keys.values())
        codes = (self.keys.encode([ks.key for ks in kss]) if kss
                 else np.zeros(0, dtype=np.int64))
        self._grow_keys()
        m = len(self._names)
        times: list[int] = []
        seqs: list[int] = []
        rvals: list[list[Any]] = []
        order = sorted(range(len(kss)), key=lambda i: int(codes[i]))
        for i in order:
            ks, c = kss[i], int(codes[i])
            self.late_acc[c] = ks.late_accepted
            self.late_drop[c] = ks.late_dropped
            self.key_max_t[c] = NO_TIME if ks.max_event_time is None else ks.max_event_time
            self.kstart[c] = len(times)
            for rec in ks.records:
                times.append(rec[0])
                seqs.append(rec[1])
                rvals.append(rec[2])
            self.kend[c] = len(times)
        r = len(times)
        self.rt = np.array(times, dtype=np.int64)
        self.rseq = np.array(seqs, dtype=np.int64)
        self.rvalid = np.ones((m, r), dtype=np.bool_)
        self.rvi = np.zeros((m, r), dtype=np.int64)
        self.rvf = np.zeros((m, r), dtype=np.float64)
        self.risf = np.zeros((m, r), dtype=np.bool_)
        self.rref = np.full((m, r), -1, dtype=np.int64)
        for j, (fn, star) in enumerate(zip(self._fns, self._star, strict=True)):
            if star:
                continue
            col = [v[j] for v in rvals]
            if fn in BY_REF:
                self.rvalid[j] = [v is not None for v in col]
                self.rref[j] = np.arange(len(self.objs), len(self.objs) + r)
                self.objs.extend(col)
                continue
            for x, v in enumerate(col):
                if v is None:
                    self.rvalid[j, x] = False
                elif type(v) is float:
                    self.risf[j, x] = True
                    self.rvf[j, x] = v
                else:
                    self.rvi[j, x] = v
                    self.rvf[j, x] = float(v)
        self._prefix()
        self.held_abs = self._held_abs()
        code_of = {id(ks): int(c) for ks, c in zip(kss, codes.tolist(), strict=True)}
        wins = [(ks, w) for ks in kss for w in ks.windows.values()]
        self._ensure_slots(len(wins))
        slots = []
        for ks, w in wins:
            self.n_free -= 1
            slot = int(self.free[self.n_free])
            slots.append(slot)
            c = code_of[id(ks)]
            assert w.start is not None
            self.used[slot] = True
            self.wkey[slot] = c
            self.wstart[slot] = w.start
            self.wcseq[slot] = st.seq - 1
            self.wblate[slot] = w.born_late
            self.wpassed[slot] = w.passed
            self.wborn[slot] = self.born_next
            self.born_next += 1
            self.key_nwin[c] += 1
            dl = w.close + self._al if w.passed else w.close
            self.hn = K.heap_push(self.hexp, self.hslot, self.hn, min(dl, 2**63 - 1), slot)
        if st.late_deltas:
            kj_code = {str(k): c for c, k in enumerate(self.keys.json_array().tolist())}
            rows = list(st.late_deltas.items())
            self.late_chunks = [(
                np.array([kj_code[dk.rsplit("|", 2)[0]] for dk, _ in rows], dtype=np.int64),
                np.array([v[1] for _, v in rows], dtype=np.int64),
                np.array([v[3] for _, v in rows], dtype=np.int64),
                np.array([v[4] for _, v in rows], dtype=np.int64),
            )]
        if slots:
            sl = np.array(slots, dtype=np.int64)
            vals = self._window_values(sl)
            first_t, last_t, elements = (v.tolist() for v in vals[:3])
            for q, (ks, w) in enumerate(wins):
                mine = (self._accs(vals, q), first_t[q], last_t[q], elements[q])
                theirs = (w.accs, w.first_t, w.last_t, w.elements)
                if _canon(mine) != _canon(theirs):
                    return (f"state: key {ks.key!r} window {w.start} holds values its held "
                            "records do not give in their order (float inputs out of order)")
        return None

    def _cannot_hold(self, st: EngineState) -> str | None:
        """Why the arrays cannot hold ``st`` exactly (None when they can)."""
        if st.idle_base is not None:
            return "state: an idle-advance base"
        size = self._size
        for kj, ks in st.keys.items():
            if ks.watermark is not None or ks.idle_base is not None:
                return f"state: key {kj} holds a key watermark"
            prev: tuple[int, int] | None = None
            for r in ks.records:
                if (not isinstance(r, list) or len(r) != 3 or type(r[0]) is not int
                        or type(r[1]) is not int or abs(r[0]) > TIME_LIMIT
                        or not isinstance(r[2], list) or len(r[2]) != len(self._fns)):
                    return f"state: key {kj} holds a record the arrays cannot hold"
                if prev is not None and (r[0], r[1]) < prev:
                    return f"state: key {kj} holds records out of order"
                prev = (r[0], r[1])
                for fn, star, v in zip(self._fns, self._star, r[2], strict=True):
                    if star or fn in BY_REF:
                        continue
                    if not (v is None or (type(v) is int and abs(v) <= EXACT_INT)
                            or (type(v) is float and v == v)):
                        return f"state: key {kj} holds a {fn} input beyond the arrays"
            for w in ks.windows.values():
                if (w.emitted or w.timer is not None or w.retract or w.last_pane is not None
                        or w.start is None or w.end != w.start + size
                        or w.close != w.start + size + 1 or w.pending != w.elements
                        or abs(w.start) > TIME_LIMIT):
                    return f"state: key {kj} holds a window of another kind"
        return None


def _clamp(v: int) -> int:
    return min(max(v, -FAR), FAR)


def _canon(x: Any) -> str:
    """Exact identity of accumulator data (1 vs 1.0, -0.0 vs 0.0 differ)."""
    return json.dumps(x, default=repr)


class SlidingKernelState(KernelState):
    """The sliding kernel engine's state: a live view whose ``snapshot()`` is the general
    engine's snapshot of the same state."""
