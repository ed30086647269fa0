"""The firing side of :class:`~.sliding_triggers.SlidingTriggerEngine`: the watermark's
deadlines and the processing-time timers (heaps of (due, key JSON)), the closing firing of the
keys they reach, and the order of a call's panes and late lines.

A processing-time timer is a column of the window's row (``W_TIMER``), set by the same kernel
passes that run the window (``Firing._fire_window``); a heap of (due time, key) tells the
clock which keys to scan (:meth:`TriggerFiring._fire_timers`)."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import EarlyTrigger, LateTrigger
from jobs.engine.kernels import _sliding_trigger_fire_kernels as KF
from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels import _sliding_trigger_side_kernels as KS
from jobs.engine.kernels.sliding_trigger_keys import FAR, REASONS, KeyArrays
from jobs.engine.kernels.sliding_trigger_panes import (
    PaneRows,
    build_panes,
    empty_panes,
    in_order,
    key_ranks,
)
from jobs.engine.kernels.sliding_trigger_side import compact_distinct, pane_side
from jobs.engine.kernels.timers import timer_due_times
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized.emission_columns import (
    LATE_REASONS,
    EmissionColumns,
    LateColumns,
    PaneColumns,
)
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.value_codes import ValueTable

if TYPE_CHECKING:
    from jobs.engine.kernels.sliding_triggers import SlidingTriggerEngine

I64 = NDArray[np.int64]
LATE_CODE = np.array([LATE_REASONS.index(r) for r in REASONS], dtype=np.int8)
"""The ``LateColumns.reason`` code of each kernel reason (``REASONS``)."""


class TriggerFiring:
    """Deadlines, timers and the closing firing (see the module docstring)."""

    keys: dict[str, KeyArrays]
    wm: int | None
    ended: bool
    seq: int
    processing_time: int
    _key_scope: bool
    _timed: bool
    _size: int
    _al: int
    _early_n: int
    _late_n: int
    _at_end: bool
    _at_expiry: bool
    _discarding: bool
    _kinds: Any
    _side: list[Any]
    _side_cols: Any
    _side_distinct: Any
    _distinct: ValueTable
    _distinct_limit: int
    _objs_limit: int
    _early_part: EarlyTrigger | None
    _late_part: LateTrigger | None
    _due: list[tuple[int, str]]
    _timers: list[tuple[int, str]]
    _out_keys: KeyTable

    def _wm_of(self, ka: KeyArrays) -> tuple[bool, int, int | None]:
        raise NotImplementedError  # the engine's

    @property
    def _eng(self) -> SlidingTriggerEngine:
        """This mixin as the engine it is part of (the pane and side helpers take it)."""
        return cast("SlidingTriggerEngine", self)

    def _unit_output(self, parts: list[PaneRows], late: list[tuple[int, int, int, int]],
                     batch: RecordBatch, times: I64) -> EmissionColumns:
        """The unit's panes (all keys' rows built at once) and late lines in record order: a
        record's late lines, then the panes it fired. ``late``: (record, start, reason, key
        code) per late line."""
        pc, row_of, _ = build_panes(self._eng, parts)
        em_recs = np.zeros(0, dtype=np.int64)  # the record of each emission, in their order
        if len(pc):
            recs = np.concatenate([p.PR[:, K.P_REC] for p in parts])
            pc, row_of = in_order(pc, row_of, np.argsort(recs, kind="stable"))
            em_recs = recs[row_of]
        LR = np.array(late, dtype=np.int64).reshape(-1, 4)
        LR = LR[np.argsort(LR[:, 0], kind="stable")]
        rec = LR[:, 0]
        records = batch.records
        lc = LateColumns(
            LR[:, 3], self._out_keys, times[rec], LR[:, 1], LR[:, 1] + self._size,
            (LATE_CODE[LR[:, 2]]).astype(np.int8),
            [records[r] for r in rec.tolist()] if records is not None else [None] * len(rec))
        return EmissionColumns(pc, lc, np.searchsorted(em_recs, rec, side="left"))

    def _timer_values(self) -> tuple[int, int]:
        """The due times an early / a late timer started now gets (``NO_TIMER`` for a part
        that is not processing-time based), as ``Firing._fire_window`` sets them."""
        return timer_due_times(self.processing_time, self._early_part, self._late_part,
                               K.NO_TIMER)

    def _push_timer(self, ka: KeyArrays) -> None:
        if not self._timed:
            return
        d = int(KF.next_timer(ka.W, ka.n_w))
        if d < ka.timer:
            ka.timer = d
            heapq.heappush(self._timers, (d, ka.kj))

    def _fire_timers(self, now: int) -> PaneColumns:
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
            return empty_panes(self._eng)
        parts: list[PaneRows] = []
        for ka in keys.values():
            wm_known, wm0, wm_out = self._wm_of(ka)
            PR, PW, PF, n_p = KF.fire_timers(ka.W, ka.WF, ka.n_w, now, wm_known, wm0,
                                            self._size, self._discarding, self._kinds,
                                            self.seq - 1)
            if n_p:
                members = pane_side(self._eng, ka, PR, n_p) if self._side else None
                parts.append(PaneRows(ka, PR[:n_p], PW[:n_p], PF[:n_p], members, wm_out))
            self._push_timer(ka)
        pc, row_of, part = build_panes(self._eng, parts)
        if not len(pc):
            return pc
        PR = np.concatenate([p.PR for p in parts])
        return in_order(pc, row_of, np.lexsort(
            (key_ranks(parts)[part], PR[:, K.P_START], PR[:, K.P_REC])))[0]

    def _fire_keys(self, run: list[KeyArrays], parts: list[PaneRows]
                   ) -> tuple[tuple[I64, I64], I64]:
        """The closing firing of the keys ``run`` in one kernel pass
        (:func:`._sliding_trigger_fire_kernels.fire_keys`) over their state gathered into one set
        of arrays, which the pass changes in place; each key keeps its slice of them. Adds the panes to ``parts``; returns the keys' next
        deadlines and timers, and the windows that closed without a pane (start, key)."""
        nk = len(run)
        hoff = np.zeros(nk + 1, dtype=np.int64)
        hoff[1:] = np.cumsum([ka.n_h for ka in run])
        woff = np.zeros(nk + 1, dtype=np.int64)
        woff[1:] = np.cumsum([ka.n_w for ka in run])
        RT_in = np.concatenate([ka.RT[:ka.n_h] for ka in run])
        RF_in = np.concatenate([ka.RF[:ka.n_h] for ka in run])
        W_in = np.concatenate([ka.W[:ka.n_w] for ka in run])
        WF_in = np.concatenate([ka.WF[:ka.n_w] for ka in run])
        wk = np.zeros(nk, dtype=np.bool_)
        w0 = np.zeros(nk, dtype=np.int64)
        if self._key_scope:
            wms = [self._wm_of(ka) for ka in run]
            wk[:] = [w[0] for w in wms]
            w0[:] = [w[1] for w in wms]
            outs = [w[2] for w in wms]
        else:
            known, wm, wm_out = self._wm_of(run[0]) if run else (False, 0, None)
            wk[:], w0[:] = known, wm
        ev, lv = self._timer_values()
        hlo, nw, PR, PW, PF, PK, n_p, GONE, dl, tm = KF.fire_keys(
            wk, w0, self.ended, self._size, self._al, self._early_n, self._late_n,
            self._at_end, self._at_expiry, self._discarding, self._kinds, RT_in, hoff,
            W_in, WF_in, woff, ev, lv, self.seq - 1, FAR)
        if n_p:
            members = (KS.side_outputs_keys(RT_in, hoff, PK, PR, n_p, self._size,
                                           self._side_cols, self._side_distinct,
                                           len(self._distinct)) if self._side else None)
            if self._key_scope:
                parts.append(PaneRows(run, PR, PW, PF, members, None,
                                      [outs[k] for k in PK.tolist()], PK))
            else:
                parts.append(PaneRows(run, PR, PW, PF, members, wm_out, None, PK))
        hl, he, wl, wn = hlo.tolist(), hoff[1:].tolist(), woff[:-1].tolist(), nw.tolist()
        for ka, a, b, c, d in zip(run, hl, he, wl, wn, strict=True):
            ka.RT, ka.RF, ka.n_h = RT_in[a:b], RF_in[a:b], b - a
            ka.W, ka.WF, ka.n_w = W_in[c:c + d], WF_in[c:c + d], d
        return (dl, tm), GONE

    def _push_keys(self, run: list[KeyArrays], nxt: tuple[I64, I64]) -> None:
        """The deadline and timer heap entries of the keys that ran and are kept (their next
        deadlines and timers ``nxt``), pushed in bulk."""
        dl, tm = nxt
        keep = [(k, ka) for k, ka in enumerate(run) if self.keys.get(ka.kj) is ka]
        if not keep:
            return
        if not self._key_scope:
            new = []
            for (_, ka), d in zip(keep, dl[[k for k, _ in keep]].tolist(), strict=True):
                if d != ka.deadline:
                    ka.deadline = d
                    if d < FAR:
                        new.append((d, ka.kj))
            if new:
                self._due.extend(new)
                heapq.heapify(self._due)
        if self._timed:
            new = []
            for (_, ka), d in zip(keep, tm[[k for k, _ in keep]].tolist(), strict=True):
                if d < ka.timer:
                    ka.timer = d
                    new.append((d, ka.kj))
            if new:
                self._timers.extend(new)
                heapq.heapify(self._timers)

    def _push_deadline(self, ka: KeyArrays) -> None:
        if self._key_scope:  # the unit's keys run their windows, not a global deadline
            return
        d = int(KF.next_deadline(ka.W, ka.n_w, self._size, self._al, FAR))
        if d != ka.deadline:
            ka.deadline = d
            if d < FAR:
                heapq.heappush(self._due, (d, ka.kj))

    def _fire(self, touched: list[KeyArrays]) -> PaneColumns:
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
        kas = list(visited.values())
        parts: list[PaneRows] = []
        run = [ka for ka in kas if ka.n_w or ka.n_h]
        if run:
            nxt, gone = self._fire_keys(run, parts)
        pc, row_of, part = build_panes(self._eng, parts)  # before objects are compacted
        if len(pc):
            PR = np.concatenate([p.PR for p in parts])
            pc = in_order(pc, row_of, np.lexsort((key_ranks(parts)[part],
                                                  PR[:, K.P_START])))[0]
        if run:
            for s, k in gone.tolist():  # windows that closed without a pane
                run[k].lp.pop(s, None)
        if not self._key_scope:  # a key's own watermark is never forgotten
            for ka in kas:
                if not (ka.n_w or ka.n_h or ka.late_acc or ka.late_drop):
                    del self.keys[ka.kj]
        if run:
            self._push_keys(run, nxt)
        if len(self._eng.objs) > self._objs_limit:
            from jobs.engine.kernels.sliding_trigger_state import compact_objs

            compact_objs(self._eng)
            self._objs_limit = max(self._objs_limit, 2 * len(self._eng.objs))
        if len(self._distinct) > self._distinct_limit:
            compact_distinct(self._eng)
        return pc

