"""SlidingTriggerEngine: the general engine's API, output and snapshot format for KIP-450
sliding windows that fire more than once (``emit: current``; ``custom`` with count-based or
processing-time early / late triggers and ON_TIME; discarding, accumulating, retracting),
under a global event-time watermark (``bounded``, with or without idle advance: a clock tick
moves it from its base; or ``source``), per-key watermarks (``scope: key``, with or without
idle advance: :mod:`.sliding_key_triggers`) or on the processing clock (there also ``emit:
final``: every record's time is the clock, the watermark follows it).

The engine is split by what the parts hold: the per-key state (:mod:`.sliding_trigger_keys`),
a unit's grouping and encoding (:mod:`.sliding_trigger_input`), deadlines, timers and the
closing firing (:mod:`.sliding_trigger_firing`), per-key watermarks
(:mod:`.sliding_key_triggers`).

Unlike ``emit: final`` (:mod:`.sliding`), a window's pane depends on when records joined it
(a pane resets discarding accumulators; a count trigger fires between records), so every
window keeps accumulators, and a record updates each live window containing it. That loop,
the window creation from the held records and the count triggers run per key
(:func:`._sliding_trigger_kernels.ingest_key`), all keys of an arrival unit in one compiled
pass (``ingest_keys``: the unit's keys' state is gathered into one set of arrays with
offsets, and each key's state is then its slice of the output); the watermark's firing runs
every key whose next deadline it reached in one pass too (``fire_keys``). Per key the state
is arrays (:class:`KeyArrays`): held records and windows sorted by start; the Python side
keeps, in retracting mode, each window's last pane (the general engine's dict) and the late
counts; the input objects (records and first/last values, by reference) are one list for
all keys (``objs``). ``collect`` and
``count_distinct`` keep no accumulator: a pane reads them from the held records inside its
window (:mod:`.sliding_trigger_side`). A unit's records are grouped by key from the key
table's bulk codes; the pane rows the kernels give for all keys of an engine call become
columns at once (:mod:`.sliding_trigger_panes`): the calls return ``EmissionColumns``
(``ingest_columns`` and the like), and the object API is their ``to_emissions()``.

State snapshots *are* the general engine's (:mod:`.sliding_trigger_state` converts both
ways); input or a restored state the arrays cannot hold (non-numeric values for
sum/mean/min/max, ints beyond 2**53, int sums that could leave 64 bits, times beyond 2**60)
hands over to the general engine for good.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import Sliding, kind_class
from jobs.engine.core import cached_key_json
from jobs.engine.engine import Engine, WatermarkMode
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _sliding_key_trigger_kernels as KKT
from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels import _sliding_trigger_side_kernels as KS
from jobs.engine.kernels.handover import HandsOver, KernelState
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.kernels.sliding_key_triggers import NO_TIME, KeyScopedSlidingTriggers
from jobs.engine.kernels.sliding_trigger_firing import TriggerFiring
from jobs.engine.kernels.sliding_trigger_input import UnitInput
from jobs.engine.kernels.sliding_trigger_keys import (
    EXACT_INT,
    FAR,
    FN_CODES,
    REASONS,
    SUM_LIMIT,
    TIME_LIMIT,
    KeyArrays,
)
from jobs.engine.kernels.sliding_trigger_panes import PaneRows, concat, empty_panes, key_codes
from jobs.engine.kernels.sliding_trigger_side import (
    DISTINCT_LIMIT,
    SIDE_FNS,
    window_values,
)
from jobs.engine.kernels.sliding_trigger_values import value_columns
from jobs.engine.records import (
    Emission,
    Key,
    RecordBatch,
)
from jobs.engine.state import EngineState
from jobs.engine.vectorized.columns import ColumnarOutput
from jobs.engine.vectorized.emission_columns import (
    EmissionColumns,
    LateColumns,
    PaneColumns,
)
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.value_codes import ValueTable
from jobs.engine.vectorized.values import Unsupported

OBJS_LIMIT = 65536
"""The size of the engine's input objects past which it drops those no state refers to."""


class SlidingTriggerEngine(TriggerFiring, UnitInput, KeyScopedSlidingTriggers, HandsOver):
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
        self.objs: list[Any] = []
        """The input objects the held records' and windows' refs point to (all keys')."""
        self._objs_limit = OBJS_LIMIT
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
        self._out_keys = KeyTable()
        """The keys of the output columns (``KeyArrays.code``), as the panes show them."""
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
        return self.ingest_columns(batch).to_emissions()

    def ingest_columns(self, batch: RecordBatch) -> ColumnarOutput:
        """:meth:`ingest` as columns: what a processing-time tick of the batch fired (objects,
        in ``before``), then the unit's late lines and panes (:class:`EmissionColumns`)."""
        if self.general is not None:
            return self._objects(self.general.ingest(batch))
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        out: list[Emission] = []
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            out = self.advance_processing_time(batch.processing_time)
        n = len(batch)
        if n == 0:
            return self._objects(out)
        times = (np.full(n, self.processing_time, dtype=np.int64) if self._clock
                 else np.asarray(batch.event_times, dtype=np.int64))
        try:
            URT, URF, cols = self._encode(batch, n, times)
        except Unsupported as exc:
            return self._objects(out + self._hand_over(batch, str(exc)))
        base = self.seq
        self.seq += n
        for j, col in enumerate(cols):
            if col is not None:
                URT[:, K.R_AGG + K.R_WIDTH * j + 3] = len(self.objs) + np.arange(n)
                self.objs.extend(col.tolist())
        wm_known = self.wm is not None
        wm0 = min(max(self.wm, -FAR), FAR) if self.wm is not None else 0
        late: list[tuple[int, int, int, int]] = []
        parts: list[PaneRows] = []
        gone_of: list[tuple[KeyArrays, list[int]]] = []
        touched = self._ingest_keys(batch.keys, n, times, URT, URF, base, wm_known, wm0,
                                    late, parts, gone_of)
        unit = self._unit_output(parts, late, batch, times)
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
        fired = self._fire(touched)
        return ColumnarOutput(out, EmissionColumns(concat(unit.panes, fired), unit.late,
                                                   unit.late_before))

    def _ingest_keys(self, keys: Any, n: int, times: NDArray[np.int64],
                     URT: NDArray[np.int64], URF: NDArray[np.float64], base: int,
                     wm_known: bool, wm0: int, late: list[tuple[int, int, int, int]],
                     parts: list[PaneRows], gone_of: list[tuple[KeyArrays, list[int]]]
                     ) -> list[KeyArrays]:
        """A unit's records: every key's in one kernel pass
        (:func:`._sliding_trigger_kernels.ingest_keys`; under ``scope: key``
        :func:`._sliding_key_trigger_kernels.ingest_keys_scoped`) over the keys' state
        gathered into one set of arrays; each key's state is then its slice of the pass's
        output. Adds the late lines to ``late``, the panes to ``parts`` and the windows that
        went without a pane to ``gone_of``; returns the unit's keys."""
        names, order, ends = self._group_order(keys, n)
        state = self.keys
        m = len(self._names)
        kas: list[KeyArrays] = []
        for kj, key in names:
            ka = state.get(kj)
            if ka is None:
                ka = state[kj] = KeyArrays(key, kj, m)
            kas.append(ka)
        nk = len(kas)
        goff = np.zeros(nk + 1, dtype=np.int64)
        goff[1:] = ends
        hoff = np.zeros(nk + 1, dtype=np.int64)
        hoff[1:] = np.cumsum([ka.n_h for ka in kas])
        woff = np.zeros(nk + 1, dtype=np.int64)
        woff[1:] = np.cumsum([ka.n_w for ka in kas])
        held = [ka for ka in kas if ka.n_h]
        wins = [ka for ka in kas if ka.n_w]
        RT_in = (np.concatenate([ka.RT[:ka.n_h] for ka in held]) if held
                 else URT[:0])
        RF_in = (np.concatenate([ka.RF[:ka.n_h] for ka in held]) if held
                 else URF[:0])
        W_in = (np.concatenate([ka.W[:ka.n_w] for ka in wins]) if wins
                else np.zeros((0, K.W_AGG + K.A_WIDTH * m), dtype=np.int64))
        WF_in = (np.concatenate([ka.WF[:ka.n_w] for ka in wins]) if wins
                 else np.zeros((0, max(2 * m, 1)), dtype=np.float64))
        born = np.array([ka.born_next for ka in kas], dtype=np.int64)
        kt = times[order]
        ev, lv = self._timer_values()
        if self._key_scope:
            known = np.array([ka.wm is not None for ka in kas], dtype=np.bool_)
            kwm = np.array([0 if ka.wm is None else ka.wm for ka in kas], dtype=np.int64)
            (RT, RF, ho, W, WF, wo, LR, n_l, AR, n_a, PR, PW, PF, PK, n_p, PM,
             GONE) = KKT.ingest_keys_scoped(
                goff, kt, order + base, order, URT[order], URF[order], self._kinds, known,
                kwm, self._delay, self._event_basis, self._size, self._al, self._early_n,
                self._late_n, self._at_end, self._at_expiry, self._discarding, RT_in, RF_in,
                hoff, W_in, WF_in, woff, born, ev, lv, FAR, NO_TIME)
            for ka, kk, kw in zip(kas, known.tolist(), kwm.tolist(), strict=True):
                if kk and (ka.wm is None or kw != ka.wm):
                    ka.wm = kw
                    if self._idle:
                        ka.ib, ka.ibpt = kw, self.processing_time
            gone: dict[int, list[int]] = {}
            for s, k in GONE.tolist():
                gone.setdefault(k, []).append(s)
            gone_of.extend((kas[k], g) for k, g in gone.items())
        else:
            (RT, RF, ho, W, WF, wo, LR, n_l, AR, n_a, PR, PW, PF, PK, n_p) = K.ingest_keys(
                goff, kt, order + base, order, URT[order], URF[order], self._kinds,
                wm_known, wm0, self._event_basis, self._size, self._al, self._step,
                self._early_n, self._late_n, self._at_end, self._discarding, RT_in, RF_in,
                hoff, W_in, WF_in, woff, born, ev, lv)
        kmax = np.maximum.reduceat(kt, goff[:-1]).tolist()
        hl, wl = ho.tolist(), wo.tolist()
        for k, (ka, bn, km) in enumerate(zip(kas, born.tolist(), kmax, strict=True)):
            ka.RT, ka.RF, ka.n_h = RT[hl[k]:hl[k + 1]], RF[hl[k]:hl[k + 1]], hl[k + 1] - hl[k]
            ka.W, ka.WF, ka.n_w = W[wl[k]:wl[k + 1]], WF[wl[k]:wl[k + 1]], wl[k + 1] - wl[k]
            ka.born_next = bn
            if ka.max_t is None or km > ka.max_t:
                ka.max_t = km
        if n_l:
            codes = key_codes(self._out_keys, kas)
            for rec, s, reason, k in LR.tolist():
                late.append((rec, s, reason, int(codes[k])))
                self._count_late(kas[k], s, dropped=1)
        for _, s, k in AR.tolist():
            self._count_late(kas[k], s, accepted=1)
        if n_p:
            members = (KS.side_outputs_keys(RT, ho, PK, PR, n_p, self._size, self._side_cols,
                                           self._side_distinct, len(self._distinct))
                       if self._side else None)
            wms = ([None if w == NO_TIME else w for w in PM.tolist()] if self._key_scope
                   else None)
            parts.append(PaneRows(kas, PR, PW, PF, members, self.wm, wms, PK))
        return kas

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """:meth:`jobs.engine.Engine.advance_processing_time`: the timers due at ``now_ms``
        fire, then the watermark moves to it (processing clock) or from its idle base."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if self.ended or now_ms <= self.processing_time:
            return []
        self.processing_time = now_ms
        out: list[Emission] = list(self._fire_timers(now_ms).to_panes())
        if self._key_scope and self._idle:
            out.extend(self._idle_advance(now_ms))
        if self._clock and self.mode == "internal" and (self.wm is None or now_ms > self.wm):
            self.wm = now_ms
            out.extend(self._fire([]).to_panes())
        elif self._idle and self.idle_base is not None and self.idle_base_pt is not None:
            self.wm = self.idle_base + (now_ms - self.idle_base_pt)
            out.extend(self._fire([]).to_panes())
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """:meth:`jobs.engine.Engine.advance_watermark`; with idle advance the watermark the
        host hands in is also the base it moves on from."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        return self.advance_watermark_columns(wm_ms).to_emissions()

    def advance_watermark_columns(self, wm_ms: int) -> ColumnarOutput:
        """:meth:`advance_watermark` as columns."""
        if self.general is not None:
            return self._objects(self.general.advance_watermark(wm_ms))
        if not (self._source or self.mode == "external"):
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use Engine(..., watermark='external') to drive it)"
            )
        if self.ended or (self.wm is not None and wm_ms <= self.wm):
            return self._objects([])
        if self._idle:
            self.idle_base, self.idle_base_pt = int(wm_ms), self.processing_time
        self.wm = int(wm_ms)
        return self._columns(self._fire([]))

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        return self.end_of_input_columns().to_emissions()

    def end_of_input_columns(self) -> ColumnarOutput:
        """:meth:`end_of_input` as columns."""
        if self.general is not None:
            return self._objects(self.general.end_of_input())
        if self.ended:
            return self._objects([])
        self.ended = True
        return self._columns(self._fire(list(self.keys.values())))

    def _fire_watermark(self) -> list[Emission]:
        out: list[Emission] = [*self._fire([]).to_panes()]
        return out

    def _fire_all(self) -> list[Emission]:
        out: list[Emission] = [*self._fire(list(self.keys.values())).to_panes()]
        return out

    def _objects(self, out: list[Emission]) -> ColumnarOutput:
        """Output built as objects (a tick's firing, the general engine's), no columns."""
        return ColumnarOutput(out, EmissionColumns(
            empty_panes(self), LateColumns.empty(self._out_keys), np.zeros(0, dtype=np.int64)))

    def _columns(self, panes: PaneColumns) -> ColumnarOutput:
        return ColumnarOutput([], EmissionColumns(
            panes, LateColumns.empty(self._out_keys), np.zeros(0, dtype=np.int64)))

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

    def _value_columns(self, ka: KeyArrays, W: NDArray[np.int64], WF: NDArray[np.float64]
                       ) -> dict[str, list[Any]]:
        return value_columns(self._names, self._fns, [(self.objs, 0, len(W))], W, WF)

    def _wm_of(self, ka: KeyArrays) -> tuple[bool, int, int | None]:
        """The watermark ``ka``'s windows run at (the key's own under ``scope: key``): known,
        clamped for the kernels, and as panes show it."""
        wm = ka.wm if self._key_scope else self.wm
        return (wm is not None, min(max(wm, -FAR), FAR) if wm is not None else 0,
                None if self.ended else wm)

    def _hand_over(self, batch: RecordBatch, why: str) -> list[Emission]:
        """Convert the state to the general engine's and let it run from now on (this batch
        included): exactness over speed for input the arrays cannot hold."""
        self.handed_over_because = why
        self.general = Engine(self.defn, state=self.to_engine_state(), watermark=self.mode)
        return self.general.ingest(batch)


__all__ = ["EXACT_INT", "FAR", "REASONS", "SUM_LIMIT", "TIME_LIMIT", "KeyArrays",
           "SlidingTriggerEngine"]
