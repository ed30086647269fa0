"""SlidingTriggerEngine: the general engine's API, output and snapshot format for KIP-450
sliding windows that fire more than once (``emit: current``; ``custom`` with count-based or
processing-time early / late triggers and ON_TIME; discarding, accumulating, retracting),
under a global event-time watermark (``bounded``, with or without idle advance: a clock tick
moves it from its base; or ``source``), per-key watermarks (``scope: key``, with or without
idle advance: :mod:`.sliding_key_triggers`) or on the processing clock (there also ``emit:
final``: every record's time is the clock, the watermark follows it).

A processing-time timer is a column of the window's row (``W_TIMER``), set by the same kernel
passes that run the window (``Firing._fire_window``); a heap of (due time, key) tells the
clock which keys to scan (``fire_timers``).

Unlike ``emit: final`` (:mod:`.sliding`), a window's pane depends on when records joined it
(a pane resets discarding accumulators; a count trigger fires between records), so every
window keeps accumulators, and a record updates each live window containing it. That loop,
the window creation from the held records and the count triggers run in one compiled pass per
key and arrival unit (:func:`._sliding_trigger_kernels.ingest_key`); the watermark's firing
is one pass per key whose next deadline it reached (``fire_due``). Per key the state is
arrays (:class:`KeyArrays`): held records and windows sorted by start; the Python side keeps
the key's input objects (records and first/last values, by reference), in retracting mode
each window's last pane (the general engine's dict), and the late counts. ``collect`` and
``count_distinct`` keep no accumulator: a pane reads them from the held records inside its
window (:mod:`.sliding_trigger_side`). A unit's records are grouped by key from the key
table's bulk codes; the pane rows the kernels give for all keys of an engine call become
``Pane`` objects at once, column by column (:mod:`.sliding_trigger_panes`).

State snapshots *are* the general engine's (:mod:`.sliding_trigger_state` converts both
ways); input or a restored state the arrays cannot hold (non-numeric values for
sum/mean/min/max, ints beyond 2**53, int sums that could leave 64 bits, times beyond 2**60)
hands over to the general engine for good.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import Sliding, kind_class
from jobs.engine.core import cached_key_json
from jobs.engine.engine import Engine, WatermarkMode
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels.handover import HandsOver, KernelState
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.kernels.sliding_key_triggers import KeyScopedSlidingTriggers
from jobs.engine.kernels.sliding_trigger_panes import (
    PaneRows,
    build_panes,
    in_order,
    key_ranks,
)
from jobs.engine.kernels.sliding_trigger_side import (
    DISTINCT_LIMIT,
    SIDE_FNS,
    compact_distinct,
    pane_side,
    window_values,
)
from jobs.engine.kernels.sliding_trigger_values import value_columns
from jobs.engine.kernels.timers import timer_due_times
from jobs.engine.records import (
    Emission,
    Key,
    LateReason,
    LateRecord,
    RecordBatch,
    plain_key,
)
from jobs.engine.state import EngineState
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.value_codes import ValueTable
from jobs.engine.vectorized.values import (
    Unsupported,
    null_mask,
    numeric_column,
    object_values,
)

FN_CODES = {"count": K.COUNT, "sum": K.SUM, "min": K.MIN, "max": K.MAX, "mean": K.MEAN,
            "first": K.FIRST, "last": K.LAST, "collect": K.SIDE, "count_distinct": K.SIDE}
REASONS: tuple[LateReason, LateReason] = ("before_watermark", "expired")
FAR = 2**62
"""Watermarks are clamped to +-FAR for the kernels (times and sizes are below 2**60)."""
TIME_LIMIT = 2**60
EXACT_INT = 2**53
SUM_LIMIT = 2**61
"""Int inputs of sums and means, in absolute value, may add up to this over the engine's
life (every window's int sum then fits 64 bits)."""


class KeyArrays:
    """One key's state: held records ``RT``/``RF`` (``n_h`` rows), windows ``W``/``WF``
    (``n_w`` rows, sorted by start), input objects ``objs`` (by the rows' refs), the last pane
    of each window (retracting: start -> the general engine's ``last_pane`` dict), max event
    time and late totals."""

    __slots__ = ("RF", "RT", "W", "WF", "born_next", "deadline", "ib", "ibpt", "key", "kj",
                 "late_acc", "late_drop", "lp", "max_t", "n_h", "n_w", "objs", "timer", "wm")

    def __init__(self, key: Key, kj: str, m: int) -> None:
        self.key, self.kj = key, kj
        self.RT = np.zeros((4, K.R_AGG + K.R_WIDTH * m), dtype=np.int64)
        self.RF = np.zeros((4, max(m, 1)), dtype=np.float64)
        self.W = np.zeros((4, K.W_AGG + K.A_WIDTH * m), dtype=np.int64)
        self.WF = np.zeros((4, max(2 * m, 1)), dtype=np.float64)
        self.n_h = self.n_w = self.born_next = 0
        self.objs: list[Any] = []
        self.lp: dict[int, dict[str, Any]] = {}
        self.max_t: int | None = None
        self.late_acc = self.late_drop = 0
        self.deadline = FAR
        self.timer = K.NO_TIMER
        """The due time of this key's entry in the engine's timer heap (``NO_TIMER``: none)."""
        self.wm: int | None = None
        self.ib: int | None = None
        self.ibpt: int | None = None
        """The key's own watermark and idle base (processing time) under ``scope: key``."""

    def empty(self) -> bool:
        return not (self.n_w or self.n_h or self.late_acc or self.late_drop)


class SlidingTriggerEngine(KeyScopedSlidingTriggers, HandsOver):
    """Same API and observable output as :class:`jobs.engine.Engine` for qualifying sliding
    definitions with triggers (see the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        problems = qualification_problems(defn)
        if problems or kind_class(defn.window.type) is not Sliding or (
                defn.trigger.emit == "final" and not defn.uses_processing_time):
            raise EngineError("sliding trigger engine: " + "; ".join(
                problems or ["window.type / trigger.emit: sliding windows with triggers (or "
                             "on the processing clock) only"]))
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        self.defn = defn
        self.mode: WatermarkMode = watermark
        plan = effective_trigger(defn)
        self._early_part, self._late_part = plan.early, plan.late
        self._early_n = plan.early.count or 1 if plan.early and plan.early.kind == "count" else 0
        self._late_n = plan.late.count or 1 if plan.late and plan.late.kind == "count" else 0
        self._timed = plan.needs_clock
        self._at_end = plan.at_window_end
        self._at_expiry = plan.at_expiry
        self._step = plan.fires_on_count
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._kinds = np.array([FN_CODES[f] for f in self._fns], dtype=np.int64)
        self._side = [(j, a.name, a.fn) for j, a in enumerate(defn.aggregations)
                      if a.fn in SIDE_FNS]
        self._side_cols = np.array([K.R_AGG + K.R_WIDTH * j for j, _, _ in self._side],
                                   dtype=np.int64)
        self._side_distinct = np.array([fn == "count_distinct" for _, _, fn in self._side],
                                       dtype=np.bool_)
        self._distinct = ValueTable()
        """The codes of ``count_distinct`` inputs (in the held records' int column)."""
        self._distinct_limit = DISTINCT_LIMIT
        self._size = defn.window.size or 0
        self._al = min(defn.allowed_lateness, FAR)
        self._event_basis = defn.lateness_basis == "event"
        self._discarding = defn.accumulation == "discarding"
        self._retracting = defn.accumulation == "retracting"
        self._delay = defn.watermark.delay
        self._source = defn.watermark.strategy == "source"
        self._clock = defn.uses_processing_time
        self._bounded = (watermark == "internal" and defn.watermark.strategy == "bounded"
                         and not self._clock)
        self._key_scope = self._bounded and defn.watermark.scope == "key"
        self._idle = (defn.watermark.strategy == "bounded" and defn.watermark.idle_advance
                      and not self._clock)
        """Idle advance: of the one watermark, it moves on from ``idle_base`` with processing
        time (the base a record's or the host's raise of it sets); under ``scope: key``, of
        each key's (:mod:`.sliding_key_triggers`)."""
        self.idle_base: int | None = None
        self.idle_base_pt: int | None = None
        self.general: Engine | None = None
        self.handed_over_because: str | None = None
        self.keys: dict[str, KeyArrays] = {}
        self.late_deltas: dict[str, list[Any]] = {}
        self.processing_time = 0
        self.wm: int | None = None
        self.ended = False
        self.max_t: int | None = None
        self.seq = 0
        self.int_abs = 0
        self._due: list[tuple[int, str]] = []
        self._timers: list[tuple[int, str]] = []
        """(due time, key JSON): keys whose windows may hold a timer due then (stale entries
        are skipped: the key's ``timer`` moved)."""
        self._kj_cache: dict[tuple[type, Key], str] = {}
        self._key_table = KeyTable()
        """Bulk codes of the input keys (grouping a unit by key without a step per record)."""
        if state is not None:
            from jobs.engine.kernels.sliding_trigger_state import load_state

            st = state.to_engine_state() if hasattr(state, "to_engine_state") else (
                state if isinstance(state, EngineState) else EngineState.restore(state))
            why = load_state(self, st)
            if why is not None:
                self.handed_over_because = why
                self.general = Engine(defn, state=st, watermark=watermark)

    # ------------------------------------------------------------------ public API

    @property
    def state(self) -> KernelState | EngineState:
        """``.snapshot()`` gives the general engine's snapshot data of this state."""
        if self.general is not None:
            return self.general.state
        return KernelState(self)

    def to_engine_state(self) -> EngineState:
        from jobs.engine.kernels.sliding_trigger_state import to_engine_state

        return to_engine_state(self)

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit (:meth:`jobs.engine.Engine.ingest`): each record's late lines and
        the panes its count triggers fired, in arrival order; then the panes of the windows
        the unit's watermark advance reached."""
        if self.general is not None:
            return self.general.ingest(batch)
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        out: list[Emission] = []
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            out = self.advance_processing_time(batch.processing_time)
        n = len(batch)
        if n == 0:
            return out
        times = (np.full(n, self.processing_time, dtype=np.int64) if self._clock
                 else np.asarray(batch.event_times, dtype=np.int64))
        try:
            URT, URF, cols = self._encode(batch, n, times)
        except Unsupported as exc:
            return out + self._hand_over(batch, str(exc))
        base = self.seq
        self.seq += n
        groups = self._groups(batch.keys, n)
        wm_known = self.wm is not None
        wm0 = min(max(self.wm, -FAR), FAR) if self.wm is not None else 0
        wm_out = self.wm
        late: list[tuple[int, LateRecord]] = []
        parts: list[PaneRows] = []
        gone_of: list[tuple[KeyArrays, list[int]]] = []
        touched: list[KeyArrays] = []
        m = len(self._names)
        ev, lv = self._timer_values()
        for kj, key, ix in groups:
            ka = self.keys.get(kj)
            if ka is None:
                ka = self.keys[kj] = KeyArrays(key, kj, m)
            urt = URT[ix]
            o = len(ka.objs)
            for j, col in enumerate(cols):
                if col is not None:
                    ka.objs.extend(col[ix].tolist())
                    urt[:, K.R_AGG + K.R_WIDTH * j + 3] = o + np.arange(len(ix))
                    o += len(ix)
            kt = times[ix]
            pane_wms: list[int | None] | None = None
            gone: list[int] = []
            if self._key_scope:
                LR, n_l, AR, n_a, PR, PW, PF, n_p, pane_wms, gone = self._key_pass(
                    ka, kt, ix + base, ix, urt, URF[ix])
            else:
                (ka.RT, ka.RF, ka.n_h, ka.W, ka.WF, ka.n_w, ka.born_next, LR, n_l, AR, n_a,
                 PR, PW, PF, n_p) = K.ingest_key(
                    kt, ix + base, ix, urt, URF[ix], self._kinds, wm_known, wm0,
                    self._event_basis, self._size, self._al, self._step, self._early_n,
                    self._late_n, self._at_end, self._discarding, ka.RT, ka.RF, ka.n_h, ka.W,
                    ka.WF, ka.n_w, ka.born_next, ev, lv)
            kmax = int(kt.max())
            if ka.max_t is None or kmax > ka.max_t:
                ka.max_t = kmax
            if n_l:
                self._late_lines(ka, LR[:n_l], batch, times, late)
            if n_a:
                for s in AR[:n_a, 1].tolist():
                    self._count_late(ka, s, accepted=1)
            if n_p:
                members = pane_side(self, ka, PR, n_p) if self._side else None
                parts.append(PaneRows(ka, PR[:n_p], PW[:n_p], PF[:n_p], members, wm_out,
                                      pane_wms))
            if gone:
                gone_of.append((ka, gone))
            touched.append(ka)
        out.extend(self._unit_output(parts, late))
        for ka, gone in gone_of:  # windows that closed without a pane (after their panes)
            for s in gone:
                ka.lp.pop(s, None)
        bmax = int(times.max())
        if self.max_t is None or bmax > self.max_t:
            self.max_t = bmax
        if self._bounded and not self._key_scope:
            cand = bmax - self._delay
            if self.wm is None or cand > self.wm:
                self.wm = cand
                if self._idle:
                    self.idle_base, self.idle_base_pt = cand, self.processing_time
        out.extend(self._fire(touched))
        return out

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """:meth:`jobs.engine.Engine.advance_processing_time`: the timers due at ``now_ms``
        fire, then the watermark moves to it (processing clock) or from its idle base."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if self.ended or now_ms <= self.processing_time:
            return []
        self.processing_time = now_ms
        out = self._fire_timers(now_ms)
        if self._key_scope and self._idle:
            out.extend(self._idle_advance(now_ms))
        if self._clock and self.mode == "internal" and (self.wm is None or now_ms > self.wm):
            self.wm = now_ms
            out.extend(self._fire([]))
        elif self._idle and self.idle_base is not None and self.idle_base_pt is not None:
            self.wm = self.idle_base + (now_ms - self.idle_base_pt)
            out.extend(self._fire([]))
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """:meth:`jobs.engine.Engine.advance_watermark`; with idle advance the watermark the
        host hands in is also the base it moves on from."""
        if (self.general is None and self._idle and not self.ended
                and (self._source or self.mode == "external")
                and (self.wm is None or wm_ms > self.wm)):
            self.idle_base, self.idle_base_pt = int(wm_ms), self.processing_time
        return super().advance_watermark(wm_ms)

    def _fire_watermark(self) -> list[Emission]:
        return self._fire([])

    def _fire_all(self) -> list[Emission]:
        return self._fire(list(self.keys.values()))

    def open_windows(self) -> list[dict[str, Any]]:
        """Open windows as :meth:`jobs.engine.Engine.open_windows` reports them."""
        if self.general is not None:
            return self.general.open_windows()
        out = []
        size = self._size
        for kj in sorted(self.keys):
            ka = self.keys[kj]
            side = window_values(self, ka) if self._side else {}
            vals = self._value_columns(ka, ka.W[:ka.n_w], ka.WF[:ka.n_w])
            for w in range(ka.n_w):
                row = ka.W[w]
                s = int(row[K.W_START])
                out.append({
                    "key": ka.key, "window_start": s, "window_end": s + size,
                    "elements": int(row[K.W_ELEM]), "pending": int(row[K.W_PEND]),
                    "panes_emitted": int(row[K.W_EMIT]),
                    "values": {**{name: col[w] for name, col in vals.items()},
                               **{name: col[w] for name, col in side.items()}},
                    "first_event_time": int(row[K.W_FIRST]),
                    "last_event_time": int(row[K.W_LAST]),
                })
        return out

    def late_totals(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per key since the engine's state began."""
        if self.general is not None:
            return self.general.late_totals()
        return [
            {"key": ka.key, "accepted": ka.late_acc, "dropped": ka.late_drop}
            for kj, ka in sorted(self.keys.items())
            if ka.late_acc or ka.late_drop
        ]

    # ------------------------------------------------------------------ internals

    def _kj(self, key: Key) -> str:
        return cached_key_json(self._kj_cache, key)

    def _groups(self, keys: Sequence[Any], n: int) -> list[tuple[str, Key, NDArray[np.int64]]]:
        """The unit's records by key, keys in first-seen order: (key JSON, key, the records'
        indexes in arrival order). Keys are coded in bulk by the key table; the key JSON is
        computed once per distinct code (codes of one key JSON, e.g. a numpy and a Python
        int, are one group)."""
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
        ends = np.cumsum(np.bincount(r_rec, minlength=len(names))).tolist()
        by_rank = [names[g] for g in np.argsort(rank).tolist()]
        out = []
        lo = 0
        for (kj, key), hi in zip(by_rank, ends, strict=True):
            out.append((kj, key, order[lo:hi]))
            lo = hi
        return out

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

    def _late_lines(self, ka: KeyArrays, rows: NDArray[np.int64], batch: RecordBatch,
                    times: NDArray[np.int64], late: list[tuple[int, LateRecord]]) -> None:
        records = batch.records
        size = self._size
        for rec, s, reason in rows.tolist():
            late.append((rec, LateRecord(
                ka.key, int(times[rec]), s, s + size, REASONS[reason],
                records[rec] if records is not None else None)))
            self._count_late(ka, s, dropped=1)

    def _unit_output(self, parts: list[PaneRows], late: list[tuple[int, LateRecord]]
                     ) -> list[Emission]:
        """The unit's panes (all keys' rows built at once) and late lines in record order: a
        record's late lines, then the panes it fired."""
        ems, row_of, _ = build_panes(self, parts)
        if ems:
            recs = np.concatenate([p.PR[:, K.P_REC] for p in parts])
            ems = in_order(ems, row_of, np.argsort(recs, kind="stable"))
        if not late:
            return ems
        late.sort(key=itemgetter(0))
        if not ems:
            return [e for _, e in late]
        em_recs = np.sort(recs[row_of])  # the record of each emission, in their order
        before = np.searchsorted(em_recs, [r for r, _ in late], side="left").tolist()
        out: list[Emission] = []
        at = 0
        for pos, (_, e) in zip(before, late, strict=True):
            if pos > at:
                out.extend(ems[at:pos])
                at = pos
            out.append(e)
        out.extend(ems[at:])
        return out

    def _value_columns(self, ka: KeyArrays, W: NDArray[np.int64], WF: NDArray[np.float64]
                       ) -> dict[str, list[Any]]:
        return value_columns(self._names, self._fns, [(ka.objs, 0, len(W))], W, WF)

    def _wm_of(self, ka: KeyArrays) -> tuple[bool, int, int | None]:
        """The watermark ``ka``'s windows run at (the key's own under ``scope: key``): known,
        clamped for the kernels, and as panes show it."""
        wm = ka.wm if self._key_scope else self.wm
        return (wm is not None, min(max(wm, -FAR), FAR) if wm is not None else 0,
                None if self.ended else wm)

    def _timer_values(self) -> tuple[int, int]:
        """The due times an early / a late timer started now gets (``NO_TIMER`` for a part
        that is not processing-time based), as ``Firing._fire_window`` sets them."""
        return timer_due_times(self.processing_time, self._early_part, self._late_part,
                               K.NO_TIMER)

    def _push_timer(self, ka: KeyArrays) -> None:
        if not self._timed:
            return
        d = int(K.next_timer(ka.W, ka.n_w))
        if d < ka.timer:
            ka.timer = d
            heapq.heappush(self._timers, (d, ka.kj))

    def _fire_timers(self, now: int) -> list[Emission]:
        """``Firing._fire_timers``: the panes of the timers due at ``now`` (keys from the
        timer heap), by due time, window end, key JSON, start."""
        heap = self._timers
        keys: dict[str, KeyArrays] = {}
        while heap and heap[0][0] <= now:
            d, kj = heapq.heappop(heap)
            ka = self.keys.get(kj)
            if ka is not None and ka.timer == d:
                keys[kj] = ka
                ka.timer = K.NO_TIMER
        if not keys:
            return []
        parts: list[PaneRows] = []
        for ka in keys.values():
            wm_known, wm0, wm_out = self._wm_of(ka)
            PR, PW, PF, n_p = K.fire_timers(ka.W, ka.WF, ka.n_w, now, wm_known, wm0,
                                            self._size, self._discarding, self._kinds,
                                            self.seq - 1)
            if n_p:
                members = pane_side(self, ka, PR, n_p) if self._side else None
                parts.append(PaneRows(ka, PR[:n_p], PW[:n_p], PF[:n_p], members, wm_out))
            self._push_timer(ka)
        ems, row_of, part = build_panes(self, parts)
        if not ems:
            return ems
        PR = np.concatenate([p.PR for p in parts])
        return in_order(ems, row_of, np.lexsort(
            (key_ranks(parts)[part], PR[:, K.P_START], PR[:, K.P_REC])))

    def _push_deadline(self, ka: KeyArrays) -> None:
        if self._key_scope:  # the unit's keys run their windows, not a global deadline
            return
        d = int(K.next_deadline(ka.W, ka.n_w, self._size, self._al, FAR))
        if d != ka.deadline:
            ka.deadline = d
            if d < FAR:
                heapq.heappush(self._due, (d, ka.kj))

    def _fire(self, touched: list[KeyArrays]) -> list[Emission]:
        """``Firing._fire`` at the current watermark: the keys of the unit and those with a
        window whose deadline it reached run their due windows (in start order) and forget
        the held records no window needs; panes come out by window end, key JSON, start;
        keys left with nothing are forgotten."""
        visited: dict[str, KeyArrays] = {ka.kj: ka for ka in touched if
                                         self.keys.get(ka.kj) is ka}
        wm_known = self.wm is not None
        wm0 = min(max(self.wm, -FAR), FAR) if self.wm is not None else 0
        if self.ended:
            visited = dict(self.keys)
        elif wm_known and not self._key_scope:
            heap = self._due
            while heap and heap[0][0] <= wm0:
                d, kj = heapq.heappop(heap)
                ka = self.keys.get(kj)
                if ka is not None and ka.deadline == d:
                    visited[kj] = ka
                    ka.deadline = FAR + 1  # its next deadline gets a fresh heap entry
        ev, lv = self._timer_values()
        parts: list[PaneRows] = []
        ran: list[tuple[str, KeyArrays, list[int]]] = []
        for kj, ka in visited.items():
            wm_known, wm0, wm_out = self._wm_of(ka)
            gone: list[int] = []
            if ka.n_w or ka.n_h:
                ka.n_h, ka.n_w, PR, PW, PF, n_p, GONE, n_g, CNT, REFS = K.fire_due(
                    wm_known, wm0, self.ended, self._size, self._al, self._early_n,
                    self._late_n, self._at_end, self._at_expiry, self._discarding,
                    self._kinds, ka.RT, ka.RF, ka.n_h, ka.W, ka.WF, ka.n_w, ev, lv,
                    self.seq - 1, self._side_cols, self._side_distinct, len(self._distinct))
                if n_p:
                    parts.append(PaneRows(ka, PR[:n_p], PW[:n_p], PF[:n_p],
                                          (CNT, REFS) if self._side else None, wm_out))
                gone = GONE[:n_g].tolist()
            ran.append((kj, ka, gone))
        ems, row_of, part = build_panes(self, parts)  # before objects are compacted
        if ems:
            PR = np.concatenate([p.PR for p in parts])
            ems = in_order(ems, row_of, np.lexsort((key_ranks(parts)[part],
                                                    PR[:, K.P_START])))
        for kj, ka, gone in ran:
            for s in gone:
                ka.lp.pop(s, None)
            if ka.empty() and not self._key_scope:  # a key's own watermark is never forgotten
                del self.keys[kj]
            else:
                self._push_deadline(ka)
                self._push_timer(ka)
                if len(ka.objs) > 4096:
                    from jobs.engine.kernels.sliding_trigger_state import compact_objs

                    compact_objs(self, ka)
        if len(self._distinct) > self._distinct_limit:
            compact_distinct(self)
        return ems

    def _hand_over(self, batch: RecordBatch, why: str) -> list[Emission]:
        """Convert the state to the general engine's and let it run from now on (this batch
        included): exactness over speed for input the arrays cannot hold."""
        self.handed_over_because = why
        self.general = Engine(self.defn, state=self.to_engine_state(), watermark=self.mode)
        return self.general.ingest(batch)


__all__ = ["SlidingTriggerEngine"]
