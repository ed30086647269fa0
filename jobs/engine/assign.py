"""Assignment: which windows each record of an instant joins, or misses.

Tumbling/hopping/global windows come from arithmetic; sessions merge by overlap (any change
of bounds is a new window that inherits the replaced windows' aggregates, pending elements,
earliest timer and, in retracting mode, their last panes to retract); sliding windows
(KIP-450) are created from the key's held records. Lateness is judged against the watermark
as it stood before the instant (``wm0``).
"""

from __future__ import annotations

import bisect
from typing import Any

from jobs.engine import aggregates
from jobs.engine.core import GLOBAL_CLOSE, NEG_INF, EngineCore, LateEntry, RecordTimes
from jobs.engine.records import LateReason, LateRecord
from jobs.engine.state import KeyState, WindowState, window_id
from jobs.engine.windows import (
    hopping_starts,
    sliding_right_window_nonempty,
    sliding_starts_containing,
    tumbling_start,
)


class Assigner(EngineCore):
    """Records -> windows (see module docstring)."""

    def _apply(
        self,
        ks: KeyState,
        kj: str,
        t: int,
        seq: int,
        vals: list[Any],
        wm0: int,
        idx: int,
        late: list[LateEntry],
    ) -> None:
        wt = self._wtype
        if wt == "session":
            self._apply_session(ks, kj, t, seq, vals, wm0, idx, late)
            return
        if wt == "sliding":
            self._apply_sliding(ks, kj, t, seq, vals, wm0, idx, late)
            return
        bounds: list[tuple[int | None, int | None, int]]
        if wt == "tumbling":
            s = tumbling_start(t, self._size, self._align)
            bounds = [(s, s + self._size, s + self._size)]
        elif wt == "hopping":
            bounds = [
                (s, s + self._size, s + self._size)
                for s in hopping_starts(t, self._size, self._step, self._align)
            ]
        else:
            bounds = [(None, None, GLOBAL_CLOSE)]
        if self._event_basis and t < wm0:
            for s0, e0, _ in bounds:
                self._drop(ks, kj, t, s0, e0, "before_watermark", idx, late)
            return
        for s0, e0, close in bounds:
            wid = window_id(s0)
            w = ks.windows.get(wid)
            if w is None:
                if self._expired(close, wm0):
                    self._drop(ks, kj, t, s0, e0, "expired", idx, late)
                    continue
                w = ks.windows[wid] = self._new_window(kj, s0, e0, close, wm0 >= close)
            self._add(w, t, seq, vals)
            if wm0 >= close:
                self._count_late(ks, kj, s0, e0, accepted=1)

    def _apply_session(
        self,
        ks: KeyState,
        kj: str,
        t: int,
        seq: int,
        vals: list[Any],
        wm0: int,
        idx: int,
        late: list[LateEntry],
    ) -> None:
        gap = self._gap
        if self._event_basis and t < wm0:
            self._drop(ks, kj, t, t, t + gap, "before_watermark", idx, late)
            return
        hits = [
            w for w in ks.windows.values()
            if w.first_t is not None and w.first_t < t + gap and t < w.close
        ]
        if not hits:
            close = t + gap
            if self._expired(close, wm0):
                self._drop(ks, kj, t, t, close, "expired", idx, late)
                return
            w = ks.windows[t] = self._new_window(kj, t, close, close, wm0 >= close)
        elif len(hits) == 1 and hits[0].first_t is not None and hits[0].last_t is not None and (
            hits[0].first_t <= t <= hits[0].last_t
        ):
            w = hits[0]
        else:
            w = self._merge_sessions(ks, kj, hits, t, wm0)
        self._add(w, t, seq, vals)
        if wm0 >= w.close:
            self._count_late(ks, kj, w.start, w.end, accepted=1)

    def _merge_sessions(
        self, ks: KeyState, kj: str, hits: list[WindowState], t: int, wm0: int
    ) -> WindowState:
        """A new window replacing ``hits`` (an extension is a merge with one window): new
        bounds, pane index 0, merged aggregates, pending elements and earliest timer."""
        hits.sort(key=lambda w: w.start if w.start is not None else 0)
        first = min([t] + [w.first_t for w in hits if w.first_t is not None])
        last = max([t] + [w.last_t for w in hits if w.last_t is not None])
        close = last + self._gap
        new = self._new_window(kj, first, close, close, wm0 >= close)
        accs = hits[0].accs
        for w in hits[1:]:
            accs = [aggregates.merge(fn, a, b) for fn, a, b in zip(self._fns, accs, w.accs,
                                                                   strict=True)]
        new.accs = [aggregates.copy(a) for a in accs]
        new.first_t, new.last_t = first, last
        new.elements = sum(w.elements for w in hits)
        new.pending = sum(w.pending for w in hits)
        timers = [w.timer for w in hits if w.timer is not None]
        if timers:
            self._set_timer(kj, first, new, min(timers))
        if self._retracting:
            for w in hits:
                new.retract.extend(w.retract)
                if w.last_pane is not None:
                    new.retract.append(w.last_pane)
        for w in hits:
            del ks.windows[window_id(w.start)]
        ks.windows[first] = new
        return new

    def _apply_sliding(
        self,
        ks: KeyState,
        kj: str,
        t: int,
        seq: int,
        vals: list[Any],
        wm0: int,
        idx: int,
        late: list[LateEntry],
    ) -> None:
        size = self._size
        recs = ks.records
        times = RecordTimes(recs)
        item: list[Any] = [t, seq, vals]
        pos = bisect.bisect_right(recs, (t, seq), key=lambda r: (r[0], r[1]))
        recs.insert(pos, item)
        # records an expired window could only have come from are ignored (they may be gone)
        horizon = None if wm0 <= NEG_INF else wm0 - size - 2 - self._al
        starts = sliding_starts_containing(t, size, times, horizon)
        if self._event_basis and t < wm0:
            del recs[pos]
            for s in starts:
                self._drop(ks, kj, t, s, s + size, "before_watermark", idx, late)
            return
        joined = False
        for s in starts:
            close = s + size + 1
            w = ks.windows.get(s)
            if w is None:
                if self._expired(close, wm0):
                    self._drop(ks, kj, t, s, s + size, "expired", idx, late)
                    continue
                w = ks.windows[s] = self._sliding_window(kj, recs, s, wm0, exclude=item)
            self._add(w, t, seq, vals)
            joined = True
            if wm0 >= close:
                self._count_late(ks, kj, s, s + size, accepted=1)
        if not joined:  # dropped for every window: the record has no effect at all
            del recs[pos]
            return
        s = t + 1
        if (
            s not in ks.windows
            and not self._expired(s + size + 1, wm0)
            and sliding_right_window_nonempty(t, size, times)
        ):
            ks.windows[s] = self._sliding_window(kj, recs, s, wm0, exclude=None)

    def _sliding_window(
        self, kj: str, recs: list[list[Any]], s: int, wm0: int, exclude: list[Any] | None
    ) -> WindowState:
        """A new sliding window [s, s+size] holding the held records inside it (except
        ``exclude``, which the caller adds itself)."""
        size = self._size
        w = self._new_window(kj, s, s + size, s + size + 1, wm0 >= s + size + 1)
        lo = bisect.bisect_left(recs, s, key=lambda r: r[0])
        hi = bisect.bisect_right(recs, s + size, key=lambda r: r[0])
        for r in recs[lo:hi]:
            if r is not exclude:
                self._add(w, r[0], r[1], r[2])
        return w

    def _add(self, w: WindowState, t: int, seq: int, vals: list[Any]) -> None:
        accs = w.accs
        for j, add in self._adders:
            accs[j] = add(accs[j], vals[j], t, seq)
        w.elements += 1
        w.pending += 1
        first = w.first_t
        if first is None:
            w.first_t = w.last_t = t
        elif t < first:
            w.first_t = t
        elif t > w.last_t:  # type: ignore[operator]
            w.last_t = t

    def _drop(
        self,
        ks: KeyState,
        kj: str,
        t: int,
        start: int | None,
        end: int | None,
        reason: LateReason,
        idx: int,
        late: list[LateEntry],
    ) -> None:
        late.append(
            (idx, start if start is not None else 0,
             LateRecord(key=ks.key, event_time=t, window_start=start, window_end=end,
                        reason=reason, record=self._record(idx)))
        )
        self._count_late(ks, kj, start, end, dropped=1)

    def _count_late(self, ks: KeyState, kj: str, start: int | None, end: int | None,
                    accepted: int = 0, dropped: int = 0) -> None:
        ks.late_accepted += accepted
        ks.late_dropped += dropped
        dk = f"{kj}|{start}|{end}"
        row = self.state.late_deltas.get(dk)
        if row is None:
            row = self.state.late_deltas[dk] = [ks.key, start, end, 0, 0]
        row[3] += accepted
        row[4] += dropped
