"""The Python side of triggered session windows under per-key watermarks (``watermark.scope:
key``, with or without idle advance): one kernel pass per arrival unit
(:func:`._session_key_trigger_kernels.ingest_unit_keys_triggered`: each record's late line or
count pane, then what its move of its key's watermark fires), one per idle advance, and the
expiry heap, which under per-key watermarks serves only the end of input and is rebuilt from
the open sessions when that comes (or when fired sessions left it mostly stale).
:class:`KeyTriggeredSessions` is a base of :class:`~.session.SessionKernelEngine`."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _session_kernels as K
from jobs.engine.kernels import _session_key_trigger_kernels as KKT
from jobs.engine.kernels import _session_trigger_kernels as KT
from jobs.engine.kernels.session_arrays import I64, NO_TIME, WM_CLAMP
from jobs.engine.kernels.session_triggers import PANE_COLS, TriggeredSessions, in_record_order
from jobs.engine.records import Emission, RecordBatch


class KeyTriggeredSessions(TriggeredSessions):
    """Triggered sessions under per-key watermarks (see the module docstring)."""

    _delay: int
    _idle: bool

    def _ingest_keys_triggered(self, batch: RecordBatch, codes: I64,
                               valid: NDArray[np.bool_], vf: NDArray[np.float64], vi: I64,
                               visf: NDArray[np.bool_], vref: I64) -> list[Emission]:
        """One unit: per record in arrival order its late line, its count pane, then the
        panes its move of the key's watermark fires (each pane showing the key's watermark
        as it was then)."""
        n = len(batch)
        times = batch.event_times
        room = 2 * n + int(self.key_nwin[np.unique(codes)].sum())
        self._ensure_slots(room)
        self._ensure_heap(room)
        status = np.empty(n, dtype=np.int8)
        out_start = np.empty(n, dtype=np.int64)
        out_end = np.empty(n, dtype=np.int64)
        prow = np.empty((room, PANE_COLS), dtype=np.int64)
        pwm = np.empty(room, dtype=np.int64)
        gone = np.empty(room, dtype=np.int64)
        due_slots = np.empty(room, dtype=np.int64)
        dead = np.empty((room, 4), dtype=np.int64)
        due_kinds = np.empty(room, dtype=np.int64)
        ev, lv = self._timer_values()
        (self.n_free, self.born_next, self.hn, n_p, merges, n_mg, n_g,
         n_d) = KKT.ingest_unit_keys_triggered(
            codes, times, self.seq, valid, vf, vi, visf, vref, self._kinds,
            self._delay, self._idle, self.processing_time, self.key_wm, self.key_ib,
            self.key_ibpt, NO_TIME, self._event_basis, self._gap, self._al,
            self._early_count, self._late_count, self._at_window_end, self._at_expiry,
            self._discarding, self._retracting,
            self.key_head, self.nxt, self.wkey, self.first, self.last, self.elements,
            self.pending, self.emitted, self.rflag, self.haslp, self.rid, self.born,
            self.blate, self.used, self.free, self.n_free, self.born_next,
            self.cnt, self.isum, self.fsum, self.isf, self.ei, self.ef, self.eisf, self.has,
            self.ot, self.oseq, self.oref, status, out_start, out_end, self.key_nwin,
            self.hexp, self.hslot, self.hborn, self.hn, prow, pwm, gone, due_slots,
            due_kinds, self.timer, ev, lv, dead,
        )
        if self.side:
            self._side_accept(codes, times, self.seq, valid,
                              (status == K.JOINED) | (status == K.ACCEPTED_LATE))
        seq0 = self.seq
        self.seq += n
        late = self._late(batch, codes, status, out_start, out_end)
        dead = dead[:n_d]
        dead[:, 3] += seq0
        groups = self._panes(prow[:n_p], merges[:n_mg], None, pwm[:n_p],
                             bound=seq0 + prow[:n_p, 0], dead=dead)
        if n_p == 0 and n_mg == 0 and n_d and self.side:  # no pane read (and forgot) them
            for entries in self.side.values():
                entries.forget_dead(dead)
        if self._retracting:
            for r in gone[:n_g].tolist():
                self.held.pop(r, None)
        np.maximum.at(self.key_max_t, codes, times)
        tmax = int(times.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self.hn > 2 * int(np.count_nonzero(self.used)) + 1024:
            self._rebuild_key_heap()
        if len(self.objs) > 65536:
            self._compact_objs()
        return in_record_order(late, status, prow[:n_p, 0], groups)

    def _idle_keys_triggered(self, now_ms: int) -> list[Emission]:
        """Idle advance: every key with an idle base moves its watermark to it plus the
        processing time since; the windows that passes or expires run, by window end, key
        JSON, start."""
        moved = np.flatnonzero(self.key_ib != NO_TIME)
        old = self.key_wm[moved].copy()
        self.key_wm[moved] = self.key_ib[moved] + (now_ms - self.key_ibpt[moved])
        slots, kinds = KKT.idle_due(moved, old, self.key_wm, NO_TIME, self._gap, self._al,
                                    self.key_head, self.nxt, self.first, self.last,
                                    int(self.key_nwin[moved].sum()))
        m = len(slots)
        if m == 0:
            return []
        k = self.wkey[slots]
        order = np.lexsort((self.first[slots], self.keys.json_rank()[k], self.last[slots]))
        slots, kinds = slots[order], kinds[order]
        self._ensure_slots(m)  # a ghost per window
        self._ensure_heap(m)
        prow = np.empty((m, PANE_COLS), dtype=np.int64)
        gone = np.empty(m, dtype=np.int64)
        due = (self.wkey[slots], self.first[slots], self.last[slots])
        self.n_free, self.hn, n_p, n_g = KT.fire_due(
            slots, kinds, self._slot_wms(slots), False, self._gap, self._al,
            self._at_window_end, self._at_expiry, self._late_count, self._discarding,
            self._retracting, len(self._names), self.key_head, self.nxt, self.wkey,
            self.first, self.last, self.pending, self.emitted, self.rflag, self.haslp,
            self.rid, self.born, self.blate, self.used, self.free, self.n_free, self.cnt,
            self.isum, self.fsum, self.isf, self.ei, self.ef, self.eisf, self.has, self.ot,
            self.oseq, self.oref, self.key_nwin, self.hexp, self.hslot, self.hborn, self.hn,
            prow, gone, self.timer, self._timer_values()[1],
        )
        groups = self._panes(prow[:n_p], np.zeros((0, 3), dtype=np.int64), None,
                             self._row_wms(prow[:n_p]))
        if self.side:
            self._side_forget(due, ~self.used[slots])
        if self._retracting:
            for r in gone[:n_g].tolist():
                self.held.pop(r, None)
        return [e for g in groups for e in g]

    def _rebuild_key_heap(self) -> None:
        """The expiry heap from the open sessions: a session its key's watermark has passed
        waits for its expiry, any other for its close (tags ``2 * born + kind``)."""
        slots = np.flatnonzero(self.used)
        close = self.last[slots] + self._gap
        kw = self.key_wm[self.wkey[slots]]
        passed = (kw != NO_TIME) & (np.clip(kw, *WM_CLAMP) >= close)
        exp = np.where(passed, close + self._al, close)
        tag = 2 * self.born[slots] + passed
        order = np.argsort(exp, kind="stable")  # a sorted array is a heap
        self._ensure_heap(max(len(slots) - self.hn, 0))
        self.hn = len(slots)
        self.hexp[: self.hn] = exp[order]
        self.hslot[: self.hn] = slots[order]
        self.hborn[: self.hn] = tag[order]
