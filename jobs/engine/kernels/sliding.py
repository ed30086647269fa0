"""SlidingKernelEngine: the general engine's API and output for KIP-450 sliding windows with
``emit: final``, on array state driven by compiled kernels (:mod:`._sliding_kernels`).

For a qualifying definition (:func:`jobs.engine.kernels.qualify.qualifies`) a sliding window
emits one pane, at its expiry, and nothing fires between the records of an arrival unit. A
window's content is then, at every moment, exactly the key's held records inside its bounds, so
the state holds no accumulator per window: the held records (one CSR of arrays sorted by key,
event time and arrival), and per window its start, creation data and whether the watermark
passed its close. One kernel pass applies a unit's records (window creation, late lines,
accepted-late counts), the watermark advances once, a second pass pops the windows it closes or
expires, and their values are computed from the records (prefix sums for counts and int sums;
``collect`` and ``count_distinct`` from the window's range of records, :mod:`.sliding_side`).
Under ``watermark.scope: key`` each record meets its key's watermark and the windows its raise
expires fire right after it (:mod:`.sliding_key`). With idle advance of the one watermark, a
processing-time tick moves it from its base (``idle_base``, set by the unit that raised it)
and fires what it reaches, as ``advance_watermark`` does. Cost per record: a few binary searches plus
its late lines; a window costs its creation and its
pane, never one step per record that joins it.

Python work per unit: encoding keys and value columns, re-laying the held records (numpy
gathers, O(held records)); the output is columns (:class:`EmissionColumns`: the late lines, then
the panes) built with numpy from the kernels' arrays, and the object API is those columns'
``to_emissions()``.

State snapshots *are* the general engine's (:meth:`SlidingKernelEngine.to_engine_state`); a
state the arrays cannot hold (or an input batch they cannot: non-numeric values, ints beyond
2**53, times beyond 2**60), or a loaded window whose float accumulator depends on an arrival
order the records no longer show, hands over to the general engine for good.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.definition.windows import Sliding, kind_class
from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _sliding_kernels as K
from jobs.engine.kernels import _sliding_late_kernels as KL
from jobs.engine.kernels import _sliding_layout as L
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.kernels.sliding_arrays import (
    BY_REF,
    EXACT_INT,
    FAR,
    I64,
    NO_TIME,
    SUM_LIMIT,
    TIME_LIMIT,
    WatermarkMode,
    _clamp,
    _order,
)
from jobs.engine.kernels.sliding_key import SlidingKeyScope
from jobs.engine.kernels.sliding_side import SIDE_FNS, compact_codes, side_values
from jobs.engine.kernels.sliding_state import SlidingKernelState
from jobs.engine.late_rows import drain_window_rows
from jobs.engine.records import Emission, RecordBatch
from jobs.engine.state import EngineState
from jobs.engine.vectorized.aggregates import object_array
from jobs.engine.vectorized.columns import ColumnarOutput, _value_dicts
from jobs.engine.vectorized.emission_columns import (
    TIMINGS,
    EmissionColumns,
    LateColumns,
    PaneColumns,
)
from jobs.engine.vectorized.geometry import WM_INF, WM_NONE
from jobs.engine.vectorized.values import (
    Unsupported,
    null_mask,
    numeric_column,
    object_values,
)


def _or_none(mask: NDArray[np.bool_], values: NDArray[Any]) -> NDArray[Any]:
    """An object array: ``values`` where ``mask``, else None."""
    out = np.full(len(mask), None, dtype=object)
    out[mask] = values[mask]
    return out


class SlidingKernelEngine(SlidingKeyScope):
    """Same API and observable output as :class:`jobs.engine.Engine` for qualifying sliding
    definitions (see the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        problems = qualification_problems(defn)
        # triggers and the processing clock qualify for SlidingTriggerEngine, not this one
        if defn.trigger.emit != "final":
            problems.append(f"trigger.emit: {defn.trigger.emit} is SlidingTriggerEngine's")
        if defn.uses_processing_time:
            problems.append("event_time: the processing clock is SlidingTriggerEngine's")
        if problems or kind_class(defn.window.type) is not Sliding:
            raise EngineError("sliding kernel engine: " + "; ".join(
                problems or [f"window.type: {defn.window.type} is not sliding"]))
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        super().__init__(defn, watermark)
        if state is not None:
            self._load(state)

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
        return self.ingest_columns(batch).to_emissions()

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark to ``wm_ms`` (never back): ``source`` strategy, or a host that
        drives the watermark (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        return self.advance_watermark_columns(wm_ms).to_emissions()

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        return self.end_of_input_columns().to_emissions()

    def ingest_columns(self, batch: RecordBatch) -> ColumnarOutput:
        """:meth:`ingest` as columns (:class:`EmissionColumns`: the late lines, then the
        panes), built from the kernels' arrays without an object per row."""
        if self.general is not None:
            return self._of_emissions(self.general.ingest(batch))
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        ticked: list[Emission] = []
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            if self._idle:
                ticked = self.advance_processing_time(batch.processing_time)
            self.processing_time = batch.processing_time
        n = len(batch)
        if n == 0:
            return ColumnarOutput(ticked, self._output(None, None).panes)
        try:
            cols = self._columns(batch, n)
            times = batch.event_times
            if int(times.min()) < -TIME_LIMIT or int(times.max()) > TIME_LIMIT:
                raise Unsupported(f"event times beyond +-2**60 ms (key {batch.keys[0]!r})")
        except Unsupported as exc:
            return self._of_emissions([*ticked, *self._hand_over(batch, str(exc))])
        valid, vi, vf, isf, ref, objs = cols
        self.objs.extend(objs)
        codes = self.keys.encode(batch.keys)
        self._grow_keys()
        order = L.by_key(codes, len(self.keys))
        size = self._size
        after = np.zeros(0, dtype=np.int64)
        if self._key_scope:
            marks, after = self._key_marks(codes, times)
        else:
            marks = self._global_marks()
        known, wm0, horizon, hz1, cl = marks
        seq0 = self.seq
        (perm, kstart, kend, rt, win_start, win_key, win_blate, win_cseq, *late_runs
         ) = K.ingest_unit(
            len(self.keys), self.kstart, self.kend, self.rt, order, codes, times, seq0,
            self._event_basis, known, wm0, horizon, hz1, cl, size,
        )
        # the new held records
        self.kstart, self.kend, self.rt = kstart, kend, rt
        (self.rseq, self.rvalid, self.rvi, self.rvf, self.risf, self.rref, self.pc, self.pi,
         self.pf, absum) = L.relay(perm, len(self.rseq), seq0, self.rseq, self.rvalid, valid,
                                   self.rvi, vi, self.rvf, vf, self.risf, isf, self.rref, ref)
        self.held_abs = max((float(absum[j]) for j, fn in enumerate(self._fns)
                             if fn in ("sum", "mean")), default=0.0)
        self.seq += n
        # the new windows, due at their close
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
            if not self._key_scope:  # per-key watermarks scan the unit's keys' windows
                self._add_due(slots, win_start + (size + 1), passed=False)
        late = self._late(batch, codes, *late_runs)
        np.maximum.at(self.key_max_t, codes, times)
        tmax = int(times.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self._key_scope:
            kpanes, recs = self._key_unit_panes(codes, after, seq0)
            if len(self.objs) > 65536:
                self._compact_objs()
            emitted = self._output(late, kpanes).panes
            assert isinstance(emitted, EmissionColumns)
            # each record's late lines come before the panes it fired
            return ColumnarOutput(ticked, EmissionColumns(
                emitted.panes, emitted.late,
                np.searchsorted(recs, _late_records(late_runs), side="left")))
        if self._bounded:
            cand = tmax - self._delay
            if self.wm is None or cand > self.wm:
                self.wm = cand
                if self._idle:  # the watermark moves on from here while no record comes
                    self.idle_base, self.idle_base_pt = cand, self.processing_time
        panes = self._fire(codes)  # the unit's keys (repeats allowed)
        if len(self.objs) > 65536:
            self._compact_objs()
        return ColumnarOutput(ticked, self._output(late, panes).panes)

    def advance_watermark_columns(self, wm_ms: int) -> ColumnarOutput:
        """:meth:`advance_watermark` as columns."""
        if self.general is not None:
            return self._of_emissions(self.general.advance_watermark(wm_ms))
        if not (self._source or self.mode == "external"):
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use Engine(..., watermark='external') to drive it)"
            )
        if self.ended or (self.wm is not None and wm_ms <= self.wm):
            return self._output(None, None)
        if self._idle:  # a host-driven watermark with idle advance: it is also the base
            self.idle_base, self.idle_base_pt = int(wm_ms), self.processing_time
        self.wm = int(wm_ms)
        return self._output(None, self._fire(np.zeros(0, dtype=np.int64)))

    def end_of_input_columns(self) -> ColumnarOutput:
        """:meth:`end_of_input` as columns."""
        if self.general is not None:
            return self._of_emissions(self.general.end_of_input())
        if self.ended:
            return self._output(None, None)
        self.ended = True
        self._all_due()
        return self._output(None, self._fire(np.arange(len(self.keys), dtype=np.int64)))

    def _fire_watermark(self) -> list[Emission]:
        return self._output(None, self._fire(np.zeros(0, dtype=np.int64))).to_emissions()

    def _fire_all(self) -> list[Emission]:
        self._all_due()
        return self._output(
            None, self._fire(np.arange(len(self.keys), dtype=np.int64))).to_emissions()

    def _all_due(self) -> None:
        """Per-key watermarks keep no deadline runs: at the end of input every window is due,
        the close run is all of them."""
        if self._key_scope:
            self.cslot = np.flatnonzero(self.used)
            self.cexp = np.zeros(len(self.cslot), dtype=np.int64)
            self.xexp = self.xslot = np.zeros(0, dtype=np.int64)

    def _global_marks(self) -> tuple[Any, ...]:
        """The watermark every record of a unit meets (global scope), as ``ingest_unit``
        takes it: known, value, horizon, expiry bound, close bound."""
        size, al = self._size, self._al
        if self.wm is None:
            return tuple(np.full(1, v) for v in (False, -FAR, -FAR, -FAR, -FAR))
        return (np.ones(1, dtype=np.bool_), *(
            np.full(1, _clamp(v), dtype=np.int64) for v in (
                self.wm, self.wm - size - 2 - al, self.wm - size - 1 - al, self.wm - size - 1)))

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """Move processing time to ``now_ms`` (never back); with idle advance the watermark
        (each key's under per-key watermarks) moves from its base and what it expires fires."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if self.ended or now_ms <= self.processing_time:
            return []
        self.processing_time = now_ms
        if not self._idle:
            return []
        if self._key_scope:
            return self._output(None, self._idle_panes(now_ms)).to_emissions()
        if self.idle_base is None or self.idle_base_pt is None:
            return []
        self.wm = self.idle_base + (now_ms - self.idle_base_pt)
        return self._fire_watermark()

    def _output(self, late: LateColumns | None, panes: PaneColumns | None) -> ColumnarOutput:
        """One call's output: its late lines (they come before every pane it fires), then its
        panes."""
        if late is None:
            late = LateColumns.empty(self.keys)
        if panes is None:
            panes = PaneColumns.empty(self._names, self.keys)
        return ColumnarOutput([], EmissionColumns(panes, late,
                                                  np.zeros(len(late), dtype=np.int64)))

    def _of_emissions(self, out: list[Emission]) -> ColumnarOutput:
        """The general engine's output (after a hand-over) as columns (objects in ``before``
        if some have no columnar form)."""
        try:
            return ColumnarOutput([], EmissionColumns.of_emissions(out, self._names))
        except ValueError:
            return ColumnarOutput(list(out), EmissionColumns.of_emissions([], self._names))

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
        values = _value_dicts(self._names, [
            v.tolist() for v in self._value_columns(vals, slots).values()])
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
        self.late_runs = []
        return drain_window_rows(deltas)

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
            if fn in BY_REF:  # any value, lists included: one element each
                ov = object_values(raw, n)
                valid[j] = null_mask(ov, n)
                ref[j] = np.arange(n, dtype=np.int64) + len(self.objs) + len(objs)
                objs.extend(ov.tolist())
                if fn == "count_distinct":
                    vi[j, valid[j]] = self.distinct.encode(ov[valid[j]])
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
        (it grows by every unit's values of count-of-expression, first, last, collect and
        count_distinct), and the distinct values no held record has."""
        rows = [j for j, (fn, star) in enumerate(zip(self._fns, self._star, strict=True))
                if fn in BY_REF and not star]
        if not rows:
            self.objs = []
            return
        live = np.zeros(self.rref.shape[1], dtype=np.bool_)
        for c0, c1 in zip(self.kstart.tolist(), self.kend.tolist(), strict=True):
            live[c0:c1] = True
        cd = np.array([j for j, fn in enumerate(self._fns) if fn == "count_distinct"],
                      dtype=np.int64)
        if len(cd):
            at = np.ix_(cd, np.flatnonzero(live))
            self.distinct, self.rvi[at] = compact_codes(self.distinct, self.rvi[at],
                                                        self.rvalid[at])
        refs = self.rref[rows][:, live]
        if 4 * refs.size >= len(self.objs):
            return
        objs = self.objs
        self.objs = [objs[r] for r in refs.ravel().tolist()]
        new = np.full(self.rref.shape, -1, dtype=np.int64)
        new[np.ix_(np.array(rows, dtype=np.int64), np.flatnonzero(live))] = np.arange(refs.size, dtype=np.int64).reshape(
            refs.shape)
        self.rref = new

    def _late(self, batch: RecordBatch, codes: I64, drop_start: I64, drop_rec: I64,
              drop_off: I64, drop_reason: NDArray[np.int8], acc_start: I64, acc_rec: I64,
              acc_off: I64) -> LateColumns | None:
        """Late lines (arrival order, then window start) and late counts of one unit, from
        ``ingest_unit``'s runs (one record's ascending starts each)."""
        if len(drop_start) == 0 and len(acc_start) == 0:
            return None
        self.late_runs.append((KL.run_codes(codes, drop_rec, acc_rec, acc_off, self.late_acc),
                               drop_start, drop_off, acc_start, acc_off))
        if len(self.late_runs) > 64:
            self._compact_late()
        if len(drop_start) == 0:
            return None
        kc, et, ws, we, reason, idx = KL.late_columns(
            drop_start, drop_rec, drop_off, drop_reason, codes, batch.event_times, self._size,
            self.late_drop, batch.records is not None)
        records: Sequence[Any] = _Nones(len(kc))
        if batch.records is not None:  # only the late records are read (they may be lazy)
            late_recs = np.unique(drop_rec)
            shown = object_array([batch.records[i] for i in late_recs.tolist()])
            records = shown[np.searchsorted(late_recs, idx)]
        return LateColumns(kc, self.keys, et, ws, we, reason, records)

    def _fire(self, touched: I64) -> PaneColumns | None:
        """Pop the windows whose close or expiry the watermark reached; emit the expired ones
        by window end, key JSON, window start; forget the held records no window needs any
        more and the keys left with nothing (the general engine does both for the keys it
        visits: those of the unit and those whose windows it popped)."""
        if self.wm is None and not self.ended:
            return None
        wm = _clamp(self.wm) if self.wm is not None else 0
        visited = np.zeros(len(self.keys), dtype=np.bool_)
        visited[touched] = True
        slots, self.n_free, nc, self.xexp, self.xslot = K.pop_due(
            wm, self.ended, self._size, self._al, self.wstart, self.wkey, self.wpassed,
            self.used, self.key_nwin, self.free, self.n_free, self.cexp, self.cslot,
            self.xexp, self.xslot, visited,
        )
        self.cexp, self.cslot = self.cexp[nc:], self.cslot[nc:]
        panes: PaneColumns | None = None
        if len(slots):
            k = self.wkey[slots]
            s = self.wstart[slots]
            slots = slots[_order(s, self.keys.json_rank()[k])]
            vals = self._window_values(slots)
            panes = self._pane_columns(slots, vals)
        keys = np.flatnonzero(visited)
        K.prune(keys, self.kstart, self.kend, self.rt, wm, self.ended, self._size, self._al)
        gone = keys[(self.key_nwin[keys] == 0) & (self.kstart[keys] == self.kend[keys])
                    & (self.late_acc[keys] == 0) & (self.late_drop[keys] == 0)]
        if not self._key_scope:  # a key holding its own watermark is never forgotten
            self.key_max_t[gone] = NO_TIME
        return panes

    def _pane_columns(self, slots: I64, vals: tuple[Any, ...],
                      key_wm: I64 | None = None) -> PaneColumns:
        """The final panes of the windows in ``slots`` (already in emission order), showing
        the watermark (``key_wm``: each pane's key's)."""
        n = len(slots)
        start = self.wstart[slots]
        wm = WM_NONE if self.ended or self.wm is None else self.wm
        if not WM_NONE <= wm < WM_INF:  # pragma: no cover - an external watermark beyond int64
            raise EngineError(f"watermark {wm}: beyond the int64 range of pane columns")
        wms = np.full(n, wm, dtype=np.int64) if key_wm is None or self.ended else key_wm
        ones = np.ones(n, dtype=np.bool_)
        return PaneColumns(
            key_codes=self.wkey[slots], key_table=self.keys, window_start=start,
            window_end=start + self._size,
            timing=np.full(n, TIMINGS.index("ON_TIME"), dtype=np.int8),
            pane_index=np.zeros(n, dtype=np.int64), is_first=ones, is_last=ones,
            retraction=np.zeros(n, dtype=np.bool_), values=self._value_columns(vals, slots),
            emitted_at=np.full(n, self.processing_time, dtype=np.int64),
            watermark=wms,
            first_event_time=vals[0], last_event_time=vals[1],
        )

    def _value_columns(self, vals: tuple[Any, ...], slots: I64) -> dict[str, NDArray[Any]]:
        """Per aggregation, its value per window of ``slots`` (``aggregates.result``'s rules):
        int64 or float64 when every value has that type, else an object array of the Python
        values."""
        _, _, elements, cnt, osum, ofs, oisf, has, _, _, oidx = vals
        n = len(elements)
        out: dict[str, NDArray[Any]] = {}
        objs: NDArray[Any] | None = None
        for j, (name, fn) in enumerate(zip(self._names, self._fns, strict=True)):
            c = cnt[j]
            if fn in SIDE_FNS:
                if objs is None:
                    objs = object_array(self.objs)
                out[name] = side_values(fn, *self._side_ranges(slots), self.rvalid[j],
                                        self.rref[j], self.rvi[j], len(self.distinct), objs)
                continue
            if fn == "count":
                out[name] = c
                continue
            if fn in ("first", "last"):
                if not has[j].any():
                    out[name] = np.full(n, None, dtype=object)
                    continue
                if objs is None:
                    objs = object_array(self.objs)
                out[name] = _or_none(has[j], objs[self.rref[j, np.maximum(oidx[j], 0)]])
                continue
            isf = oisf[j]
            if fn == "mean":
                num = np.where(isf, ofs[j], osum[j].astype(np.float64))
                with np.errstate(divide="ignore", invalid="ignore"):
                    mean = num / c
                empty = c == 0
                out[name] = _or_none(~empty, mean.astype(object)) if empty.any() else mean
                continue
            full = bool(has[j].all()) if fn != "sum" else True
            if not isf.any() and full:
                out[name] = osum[j]
            elif isf.all() and full:
                out[name] = ofs[j]
            else:
                mixed = np.where(isf, ofs[j].astype(object), osum[j].astype(object))
                out[name] = mixed if fn == "sum" else _or_none(has[j], mixed)
        return out

    def _hand_over(self, batch: RecordBatch, why: str) -> list[Emission]:
        """Convert the state to the general engine's and let it run from now on (this batch
        included): exactness over speed for input the arrays cannot hold."""
        self.handed_over_because = why
        self.general = Engine(self.defn, state=self.to_engine_state(), watermark=self.mode)
        return self.general.ingest(batch)

class _Nones(Sequence[None]):
    """``n`` times None, without a list: the record column of late lines when the unit's
    records were not given (millions of rows for a unit with stragglers)."""

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> None: ...

    @overload
    def __getitem__(self, i: slice) -> _Nones: ...

    def __getitem__(self, i: int | slice) -> _Nones | None:
        if isinstance(i, slice):
            return _Nones(len(range(*i.indices(self._n))))
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return None

    def __iter__(self) -> Iterator[None]:
        return repeat(None, self._n)


def _late_records(late_runs: Any) -> I64:
    """The unit record of each late line, in the order of the late columns (arrival, then
    start), from ``ingest_unit``'s runs."""
    drop_rec, drop_off = late_runs[1], late_runs[2]
    runs = np.argsort(drop_rec, kind="stable")
    return np.repeat(drop_rec[runs], np.diff(drop_off)[runs])


__all__ = ["SlidingKernelEngine", "SlidingKernelState"]
