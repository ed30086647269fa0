"""The Python side of session windows that fire more than once (count-based early and late
triggers, ON_TIME at the window end; discarding, accumulating, retracting): one kernel pass
per arrival unit (:func:`._session_trigger_kernels.ingest_unit_triggered`), then one per
watermark advance (``due_windows`` + ``fire_due``), and the ``Pane`` objects built from their
rows. What the arrays do not hold lives here: in retracting mode, per retraction list id, the
panes a window must retract (``WindowState.retract``, the same dicts the general engine
keeps), its own last pane (``last_pane``) last when the window's ``haslp`` is set.
:class:`TriggeredSessions` is a base of :class:`~.session.SessionKernelEngine`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import EarlyTrigger, LateTrigger
from jobs.engine.kernels import _session_kernels as K
from jobs.engine.kernels import _session_trigger_kernels as KT
from jobs.engine.kernels.session_arrays import I64, NO_TIME, WM_CLAMP, SessionArrays
from jobs.engine.kernels.timers import timer_due_times
from jobs.engine.records import Emission, LateReason, LateRecord, RecordBatch, Timing, make_pane

TIMINGS: tuple[Timing, Timing, Timing] = ("EARLY", "ON_TIME", "LATE")
"""Pane timings by the kernels' codes (``KT.EARLY``, ``KT.ON_TIME``, ``KT.LATE``)."""
PANE_COLS = 10
"""Columns of a pane row (``_session_trigger_kernels._emit``)."""


class TriggeredSessions(SessionArrays):
    """Late lines of both session paths, and the triggered path (see the module docstring)."""

    _early_part: EarlyTrigger | None
    _late_part: LateTrigger | None
    _fresh: I64 = np.zeros((0, 2), dtype=np.int64)
    """The windows born late in the unit being ingested (``ingest_unit_triggered``)."""

    def _timer_values(self) -> tuple[int, int]:
        """The due times an early / a late timer started now gets (``KT.NO_TIMER`` for a
        part that is not processing-time based), as ``firing._fire_window`` sets them; the
        floor of due timers is lowered to them."""
        ev, lv = timer_due_times(self.processing_time, self._early_part, self._late_part,
                                 KT.NO_TIMER)
        self.timer_floor = min(self.timer_floor, ev, lv)
        return ev, lv

    def _fire_timers(self, now: int) -> list[Emission]:
        """``firing._fire_timers``: the windows whose timer is due at ``now``, by due time,
        window end, key JSON, start."""
        live = self.used & (self.timer != KT.NO_TIMER)
        slots = np.flatnonzero(live & (self.timer <= now))
        rest = self.timer[live & (self.timer > now)]
        self.timer_floor = int(rest.min()) if len(rest) else KT.NO_TIMER
        m = len(slots)
        if m == 0:
            return []
        k = self.wkey[slots]
        order = np.lexsort((self.first[slots], self.keys.json_rank()[k],
                            self.last[slots] + self._gap, self.timer[slots]))
        slots = slots[order]
        self._ensure_slots(m)  # a ghost per window
        prow = np.empty((m, PANE_COLS), dtype=np.int64)
        self.n_free, n_p = KT.fire_timers(
            slots, self._slot_wms(slots), self._gap, self._discarding,
            self._retracting, len(self._names), self.wkey, self.first, self.last, self.pending,
            self.emitted, self.rflag, self.haslp, self.rid, self.free, self.n_free, self.cnt,
            self.isum, self.fsum, self.isf, self.ei, self.ef, self.eisf, self.has, self.ot,
            self.oseq, self.oref, prow, self.timer,
        )
        groups = self._panes(prow[:n_p], np.zeros((0, 3), dtype=np.int64), self.wm,
                             self._row_wms(prow[:n_p]))
        return [e for g in groups for e in g]

    def _slot_wms(self, slots: I64) -> I64:
        """The watermark each window in ``slots`` is run at, clamped (``WM_CLAMP[0]``:
        none yet): the global one, or (per-key watermarks) its key's."""
        if not self._key_scope:
            return np.full(len(slots), self._wm_arg() if self.wm is not None else WM_CLAMP[0],
                           dtype=np.int64)
        kw = self.key_wm[self.wkey[slots]]
        return np.where(kw == NO_TIME, WM_CLAMP[0], np.clip(kw, *WM_CLAMP))

    def _row_wms(self, rows: I64) -> I64 | None:
        """Per-key watermarks: the watermark each pane row shows (its key's now; NO_TIME:
        none); None under a global watermark."""
        return self.key_wm[rows[:, 1]] if self._key_scope else None

    def _late(self, batch: RecordBatch, codes: I64, status: NDArray[np.int8], start: I64,
              end: I64) -> list[Emission]:
        """Late lines (arrival order) and late counts of one unit's judged records."""
        idx = np.flatnonzero(status != K.JOINED)
        if len(idx) == 0:
            return []
        out: list[Emission] = []
        kjs = self.keys.json_array()
        values = self.keys.values
        times = batch.event_times
        records = batch.records
        for i, c, how, ws, we in zip(idx.tolist(), codes[idx].tolist(), status[idx].tolist(),
                                     start[idx].tolist(), end[idx].tolist(), strict=True):
            key = values[c]
            accepted = how == K.ACCEPTED_LATE
            if not accepted:
                reason: LateReason = (
                    "before_watermark" if how == K.DROPPED_BEFORE_WM else "expired")
                out.append(LateRecord(key, int(times[i]), ws, we, reason,
                                      records[i] if records is not None else None))
            dk = f"{kjs[c]}|{ws}|{we}"
            row = self.late_deltas.get(dk)
            if row is None:
                row = self.late_deltas[dk] = [key, ws, we, 0, 0]
            if accepted:
                row[3] += 1
                self.late_acc[c] += 1
            else:
                row[4] += 1
                self.late_drop[c] += 1
        return out

    def _ingest_triggered(self, batch: RecordBatch, codes: I64, valid: NDArray[np.bool_],
                          vf: NDArray[np.float64], vi: I64, visf: NDArray[np.bool_],
                          vref: I64) -> list[Emission]:
        """Apply one unit's records with their count triggers; returns each record's late line
        or panes in arrival order (the watermark advance is the caller's)."""
        n = len(batch)
        self._ensure_slots(2 * n)  # a new window and a ghost per record
        status = np.empty(n, dtype=np.int8)
        out_start = np.empty(n, dtype=np.int64)
        out_end = np.empty(n, dtype=np.int64)
        prow = np.empty((n, PANE_COLS), dtype=np.int64)
        fresh = np.empty((n, 2), dtype=np.int64)
        ev, lv = self._timer_values()
        (self.n_free, self.born_next, self.hn, n_p, merges, n_mg,
         n_fresh) = KT.ingest_unit_triggered(
            codes, batch.event_times, self.seq, valid, vf, vi, visf, vref, self._kinds,
            self._wm_arg(), self.wm is not None, self._event_basis, self._gap, self._al,
            self._early_count, self._late_count, self._discarding, self._retracting,
            self.key_head, self.nxt, self.wkey, self.first, self.last, self.elements,
            self.pending, self.emitted, self.rflag, self.haslp, self.rid, self.born,
            self.blate, self.used, self.free, self.n_free, self.born_next,
            self.cnt, self.isum, self.fsum, self.isf, self.ei, self.ef, self.eisf, self.has,
            self.ot, self.oseq, self.oref, status, out_start, out_end, self.key_nwin,
            self.hexp, self.hslot, self.hborn, self.hn, prow,
            self.timer, self._step, ev, lv, fresh,
        )
        self._fresh = fresh[:n_fresh]
        if self.side:
            self._side_accept(codes, batch.event_times, self.seq, valid,
                              (status == K.JOINED) | (status == K.ACCEPTED_LATE))
        seq0 = self.seq
        self.seq += n
        late = self._late(batch, codes, status, out_start, out_end)
        groups = self._panes(prow[:n_p], merges[:n_mg], self.wm, bound=seq0 + prow[:n_p, 0])
        return in_record_order(late, status, prow[:n_p, 0], groups)

    def _fire_triggered(self, touched: I64 | None) -> list[Emission]:
        """Run every window whose close or expiry the watermark reached (all at the end) in
        output order (window end, key JSON, window start); then forget the per-key data of
        keys left with no session and no late counts."""
        unit = touched
        if self.wm is None and not self.ended:
            if unit is not None and self._timed:
                ev, lv = self._timer_values()
                KT.unit_timers(np.unique(unit), self._fresh, len(self._fresh), 0, False,
                               self._gap, ev, lv, self.key_head, self.nxt, self.used,
                               self.born, self.pending, self.last, self.timer)
            self._fresh = np.zeros((0, 2), dtype=np.int64)
            return []
        ev, lv = self._timer_values()
        slots, kinds, self.hn = KT.due_windows(self._wm_arg(), self.ended, self.used,
                                               self.born, self.hexp, self.hslot, self.hborn,
                                               self.hn)
        panes: list[Emission] = []
        m = len(slots)
        if m:
            k = self.wkey[slots]
            order = np.lexsort((self.first[slots], self.keys.json_rank()[k],
                                self.last[slots] + self._gap))
            slots, kinds, k = slots[order], kinds[order], k[order]
            self._ensure_slots(m)  # a ghost per window
            due = (k, self.first[slots], self.last[slots])
            prow = np.empty((m, PANE_COLS), dtype=np.int64)
            gone = np.empty(m, dtype=np.int64)
            self.n_free, self.hn, n_p, n_g = KT.fire_due(
                slots, kinds, np.full(m, self._wm_arg()), self.ended, self._gap, self._al,
                self._at_window_end, self._at_expiry, self._late_count, self._discarding,
                self._retracting, len(self._names), self.key_head, self.nxt, self.wkey,
                self.first, self.last, self.pending, self.emitted, self.rflag, self.haslp,
                self.rid, self.born, self.blate, self.used, self.free, self.n_free, self.cnt, self.isum, self.fsum,
                self.isf, self.ei, self.ef, self.eisf, self.has, self.ot, self.oseq, self.oref,
                self.key_nwin, self.hexp, self.hslot, self.hborn, self.hn, prow, gone,
                self.timer, lv,
            )
            groups = self._panes(prow[:n_p], np.zeros((0, 3), dtype=np.int64),
                                 None if self.ended else self.wm)
            panes = [e for g in groups for e in g]
            if self.side:
                self._side_forget(due, ~self.used[slots])
            if self._retracting:
                for r in gone[:n_g].tolist():
                    self.held.pop(r, None)
            touched = k if touched is None else np.concatenate([touched, k])
        if unit is not None and self._timed:
            KT.unit_timers(np.unique(unit), self._fresh, len(self._fresh), self._wm_arg(),
                           self.wm is not None or self.ended, self._gap, ev, lv,
                           self.key_head, self.nxt, self.used, self.born, self.pending,
                           self.last, self.timer)
        self._fresh = np.zeros((0, 2), dtype=np.int64)
        if not self._key_scope:  # a key holding its own watermark is never forgotten
            self._forget_idle_keys(touched)
        if len(self.objs) > 65536:
            self._compact_objs()
        return panes

    def _panes(self, rows: I64, merges: I64, wm_out: int | None,
               wms: I64 | None = None, bound: I64 | None = None,
               dead: I64 | None = None) -> list[list[Emission]]:
        """The emissions of each pane row (its retractions, then the pane), with the merge
        rows applied in between; frees the rows' ghost slots. Each pane shows ``wm_out``, or
        (``wms`` given) the row's watermark there (``NO_TIME``: none); ``bound``: the arrival
        number of each row's record (none: every record so far); ``dead``: the sessions that
        expired among the rows (:meth:`.SideEntries.values_upto`)."""
        if len(rows) == 0 and len(merges) == 0:
            return []
        ghosts = rows[:, 3]
        side_rows = None
        if self.side:
            if bound is None:
                bound = np.full(len(ghosts), self.seq, dtype=np.int64)
            side_rows = (rows[:, 1], rows[:, 4], rows[:, 5], bound)
        values = self._values(ghosts, panes=side_rows, dead=dead)
        g = len(ghosts)
        self.free[self.n_free: self.n_free + g] = ghosts
        self.n_free += g
        kv = self.keys.values
        gap = self._gap
        now = self.processing_time
        retracting = self._retracting
        mg = merges.tolist()
        mi = 0
        out: list[list[Emission]] = []
        held = self.held
        wl: list[int | None] = [wm_out] * len(rows) if wms is None else [
            None if w == NO_TIME else w for w in wms.tolist()]
        for i, (_, code, rid, _, start, last, timing, idx, is_last, had_lp) in enumerate(
                rows.tolist()):
            wm_out = wl[i]
            while mi < len(mg) and mg[mi][0] <= i:
                self._move_retractions(mg[mi][1], mg[mi][2])
                mi += 1
            key = kv[code]
            v = values[i]
            ems: list[Emission] = []
            if retracting:
                olds = held.pop(rid, [])
                lp = olds.pop() if had_lp else None
                if len(olds) > 1:
                    olds.sort(key=lambda r: (r["start"], r["pane_index"]))
                if lp is not None:
                    olds.append(lp)
                ems = [make_pane(key, o["start"], o["end"], o["timing"], o["pane_index"],
                                 o["pane_index"] == 0, False, True, o["values"], now, wm_out,
                                 o["first_t"], o["last_t"]) for o in olds]
                held[rid] = [{
                    "start": start, "end": last + gap, "timing": TIMINGS[timing],
                    "pane_index": idx, "values": dict(v), "first_t": start, "last_t": last,
                }]
            ems.append(make_pane(key, start, last + gap, TIMINGS[timing], idx, idx == 0,
                                 bool(is_last), False, v, now, wm_out, start, last))
            out.append(ems)
        for _, new, old in mg[mi:]:
            self._move_retractions(new, old)
        return out

    def _move_retractions(self, new: int, old: int) -> None:
        """A window with list ``old`` was replaced by a merge into list ``new``: its panes to
        retract, then its last pane, join ``new``'s (``Assigner._merge_sessions``)."""
        self.held.setdefault(new, []).extend(self.held.pop(old, ()))

    def _forget_idle_keys(self, touched: I64 | None) -> None:
        """Reset the max event time of keys left with no session and no late counts (the
        general engine forgets such keys)."""
        if touched is not None and len(touched):
            gone = touched[(self.key_nwin[touched] == 0) & (self.late_acc[touched] == 0)
                           & (self.late_drop[touched] == 0)]
            self.key_max_t[gone] = NO_TIME


def in_record_order(late: list[Emission], status: NDArray[np.int8], pane_records: I64,
                    groups: list[list[Emission]]) -> list[Emission]:
    """A unit's output in the order of the records that caused it: each dropped record's
    late line (``late`` in the order of the dropped ``status`` entries) before the pane groups
    its record fired (``pane_records[i]`` is the record of ``groups[i]``)."""
    if not late:
        return [e for g in groups for e in g]
    dropped = np.flatnonzero((status == K.DROPPED_BEFORE_WM)
                             | (status == K.DROPPED_EXPIRED)).tolist()
    rows: list[tuple[int, list[Emission]]] = [(i, [e]) for i, e in zip(dropped, late,
                                                                       strict=True)]
    rows += zip(pane_records.tolist(), groups, strict=True)
    rows.sort(key=lambda r: r[0])
    return [e for _, g in rows for e in g]
