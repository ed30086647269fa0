"""Per-key watermarks (``watermark.scope: key``, with or without ``idle_advance``) for the
sliding kernel engine (``emit: final``).

Each record is judged against its key's watermark as the key's earlier records left it, then
raises it; the windows of the key that the raise expires fire right after that record's late
lines (the general engine fires the key after each record). The watermark each record meets
is arithmetic on the unit's event times (:func:`._sliding_key_kernels.key_marks`), so the
kernel pass takes it per record; which record fired a window is the first of its key whose
raise reached the window's expiry. A fired window's pane holds the records the key held when
it fired: a later record of the unit inside its bounds (held for another, live window) is left
out of that pane. Idle advance moves each key's watermark from its base on a processing-time
tick and fires what that expires, panes ordered as the general engine's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jobs.engine.kernels import _sliding_key_kernels as KK
from jobs.engine.kernels.sliding_arrays import FAR, I64, NO_TIME, _order
from jobs.engine.kernels.sliding_side import SIDE_FNS, side_values, window_ranges
from jobs.engine.kernels.sliding_state import SlidingState
from jobs.engine.vectorized.aggregates import object_array
from jobs.engine.vectorized.emission_columns import PaneColumns


class SlidingKeyScope(SlidingState):
    """The per-key watermark parts of :class:`~jobs.engine.kernels.sliding.SlidingKernelEngine`."""

    def _pane_columns(self, slots: I64, vals: tuple[Any, ...],
                      key_wm: I64 | None = None) -> PaneColumns:
        raise NotImplementedError  # the engine's

    def _key_marks(self, codes: I64, times: I64) -> tuple[tuple[Any, ...], I64]:
        """The watermark each unit record meets (``ingest_unit``'s per-record arrays), and
        its key's watermark after it; the keys' watermarks (and idle bases) move."""
        *marks, after = KK.key_marks(
            codes, times, self._delay, self.key_wm, NO_TIME, self._idle, self.key_ib,
            self.key_ibpt, self.processing_time, self._size, self._al)
        return tuple(marks), after

    def _expire_keys(self, keys: I64) -> I64:
        """Windows of ``keys`` whose close the key's watermark reached pass; those it expires
        are freed (their data stays readable until reused) and returned."""
        mark = np.zeros(len(self.keys), dtype=np.bool_)
        mark[keys] = True
        slots = np.flatnonzero(self.used)
        slots = slots[mark[self.wkey[slots]]]
        kw = self.key_wm[self.wkey[slots]]
        slots, kw = slots[kw != NO_TIME], np.clip(kw[kw != NO_TIME], -FAR, FAR)
        close = self.wstart[slots] + (self._size + 1)
        self.wpassed[slots[close <= kw]] = True
        fired = slots[close + self._al <= kw]
        self.used[fired] = False
        np.subtract.at(self.key_nwin, self.wkey[fired], 1)
        self.free[self.n_free: self.n_free + len(fired)] = fired
        self.n_free += len(fired)
        return fired

    def _key_unit_panes(self, codes: I64, after: I64, seq0: int) -> tuple[PaneColumns | None,
                                                                          I64]:
        """The panes a unit's records fired (by record, then start) and the record that fired
        each; then the unit's keys' held records are pruned at their own watermarks."""
        keys = np.unique(codes)
        fired = self._expire_keys(keys)
        panes = None
        recs = np.zeros(0, dtype=np.int64)
        if len(fired):
            size, al = self._size, self._al
            recs = KK.firing_records(codes, after, len(self.keys), self.wkey[fired],
                                     self.wstart[fired] + (size + 1 + al))
            o = _order(recs, self.wstart[fired])
            fired, recs = fired[o], recs[o]
            panes = self._panes_upto(fired, seq0 + recs, after[recs])
        KK.prune_keys(keys, self.kstart, self.kend, self.rt, self.key_wm, NO_TIME, self._size,
                      self._al)
        return panes, recs

    def _idle_panes(self, now_ms: int) -> PaneColumns | None:
        """Idle advance on a processing-time tick: every key with a base moves to
        ``base + (now - base time)``; the windows that expires fire, by window end, key JSON,
        start."""
        moved = np.flatnonzero(self.key_ib != NO_TIME)
        if not len(moved):
            return None
        self.key_wm[moved] = self.key_ib[moved] + (now_ms - self.key_ibpt[moved])
        fired = self._expire_keys(moved)
        panes = None
        if len(fired):
            k = self.wkey[fired]
            s = self.wstart[fired]
            fired = fired[_order(s, self.keys.json_rank()[k])]
            panes = self._panes_upto(fired, None, self.key_wm[self.wkey[fired]])
        KK.prune_keys(moved, self.kstart, self.kend, self.rt, self.key_wm, NO_TIME, self._size,
                      self._al)
        return panes

    def _panes_upto(self, slots: I64, lim: I64 | None, wm: I64) -> PaneColumns:
        """Final panes of ``slots`` (in emission order), each showing watermark ``wm``; with
        ``lim``, a window holds only the records that arrived up to its firing record's
        sequence number."""
        panes = self._pane_columns(slots, self._window_values(slots, lim), wm)
        side = [j for j, fn in enumerate(self._fns) if fn in SIDE_FNS]
        if lim is None or not side or not len(slots):
            return panes
        a, b = window_ranges(slots, self.wstart, self.wkey, self.kstart, self.kend, self.rt,
                             self._size)
        fix = np.flatnonzero(KK.any_after(a, b, self.rseq, lim))
        if not len(fix):
            return panes
        # collect / count_distinct of those windows from their records up to the limit
        x, off = KK.gather_upto(a[fix], b[fix], self.rseq, lim[fix])
        objs = object_array(self.objs)
        for j in side:
            panes.values[self._names[j]][fix] = side_values(
                self._fns[j], off[:-1], off[1:], self.rvalid[j, x], self.rref[j, x],
                self.rvi[j, x], len(self.distinct), objs)
        return panes
