"""TriggeredEngine: tumbling / hopping / global windows with early / late triggers, compiled.

The general engine's API and output for the definitions :func:`qualifies_triggered` accepts:
fixed or global windows, early ``count`` / ``after`` / ``every``, on-time and late ``count`` /
``after`` firings (so also ``emit: current``), discarding, accumulating or retracting, either
lateness basis, a global watermark (bounded on event time, with or without idle advance, a
source's, or the processing clock of ``event_time: processing``, where a record's event time
is its unit's processing time) or per-key bounded watermarks (``scope: key``,
:mod:`triggered_key`), count / sum / mean / min / max / first / last, and collect / count_distinct
in a side table beside the window table (:mod:`triggered_side`). The per-record rules run in
the compiled kernels of :mod:`trigger_kernels` over a window table in arrays; Python work is
per arrival unit and per late record. Output comes straight from the kernels' output arrays as
:class:`~jobs.engine.vectorized.emission_columns.EmissionColumns` (``ingest_columns``,
``advance_watermark_columns``, ``end_of_input_columns``); the object API is ``to_emissions()``
of those columns.

Processing-time triggers (``early: after / every``, ``late: after``) are a timer per window
(``C_TIMER``), set by the kernels exactly where the general engine sets ``WindowState.timer``,
at the processing time of the call (``ingest``'s ``batch.processing_time``,
``advance_processing_time``), and fired by ``advance_processing_time``.

State: the engine's state *is* the general engine's format. ``state`` converts the window
table into an :class:`~jobs.engine.state.EngineState` (so snapshots, the Spark host's packed
blobs and old checkpoints are one format for both engines), and a restored ``EngineState``
is loaded back into arrays. Where the arrays cannot hold the input exactly (values of other
types, integers beyond 2**53) the engine hands over to the general engine with the converted
state, for good.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import Global, Hopping, Tumbling, window_kind
from jobs.engine.engine import Engine, WatermarkMode
from jobs.engine.errors import EngineError
from jobs.engine.late_rows import drain_window_rows, key_total_rows
from jobs.engine.records import Emission, RecordBatch
from jobs.engine.state import EngineState
from jobs.engine.triggers import next_boundary
from jobs.engine.vectorized import trigger_kernels
from jobs.engine.vectorized.columns import ColumnarOutput
from jobs.engine.vectorized.emission_columns import EmissionColumns
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.triggered_key import KeyWatermarks
from jobs.engine.vectorized.triggered_output import (
    concat,
    emission_columns,
    no_output,
    out_buffers,
)
from jobs.engine.vectorized.triggered_qualify import (
    SIDE_FNS,
    TRIGGERED_FNS,
    qualifies_triggered,
    triggered_problems,
)
from jobs.engine.vectorized.triggered_side import SideTables
from jobs.engine.vectorized.triggered_state import load_state, to_general_state
from jobs.engine.vectorized.values import EXACT_FLOAT_INT, Unsupported, null_mask, numeric_column

I64 = NDArray[np.int64]
K: Any = trigger_kernels
"""The compiled kernels and their layout constants (numba dispatchers: untyped here)."""
__all__ = ["TRIGGERED_FNS", "TriggeredEngine", "qualifies_triggered", "triggered_problems"]
SUM_LIMIT = 2**62
"""Running bound on |integer inputs| summed: below it no int64 sum can overflow."""


class TriggeredEngine(KeyWatermarks):
    """Same API and output as :class:`jobs.engine.Engine` for qualifying definitions (see
    the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        problems = triggered_problems(defn)
        if problems:
            raise EngineError("triggered engine: " + "; ".join(problems))
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        self.defn = defn
        self.mode: WatermarkMode = watermark
        self.clock = defn.uses_processing_time
        """``event_time: processing``: a record's event time is its unit's processing time
        and (internal mode) the watermark is the processing clock (``Engine.ingest``)."""
        self._source = defn.watermark.strategy == "source"
        """``strategy: source``: only ``advance_watermark`` moves the watermark."""
        self._bounded = watermark == "internal" and not self._source and not self.clock
        """The unit's records move the watermark (``EngineCore._bounded``)."""
        self.key_bounded = self._bounded and defn.watermark.scope == "key"
        """Per-key watermarks, moved by each key's records (:mod:`triggered_key`)."""
        self.idle = defn.watermark.idle_advance and not self._source and not self.clock
        """``watermark.idle_advance``: the watermark is ``idle_base + (now - idle_base_pt)``;
        a record's candidate (internal) or the host's watermark (external) ahead of it is
        the new base, taken at the current processing time (``EngineCore._idle``)."""
        self.idle_base: int | None = None
        self.idle_base_pt: int | None = None
        w = defn.window
        eff = effective_trigger(defn)
        kind = window_kind(w)  # a DefinitionError naming the field on bad parameters
        if isinstance(kind, Tumbling | Hopping):
            starts = kind.starts
            self._wtype = K.WT_HOPPING if isinstance(kind, Hopping) else K.WT_TUMBLING
            self._size, self._step = starts.size_ms, starts.step_ms
            self._wpr = starts.windows_per_record
        elif isinstance(kind, Global):
            self._wtype, self._size, self._step, self._wpr = K.WT_GLOBAL, 0, 0, 1
        else:
            raise EngineError(f"window.type: {kind.type} windows are not run by this engine")
        early = (eff.early.count or 1) if eff.early is not None and eff.early.kind == "count" else 0
        late = (eff.late.count or 1) if eff.late is not None and eff.late.kind == "count" else 0
        self._early_timer = eff.early if eff.early is not None and eff.early.kind != "count" \
            else None
        self._late_after = (eff.late.duration or 0) if eff.late is not None \
            and eff.late.kind != "count" else None
        p = np.zeros(K.N_PARAMS, dtype=np.int64)
        p[K.P_WTYPE] = self._wtype
        p[K.P_SIZE] = self._size
        p[K.P_STEP] = self._step
        p[K.P_ALIGN] = int(w.align_to)
        p[K.P_AL] = int(defn.allowed_lateness)
        p[K.P_EVENT_BASIS] = defn.lateness_basis == "event"
        p[K.P_EARLY_COUNT] = early
        p[K.P_LATE_COUNT] = late
        p[K.P_ON_TIME] = bool(eff.at_window_end)
        p[K.P_RETRACTING] = defn.accumulation == "retracting"
        p[K.P_DISCARDING] = defn.accumulation == "discarding"
        p[K.P_EARLY_TIMER] = self._early_timer is not None
        p[K.P_LATE_TIMER] = self._late_after is not None
        # a processing-time trigger sets its timer as records arrive: per record, as a count
        # trigger fires (nothing else fires per record then, so the output order is the same)
        p[K.P_STEP_FIRING] = self.key_bounded or early > 0 or late > 0 or self._early_timer is not None \
            or self._late_after is not None
        self._p = p
        self._names = [a.name for a in defn.aggregations]
        self._fn_names = [a.fn for a in defn.aggregations]
        self._fns = np.array(
            [(K.F_COUNT_STAR if a.of is None else K.F_COUNT) if a.fn == "count"
             else TRIGGERED_FNS[a.fn] for a in defn.aggregations], dtype=np.int64)
        self._delay = int(defn.watermark.delay)
        self._retracting = defn.accumulation == "retracting"
        side = [(j, a.name, a.fn) for j, a in enumerate(defn.aggregations) if a.fn in SIDE_FNS]
        self.side = SideTables(side, defn.accumulation == "discarding") if side else None
        """``collect`` / ``count_distinct`` entries (:mod:`triggered_side`)."""
        self.keys = KeyTable()
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.wm = K.INT64_MIN
        self.max_t: int | None = None
        self.seq = 0
        self.processing_time = 0
        self.ended = False
        self._sum_bound = 0.0
        self.late_totals_by_key: dict[str, list[Any]] = {}
        self.late_deltas: dict[str, list[Any]] = {}
        self._alloc(64)
        self._key_arrays()
        self._next_timer = K.INT64_MAX
        """No timer is due before this (a lower bound; see ``_timers_set``)."""
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine."""
        self.handed_over_because: str | None = None
        if state is not None:
            if isinstance(state, dict):
                state = EngineState.restore(state)
            if not isinstance(state, EngineState):
                raise EngineError(f"state: {type(state).__name__} is not an EngineState")
            if not load_state(self, state):
                self.general = Engine(defn, state=state, watermark=watermark)
            else:
                self._next_timer = int(K.min_timer(self.wi, self.wb, self.n_rows))
        self._set_dues()

    # ------------------------------------------------------------------ public API

    @property
    def max_event_time(self) -> int | None:
        if self.general is not None:
            return self.general.max_event_time
        return self.max_t

    @property
    def watermark(self) -> int | None:
        if self.general is not None:
            return self.general.watermark
        return None if self.ended or self.wm == K.INT64_MIN else self.wm

    @property
    def state(self) -> EngineState:
        """The general engine's state format (converted from the arrays on each access)."""
        if self.general is not None:
            return self.general.state
        return to_general_state(self)

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """Move processing time to ``now_ms`` (never back) and fire the processing-time
        timers due at or before it (``early: after / every``, ``late: after``)."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        return self._advance_processing_time(now_ms).to_emissions()

    def _advance_processing_time(self, now_ms: int) -> EmissionColumns:
        if self.ended or now_ms <= self.processing_time:
            return no_output(self)
        self.processing_time = now_ms
        self._set_dues()
        timers = self._fire_timers(now_ms)  # timers fire before the watermark moves
        if self.clock and self.mode == "internal":
            if now_ms <= self.wm:
                return timers
            self.wm = now_ms  # the processing clock is the watermark
        elif self.key_bounded:
            if not self.idle:
                return timers
            return concat([timers, self._idle_keys(now_ms)], self._names, self.keys)
        elif self.idle and self.idle_base is not None and self.idle_base_pt is not None:
            self.wm = self.idle_base + (now_ms - self.idle_base_pt)
        else:
            return timers
        return concat([timers, self._fire_due(self.wm)], self._names, self.keys)

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit (docs/semantics.md, "Arrival model"), as :meth:`Engine.ingest`."""
        if self.general is not None:
            return self.general.ingest(batch)
        return self.ingest_columns(batch).to_emissions()

    def ingest_columns(self, batch: RecordBatch) -> ColumnarOutput:
        """:meth:`ingest` with its panes and late records as columns (``to_emissions()`` of
        the result is exactly what ``ingest`` returns)."""
        if self.general is not None:
            return self._columnar(self.general.ingest(batch))
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        timers = no_output(self)
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            timers = self._advance_processing_time(batch.processing_time)
        n = len(batch)
        if n == 0:
            return ColumnarOutput([], timers)
        if self.clock:  # event time is the unit's processing time (late lines show it too)
            batch = dataclasses.replace(
                batch, event_times=np.full(n, self.processing_time, dtype=np.int64))
        try:
            vi, vf, visf, vvalid, bound = self._inputs(batch, n)
        except Unsupported as exc:
            handed = self._hand_over(batch, str(exc))
            return ColumnarOutput(timers.to_emissions(), self._emission_columns(handed))
        self._sum_bound = bound
        codes = self.keys.encode(batch.keys)
        if len(self.key_max_t) < len(self.keys):
            grown = np.full(len(self.keys), K.INT64_MIN, dtype=np.int64)
            grown[: len(self.key_max_t)] = self.key_max_t
            self.key_max_t = grown
        if len(self.kcache) < len(self.keys):
            cache = np.full((max(len(self.keys), 2 * len(self.kcache)), self._wpr), -1,
                            dtype=np.int64)
            cache[: len(self.kcache)] = self.kcache
            self.kcache = cache
        t = batch.event_times
        if self.key_bounded:
            fired = self._ingest_keys(batch, codes, vi, vf, visf, vvalid)  # seq += n
            np.maximum.at(self.key_max_t, codes, t)
            tmax = int(t.max())
            self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
            return ColumnarOutput([], concat([timers, fired], self._names, self.keys))
        if self.side is not None:
            p = self._p
            self.side.add_unit(codes, t, self.seq, batch.columns, self.wm,
                               (self._wtype, self._size, self._step, int(p[K.P_ALIGN])),
                               int(p[K.P_AL]), bool(p[K.P_EVENT_BASIS]))
        cells = n * self._wpr
        out_i = np.empty((2 * cells, K.N_OUT_COLS), dtype=np.int64)
        a = vi.shape[1]
        ok = np.empty((2 * cells, a), dtype=np.int8)
        oi = np.empty((2 * cells, a), dtype=np.int64)
        of = np.empty((2 * cells, a), dtype=np.float64)
        acc_late = np.empty((cells, 2), dtype=np.int64)
        r = n_out = n_acc = 0
        while r < n:  # once, unless the window table or its hash table must grow
            r, n_rows, n_out, n_acc, min_close, h_fill = K.ingest_kernel(
                self._p, self._fns, codes, t, vi, vf, visf, vvalid, self.wm,
                *self._table_args(), self.n_rows, self.hk, self.hs, self.hv, self.hst,
                out_i, ok, oi, of, acc_late, r, n_out, n_acc, self._h_fill, self.kcache,
                self.acc_t, self.seq)
            self.n_rows, self._h_fill = int(n_rows), int(h_fill)
            self._timers_set()
            self._next_deadline = min(self._next_deadline, int(min_close))
            if r < n:
                self._reserve(max(1024 * self._wpr, self.n_rows))
        self.seq += n
        np.maximum.at(self.key_max_t, codes, t)
        tmax = int(t.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if n_acc:
            self._count_accepted(acc_late[:n_acc])
        fired = emission_columns(self, out_i, ok, oi, of, int(n_out), batch)
        if self._bounded and tmax - self._delay > self.wm:
            self.wm = tmax - self._delay
            if self.idle:
                self.idle_base, self.idle_base_pt = self.wm, self.processing_time
        return ColumnarOutput([], concat([timers, fired, self._fire_due(self.wm)], self._names,
                                         self.keys))

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark (never back): ``strategy: source``, or a host that drives it
        (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        return self.advance_watermark_columns(wm_ms).to_emissions()

    def advance_watermark_columns(self, wm_ms: int) -> ColumnarOutput:
        """:meth:`advance_watermark` with its panes as columns."""
        if self.general is not None:
            return self._columnar(self.general.advance_watermark(wm_ms))
        if self.mode != "external" and not self._source:
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use watermark='external' to drive it)"
            )
        if self.ended or (self.wm != K.INT64_MIN and wm_ms <= self.wm):
            return ColumnarOutput([], no_output(self))
        self.wm = int(wm_ms)
        if self.idle:  # the host's watermark is the new idle base
            self.idle_base, self.idle_base_pt = self.wm, self.processing_time
        return ColumnarOutput([], self._fire_due(self.wm))

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires what it owes and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        return self.end_of_input_columns().to_emissions()

    def end_of_input_columns(self) -> ColumnarOutput:
        """:meth:`end_of_input` with its panes as columns."""
        if self.general is not None:
            return self._columnar(self.general.end_of_input())
        if self.ended:
            return ColumnarOutput([], no_output(self))
        self.ended = True
        return ColumnarOutput([], self._fire_due(K.INT64_MAX))

    def open_windows(self) -> list[dict[str, Any]]:
        """As :meth:`jobs.engine.Engine.open_windows` (ordered by key JSON, then start)."""
        if self.general is not None:
            return self.general.open_windows()
        return self._to_engine().open_windows()

    def drain_late_counts(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per (key, window) since the last drain."""
        if self.general is not None:
            return self.general.drain_late_counts()
        return drain_window_rows(self.late_deltas)

    def late_totals(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per key since the engine's state began."""
        if self.general is not None:
            return self.general.late_totals()
        return key_total_rows(self.late_totals_by_key)

    # ------------------------------------------------------------------ internals

    def _inputs(self, batch: RecordBatch, n: int) -> tuple[Any, ...]:
        """The aggregation inputs as (n, aggregations) arrays; raises :class:`Unsupported`
        (before any state changes) for input the arrays cannot aggregate exactly."""
        a = max(1, len(self._fns))
        vi = np.zeros((n, a), dtype=np.int64)
        vf = np.zeros((n, a), dtype=np.float64)
        visf = np.zeros((n, a), dtype=np.bool_)
        vvalid = np.ones((n, a), dtype=np.bool_)
        bound = self._sum_bound
        for j, (name, fn) in enumerate(zip(self._names, self._fns.tolist(), strict=True)):
            if fn == K.F_COUNT_STAR:
                continue
            col = batch.columns.get(name)
            if col is None:
                raise EngineError(f"ingest: the batch has no column for aggregation {name!r}")
            if fn == K.F_COUNT:
                vvalid[:, j] = null_mask(col, n)
                continue
            c = numeric_column(name, col, n)
            if c.max_abs_int > EXACT_FLOAT_INT:
                raise Unsupported(f"column {name!r}: integers beyond 2**53")
            if fn in (K.F_SUM, K.F_MEAN):
                bound += float(np.abs(c.i).sum(dtype=np.float64))
                if bound >= SUM_LIMIT:
                    raise Unsupported(f"aggregation {name!r}: integer sum may exceed 64 bits")
            vi[:, j] = c.i
            vf[:, j] = c.f
            visf[:, j] = c.is_float
            vvalid[:, j] = c.valid
        return vi, vf, visf, vvalid, bound

    def _set_dues(self) -> None:
        """The due time a processing-time timer set now gets (``Firing._fire_window``)."""
        now = self.processing_time
        e = self._early_timer
        if e is not None:
            d = e.duration or 0
            self._p[K.P_EARLY_DUE] = now + d if e.kind == "after" else next_boundary(
                now, d, e.align_to)
        if self._late_after is not None:
            self._p[K.P_LATE_DUE] = now + self._late_after

    def _timers_set(self) -> None:
        """After a kernel call that may have set timers: they are due no earlier than the
        due times it was given (``_next_timer`` stays a lower bound of every timer)."""
        p = self._p
        if p[K.P_EARLY_TIMER]:
            self._next_timer = min(self._next_timer, int(p[K.P_EARLY_DUE]))
        if p[K.P_LATE_TIMER]:
            self._next_timer = min(self._next_timer, int(p[K.P_LATE_DUE]))

    def _fire_timers(self, now: int) -> EmissionColumns:
        """The windows whose timer is due at ``now``, by due time, window end, key JSON,
        window start (``Firing._fire_timers``). The table is scanned only when the earliest
        timer may be due."""
        if now < self._next_timer:
            return no_output(self)
        rows = K.timer_rows(self.wi, self.wb, self.n_rows, now)
        if len(rows) == 0:
            self._next_timer = int(K.min_timer(self.wi, self.wb, self.n_rows))
            return no_output(self)
        rank = self.keys.json_rank()[self.wi[rows, K.C_KEY]]
        order = np.lexsort((self.wi[rows, K.C_START], rank, self.wi[rows, K.C_CLOSE],
                            self.wi[rows, K.C_TIMER]))
        rows = np.ascontiguousarray(rows[order])
        out_i, ok, oi, of = out_buffers(2 * len(rows), self.acc_i.shape[1])
        if self.key_bounded:
            n_out = self._fire_timers_keyed(rows, (out_i, ok, oi, of))
        else:
            n_out = K.fire_timers(self._p, self._fns, rows, self.wm, *self._table_args(),
                                  out_i, ok, oi, of)
        self._next_timer = int(K.min_timer(self.wi, self.wb, self.n_rows))
        return emission_columns(self, out_i, ok, oi, of, int(n_out), None)

    def _fire_due(self, wm: int) -> EmissionColumns:
        """Every window whose deadline ``wm`` reached, through its triggers, in the general
        engine's order (window end, key JSON, window start)."""
        if wm < self._next_deadline or self.n_rows == 0:
            return no_output(self)
        rows = K.due_rows(self._p, self.wi, self.wb, self.n_rows, wm)
        out = no_output(self)
        if len(rows):
            k = self.wi[rows, K.C_KEY]
            s = self.wi[rows, K.C_START]
            rank = self.keys.json_rank()[k]
            order = np.lexsort((s, rank, self.wi[rows, K.C_CLOSE]))
            rows = np.ascontiguousarray(rows[order])
            out_i, ok, oi, of = out_buffers(2 * len(rows), self.acc_i.shape[1])
            n_out = K.fire_rows(self._p, self._fns, rows, wm, *self._table_args(),
                                self.hk, self.hs, self.hv, self.hst, out_i, ok, oi, of)
            self._timers_set()
            out = emission_columns(self, out_i, ok, oi, of, int(n_out), None)
            if self.side is not None:
                dead = rows[~self.wb[rows, K.B_LIVE]]
                self.side.free(self.wi[dead, K.C_KEY], self.wi[dead, K.C_START])
        self._next_deadline = int(K.min_deadline(self._p, self.wi, self.wb, self.n_rows))
        return out

    def _bounds(self, s: int) -> tuple[int | None, int | None]:
        if self._wtype == K.WT_GLOBAL:
            return None, None
        return s, s + self._size

    def _count_accepted(self, pairs: I64) -> None:
        uniq, counts = np.unique(pairs, axis=0, return_counts=True)
        for (k, s), c in zip(uniq.tolist(), counts.tolist(), strict=True):
            self._count_late(k, s, int(c), 0)

    def _count_late(self, code: int, s: int, accepted: int, dropped: int) -> None:
        key = self.keys.values[code]
        kj = self.keys.json_array()[code]
        tot = self.late_totals_by_key.setdefault(kj, [key, 0, 0])
        tot[1] += accepted
        tot[2] += dropped
        start, end = self._bounds(s)
        row = self.late_deltas.setdefault(f"{kj}|{start}|{end}", [key, start, end, 0, 0])
        row[3] += accepted
        row[4] += dropped

    def _emission_columns(self, out: list[Emission]) -> EmissionColumns:
        """The general engine's objects as columns (after a hand-over)."""
        return EmissionColumns.of_emissions(out, self._names)

    def _columnar(self, out: list[Emission]) -> ColumnarOutput:
        return ColumnarOutput([], self._emission_columns(out))

    def _to_engine(self) -> Engine:
        return Engine(self.defn, state=to_general_state(self), watermark=self.mode)

    def _hand_over(self, batch: RecordBatch, reason: str) -> list[Emission]:
        """The general engine takes over from the converted state, for good."""
        self.handed_over_because = reason
        self.general = self._to_engine()
        return self.general.ingest(batch)
