"""TriggeredEngine: tumbling / hopping / global windows with count triggers, compiled.

The general engine's API and output for the definitions :func:`qualifies_triggered` accepts:
fixed or global windows, early ``count`` / on-time / late ``count`` firings (so also ``emit:
current``), discarding, accumulating or retracting, either lateness basis, a bounded event-time
watermark under the global scope without idle advance, count / sum / mean / min / max. The
per-record rules run in the compiled kernels of :mod:`trigger_kernels` over a window table in
arrays; Python work is per arrival unit, per fired pane (building its ``Pane``) and per late
record.

State: the engine's state *is* the general engine's format. ``state`` converts the window
table into an :class:`~jobs.engine.state.EngineState` (so snapshots, the Spark host's packed
blobs and old checkpoints are one format for both engines), and a restored ``EngineState``
is loaded back into arrays. Where the arrays cannot hold the input exactly (values of other
types, integers beyond 2**53, a restored window with a processing-time timer) the engine
hands over to the general engine with the converted state, for good.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import kind_class
from jobs.engine.core import GLOBAL_CLOSE
from jobs.engine.engine import Engine, WatermarkMode
from jobs.engine.errors import EngineError
from jobs.engine.late_rows import drain_window_rows, key_total_rows
from jobs.engine.records import Emission, LateRecord, RecordBatch, make_pane
from jobs.engine.state import NO_START, EngineState, KeyState, WindowState
from jobs.engine.vectorized import trigger_kernels
from jobs.engine.vectorized.columns import _no_gc, _value_dicts
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.values import EXACT_FLOAT_INT, Unsupported, null_mask, numeric_column

I64 = NDArray[np.int64]
K: Any = trigger_kernels
"""The compiled kernels and their layout constants (numba dispatchers: untyped here)."""
TRIGGERED_FNS = {"count": None, "sum": K.F_SUM, "mean": K.F_MEAN, "min": K.F_MIN,
                 "max": K.F_MAX}
TIMING_NAMES = ("EARLY", "ON_TIME", "LATE")
_TIMINGS = np.array(TIMING_NAMES, dtype=object)
REASONS = ("expired", "before_watermark")
SUM_LIMIT = 2**62
"""Running bound on |integer inputs| summed: below it no int64 sum can overflow."""


def triggered_problems(defn: Definition) -> list[str]:
    """Why :class:`TriggeredEngine` cannot run ``defn`` exactly (empty when it can), each
    naming the field."""
    problems: list[str] = []
    if not kind_class(defn.window.type).fixed_by_arithmetic:
        problems.append(f"window.type: {defn.window.type} is not run by the triggered engine")
    eff = effective_trigger(defn)
    if eff.at_expiry:
        problems.append("trigger.emit: final is the final-pane engine's")
    if eff.early is not None and eff.early.kind != "count":
        problems.append(f"trigger.early: {eff.early.kind} (processing time) is not compiled")
    if eff.late is not None and eff.late.kind != "count":
        problems.append(f"trigger.late: {eff.late.kind} (processing time) is not compiled")
    if defn.uses_processing_time:
        problems.append("event_time: the processing clock is not compiled")
    wmd = defn.watermark
    if wmd.strategy != "bounded":
        problems.append(f"watermark.strategy: {wmd.strategy} is not compiled")
    if wmd.idle_advance:
        problems.append("watermark.idle_advance: not compiled")
    if wmd.scope == "key":
        problems.append("watermark.scope: key is not compiled")
    for a in defn.aggregations:
        if a.fn not in TRIGGERED_FNS:
            problems.append(f"aggregations.{a.name}: fn {a.fn} is not compiled")
    return problems


def qualifies_triggered(defn: Definition) -> bool:
    """Whether ``make_engine`` picks :class:`TriggeredEngine` for ``defn``."""
    return not triggered_problems(defn)


def _pow2(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


class TriggeredEngine:
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
        w = defn.window
        eff = effective_trigger(defn)
        self._wtype = {"tumbling": K.WT_TUMBLING, "hopping": K.WT_HOPPING,
                       "global": K.WT_GLOBAL}[w.type]
        self._size = int(w.size or 0)
        self._step = int(w.step or 0) if w.type == "hopping" else self._size
        if w.type in ("tumbling", "hopping") and self._size <= 0:
            raise EngineError(f"window.size: must be a positive duration for {w.type}")
        if w.type == "hopping" and not 0 < self._step <= self._size:
            raise EngineError("window.step: must be positive and not exceed window.size")
        self._wpr = -(-self._size // self._step) if w.type == "hopping" else 1
        early = (eff.early.count or 1) if eff.early is not None else 0
        late = (eff.late.count or 1) if eff.late is not None else 0
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
        p[K.P_STEP_FIRING] = early > 0 or late > 0
        self._p = p
        self._names = [a.name for a in defn.aggregations]
        self._fn_names = [a.fn for a in defn.aggregations]
        self._fns = np.array(
            [(K.F_COUNT_STAR if a.of is None else K.F_COUNT) if a.fn == "count"
             else TRIGGERED_FNS[a.fn] for a in defn.aggregations], dtype=np.int64)
        self._delay = int(defn.watermark.delay)
        self._retracting = defn.accumulation == "retracting"
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
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine."""
        self.handed_over_because: str | None = None
        if state is not None:
            if isinstance(state, dict):
                state = EngineState.restore(state)
            if not isinstance(state, EngineState):
                raise EngineError(f"state: {type(state).__name__} is not an EngineState")
            if not self._load(state):
                self.general = Engine(defn, state=state, watermark=watermark)

    # ------------------------------------------------------------------ table

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
        self.lp_k = np.zeros((cap, a), dtype=np.int8)
        self.lp_i = np.zeros((cap, a), dtype=np.int64)
        self.lp_f = np.zeros((cap, a), dtype=np.float64)
        self._rehash(4 * cap)
        self._next_deadline = K.INT64_MAX

    _TABLE = ("wi", "wb", "acc_i", "acc_f", "acc_k", "acc_n", "lp_k", "lp_i", "lp_f")

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
        return self._to_general_state()

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """No processing-time timers or idle advance exist for qualifying definitions."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if not self.ended and now_ms > self.processing_time:
            self.processing_time = now_ms
        return []

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit (docs/semantics.md, "Arrival model"), as :meth:`Engine.ingest`."""
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
            vi, vf, visf, vvalid, bound = self._inputs(batch, n)
        except Unsupported as exc:
            return self._hand_over(batch, str(exc))
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
                out_i, ok, oi, of, acc_late, r, n_out, n_acc, self._h_fill, self.kcache)
            self.n_rows, self._h_fill = int(n_rows), int(h_fill)
            self._next_deadline = min(self._next_deadline, int(min_close))
            if r < n:
                self._reserve(max(1024 * self._wpr, self.n_rows))
        self.seq += n
        np.maximum.at(self.key_max_t, codes, t)
        tmax = int(t.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if n_acc:
            self._count_accepted(acc_late[:n_acc])
        out = self._emissions(out_i, ok, oi, of, int(n_out), batch)
        if self.mode == "internal" and tmax - self._delay > self.wm:
            self.wm = tmax - self._delay
        out.extend(self._fire_due(self.wm))
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark (never back) when the host drives it (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        if self.mode != "external":
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use watermark='external' to drive it)"
            )
        if self.ended or (self.wm != K.INT64_MIN and wm_ms <= self.wm):
            return []
        self.wm = int(wm_ms)
        return self._fire_due(self.wm)

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires what it owes and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        if self.ended:
            return []
        self.ended = True
        return self._fire_due(K.INT64_MAX)

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

    def _fire_due(self, wm: int) -> list[Emission]:
        """Every window whose deadline ``wm`` reached, through its triggers, in the general
        engine's order (window end, key JSON, window start)."""
        if wm < self._next_deadline or self.n_rows == 0:
            return []
        rows = K.due_rows(self._p, self.wi, self.wb, self.n_rows, wm)
        out: list[Emission] = []
        if len(rows):
            k = self.wi[rows, K.C_KEY]
            s = self.wi[rows, K.C_START]
            rank = self.keys.json_rank()[k]
            order = np.lexsort((s, rank, self.wi[rows, K.C_CLOSE]))
            rows = np.ascontiguousarray(rows[order])
            m = 2 * len(rows)
            a = self.acc_i.shape[1]
            out_i = np.empty((m, K.N_OUT_COLS), dtype=np.int64)
            ok = np.empty((m, a), dtype=np.int8)
            oi = np.empty((m, a), dtype=np.int64)
            of = np.empty((m, a), dtype=np.float64)
            n_out = K.fire_rows(self._p, self._fns, rows, wm, *self._table_args(),
                                self.hk, self.hs, self.hv, self.hst, out_i, ok, oi, of)
            out = self._emissions(out_i, ok, oi, of, int(n_out), None)
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

    def _values(self, ok: NDArray[np.int8], oi: I64, of: NDArray[np.float64]) -> list[list[Any]]:
        """Per aggregation, the Python values of the output rows (null / int / float)."""
        cols: list[list[Any]] = []
        for j in range(len(self._names)):
            kinds = ok[:, j]
            if bool((kinds == 1).all()):
                cols.append(oi[:, j].tolist())
            elif bool((kinds == 2).all()):
                cols.append(of[:, j].tolist())
            else:
                ci, cf = oi[:, j].tolist(), of[:, j].tolist()
                cols.append([x if kk == 1 else (y if kk == 2 else None)
                             for kk, x, y in zip(kinds.tolist(), ci, cf, strict=True)])
        return cols

    def _emissions(self, out_i: I64, ok: NDArray[np.int8], oi: I64, of: NDArray[np.float64],
                   n: int, batch: RecordBatch | None) -> list[Emission]:
        """The output rows as ``Pane`` / ``LateRecord`` objects (dropped pairs are counted).
        Every field is turned into a Python list by numpy first; the one loop left builds
        the objects (per pane and late record, not per input record)."""
        if n == 0:
            return []
        rows = out_i[:n]
        codes = rows[:, K.O_KEY]
        keys = self.keys.object_array()[codes].tolist()
        if self._wtype == K.WT_GLOBAL:
            ws: list[Any] = [None] * n
            we: list[Any] = ws
        else:
            ws = rows[:, K.O_START].tolist()
            we = (rows[:, K.O_START] + self._size).tolist()
        index = rows[:, K.O_INDEX]
        wm = rows[:, K.O_WM]
        wm_obj = wm.astype(object)
        wm_obj[(wm == K.INT64_MIN) | (wm == K.INT64_MAX)] = None
        cols = self._values(ok[:n], oi[:n], of[:n])
        values = _value_dicts(self._names, cols) if cols else [{} for _ in range(n)]
        now = self.processing_time
        is_pane = rows[:, K.O_KIND] == K.OUT_PANE
        tcodes = np.where(is_pane, rows[:, K.O_TIMING], 0)  # late rows leave it unset
        with _no_gc():
            if bool(is_pane.all()):
                return list(map(
                    make_pane, keys, ws, we, _TIMINGS[tcodes].tolist(),
                    index.tolist(), (index == 0).tolist(), rows[:, K.O_LAST].astype(bool).tolist(),
                    rows[:, K.O_RETRACTION].astype(bool).tolist(), values, repeat(now, n),
                    wm_obj.tolist()))
            out: list[Emission] = []
            timing = _TIMINGS[tcodes].tolist()
            idx = index.tolist()
            last = rows[:, K.O_LAST].astype(bool).tolist()
            retr = rows[:, K.O_RETRACTION].astype(bool).tolist()
            wms = wm_obj.tolist()
            kinds = is_pane.tolist()
            recs = rows[:, K.O_REC].tolist()
            reasons = rows[:, K.O_REASON].tolist()
            code_l = codes.tolist()
            starts = rows[:, K.O_START].tolist()
            times = batch.event_times.tolist() if batch is not None else []
            records = batch.records if batch is not None else None
            for j in range(n):
                if not kinds[j]:
                    r = recs[j]
                    out.append(LateRecord(
                        keys[j], times[r], ws[j], we[j], REASONS[reasons[j]],  # type: ignore[arg-type]
                        records[r] if records is not None else None))
                    self._count_late(code_l[j], starts[j], 0, 1)
                    continue
                out.append(make_pane(keys[j], ws[j], we[j], timing[j], idx[j], idx[j] == 0,
                                     last[j], retr[j], values[j], now, wms[j]))
            return out

    # ------------------------------------------------------------------ state conversion

    def _acc(self, fn: str, row: int, j: int) -> Any:
        """Window ``row``'s accumulator of aggregation ``j`` in the general engine's format."""
        k = int(self.acc_k[row, j])
        i, f = int(self.acc_i[row, j]), float(self.acc_f[row, j])
        if fn == "count":
            return i
        if fn == "sum":
            return f if k == 1 else i
        if fn == "mean":
            return [f if k == 1 else i, int(self.acc_n[row, j])]
        return None if k == 0 else (i if k == 1 else f)

    def _lp_values(self, row: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for j, name in enumerate(self._names):
            k = int(self.lp_k[row, j])
            out[name] = None if k == 0 else (int(self.lp_i[row, j]) if k == 1
                                             else float(self.lp_f[row, j]))
        return out

    def _to_general_state(self) -> EngineState:
        """The window table and counters as the general engine's state."""
        st = EngineState(
            processing_time=self.processing_time,
            watermark=None if self.wm == K.INT64_MIN or self.ended else self.wm,
            ended=self.ended, max_event_time=self.max_t, seq=self.seq,
            late_deltas={k: list(v) for k, v in self.late_deltas.items()},
        )
        kjs = self.keys.json_array()
        keys = self.keys.values
        live = np.flatnonzero(self.wb[: self.n_rows, K.B_LIVE])
        # keys in first-appearance order, then windows by start (the general engine's dicts
        # hold insertion order; nothing observable depends on it)
        order = live[np.lexsort((self.wi[live, K.C_START], self.wi[live, K.C_KEY]))]
        for row in order.tolist():
            code = int(self.wi[row, K.C_KEY])
            kj = kjs[code]
            ks = st.keys.get(kj)
            if ks is None:
                ks = st.keys[kj] = KeyState(key=keys[code],
                                            max_event_time=int(self.key_max_t[code]))
            s = int(self.wi[row, K.C_START])
            start, end = self._bounds(s)
            emitted = int(self.wi[row, K.C_EMITTED])
            first_t, last_t = int(self.wi[row, K.C_FIRST_T]), int(self.wi[row, K.C_LAST_T])
            last_pane = None
            if self._retracting and emitted > 0:
                last_pane = {
                    "start": start, "end": end,
                    "timing": TIMING_NAMES[int(self.wi[row, K.C_LP_TIMING])],
                    "pane_index": emitted - 1, "values": self._lp_values(row),
                    "first_t": first_t, "last_t": last_t,
                }
            ks.windows[NO_START if start is None else start] = WindowState(
                start=start, end=end,
                close=GLOBAL_CLOSE if start is None else int(self.wi[row, K.C_CLOSE]),
                accs=[self._acc(fn, row, j) for j, fn in enumerate(self._fn_names)],
                first_t=first_t, last_t=last_t,
                elements=int(self.wi[row, K.C_ELEMENTS]),
                pending=int(self.wi[row, K.C_PENDING]), emitted=emitted, last_pane=last_pane,
                passed=bool(self.wb[row, K.B_PASSED]),
                born_late=bool(self.wb[row, K.B_BORN_LATE]),
            )
        for kj, (key, acc, drop) in self.late_totals_by_key.items():
            ks = st.keys.get(kj)
            if ks is None:
                code = self.keys.code_of(key)
                ks = st.keys[kj] = KeyState(key=key, max_event_time=int(self.key_max_t[code]))
            ks.late_accepted, ks.late_dropped = acc, drop
        return st

    def _to_engine(self) -> Engine:
        return Engine(self.defn, state=self._to_general_state(), watermark=self.mode)

    def _hand_over(self, batch: RecordBatch, reason: str) -> list[Emission]:
        """The general engine takes over from the converted state, for good."""
        self.handed_over_because = reason
        self.general = self._to_engine()
        return self.general.ingest(batch)

    def _load(self, st: EngineState) -> bool:
        """Load a general-engine state into the arrays; False when the arrays cannot hold it
        exactly (the caller then runs the general engine on it)."""
        rows: list[tuple[int, WindowState]] = []
        for ks in st.keys.values():
            if ks.records or ks.watermark is not None or ks.idle_base is not None:
                return False
            code = self.keys.code_of(ks.key)
            for w in ks.windows.values():
                if w.timer is not None or w.retract:
                    return False
                rows.append((code, w))
        if st.idle_base is not None:
            return False
        n = len(rows)
        self._alloc(max(64, 2 * n))
        fns = self._fn_names
        try:
            for r, (code, w) in enumerate(rows):
                s = K.GLOBAL_START if w.start is None else int(w.start)
                self.wi[r, K.C_KEY] = code
                self.wi[r, K.C_START] = s
                self.wi[r, K.C_CLOSE] = K.INT64_MAX if w.start is None else int(w.close)
                self.wi[r, K.C_PENDING] = w.pending
                self.wi[r, K.C_EMITTED] = w.emitted
                self.wi[r, K.C_ELEMENTS] = w.elements
                self.wi[r, K.C_FIRST_T] = w.first_t if w.first_t is not None else 0
                self.wi[r, K.C_LAST_T] = w.last_t if w.last_t is not None else 0
                self.wb[r, K.B_LIVE] = True
                self.wb[r, K.B_PASSED] = w.passed
                self.wb[r, K.B_BORN_LATE] = w.born_late
                for j, fn in enumerate(fns):
                    if not self._set_acc(fn, r, j, w.accs[j]):
                        return False
                if w.last_pane is not None:
                    lp = w.last_pane
                    self.wi[r, K.C_LP_TIMING] = TIMING_NAMES.index(lp["timing"])
                    for j, name in enumerate(self._names):
                        kind, i, f = _value_parts(lp["values"].get(name))
                        if kind < 0:
                            return False
                        self.lp_k[r, j], self.lp_i[r, j], self.lp_f[r, j] = kind, i, f
        except (TypeError, ValueError, OverflowError, IndexError):
            return False
        self.n_rows = n
        self._rehash(4 * max(64, 2 * n))
        self._next_deadline = int(K.min_deadline(self._p, self.wi, self.wb, self.n_rows))
        self.key_max_t = np.full(len(self.keys), K.INT64_MIN, dtype=np.int64)
        for ks in st.keys.values():
            if ks.max_event_time is not None:
                self.key_max_t[self.keys.code_of(ks.key)] = ks.max_event_time
            if ks.late_accepted or ks.late_dropped:
                kj = self.keys.json_array()[self.keys.code_of(ks.key)]
                self.late_totals_by_key[kj] = [ks.key, ks.late_accepted, ks.late_dropped]
        self.processing_time = st.processing_time
        self.ended = st.ended
        self.wm = K.INT64_MAX if st.ended else (
            K.INT64_MIN if st.watermark is None else int(st.watermark))
        self.max_t = st.max_event_time
        self.seq = st.seq
        self.late_deltas = {k: list(v) for k, v in st.late_deltas.items()}
        # the sum bound is not in the state: the held sums bound it again
        self._sum_bound = float(np.abs(self.acc_i[:n]).sum(dtype=np.float64))
        return True

    def _set_acc(self, fn: str, r: int, j: int, acc: Any) -> bool:
        if fn == "count":
            if type(acc) is not int:
                return False
            self.acc_i[r, j] = acc
            return True
        if fn == "mean":
            if not isinstance(acc, list) or len(acc) != 2 or type(acc[1]) is not int:
                return False
            self.acc_n[r, j] = acc[1]
            acc = acc[0]
        if fn in ("sum", "mean"):
            kind, i, f = _value_parts(acc)
            if kind not in (1, 2):
                return False
            self.acc_k[r, j] = 0 if kind == 1 else 1
            self.acc_i[r, j], self.acc_f[r, j] = i, f
            return True
        kind, i, f = _value_parts(acc)
        if kind < 0:
            return False
        self.acc_k[r, j], self.acc_i[r, j], self.acc_f[r, j] = kind, i, f
        return True


def _value_parts(v: Any) -> tuple[int, int, float]:
    """(kind, int, float) of a value the arrays hold exactly: kind 0 null, 1 int, 2 float;
    -1 for anything else (bools, strings, NaN, integers beyond 2**53)."""
    if v is None:
        return 0, 0, 0.0
    if type(v) is int:
        if abs(v) > EXACT_FLOAT_INT:
            return -1, 0, 0.0
        return 1, v, float(v)
    if type(v) is float and v == v:
        return 2, 0, v
    return -1, 0, 0.0
