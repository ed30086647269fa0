"""Assignment: which windows each record of an arrival unit joins, or misses.

Tumbling/hopping/global windows come from arithmetic; sessions merge by overlap (any change
of bounds is a new window that inherits the replaced windows' aggregates, pending elements,
earliest timer and, in retracting mode, their last panes to retract); sliding windows
(KIP-450) are created from the key's held records. Lateness is judged against the watermark
that applies to the record (``wm0``: the global one from before the unit, or its key's
as the key's earlier records left it).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from jobs.definition.windows import Session, Sliding
from jobs.definition.windows.sliding import (
    sliding_right_window_nonempty,
    sliding_starts_containing,
)
from jobs.engine import aggregates
from jobs.engine.core import GLOBAL_CLOSE, NEG_INF, POS_INF, EngineCore, LateEntry, RecordTimes
from jobs.engine.records import LateReason, LateRecord
from jobs.engine.state import NO_START, KeyState, WindowState, window_id

Item = tuple[int, int, list[Any], int]
"""One record of a unit: (event time, arrival sequence, aggregation inputs, batch index)."""


class Assigner(EngineCore):
    """Records -> windows (see module docstring)."""

    def _apply_key(
        self, ks: KeyState, kj: str, items: list[Item], wm0: int, late: list[LateEntry]
    ) -> None:
        """Apply one key's records (``items``, in arrival order) to sessions or sliding
        windows (fixed windows: :meth:`_apply_fixed_many`). The engine calls it with one
        record at a time (docs/semantics.md, "Arrival model"), so each record meets the
        sessions and held records its key's earlier records left."""
        kind = self._kind
        if isinstance(kind, Sliding):
            self._apply_sliding(ks, kj, items, wm0, late)
        elif isinstance(kind, Session):
            joined = [
                it for it in items if self._apply_session(ks, kj, it, wm0, late)
            ]
            if wm0 > NEG_INF:  # accepted-late counts go to the windows the records end in
                for t, _, _, _ in joined:
                    for w in ks.windows.values():
                        if w.first_t is not None and w.last_t is not None and (
                            w.first_t <= t <= w.last_t
                        ):
                            if wm0 >= w.close:
                                self._count_late(ks, kj, w.start, w.end, accepted=1)
                            break
        else:
            raise AssertionError(f"_apply_key: {kind.type} windows go through _apply_fixed_many")

    def _fixed_spans(self, times: Sequence[int]) -> None:
        """The window starts of a unit's records (tumbling, hopping), computed once for the
        unit: record i is in the windows starting at ``range(firsts[i], lasts[i] + 1, step)``
        (only ``lasts`` when each record is in one window)."""
        fixed = self._fixed
        if fixed is None:
            self._lasts, self._firsts = [], None
            return
        self._lasts = fixed.last_starts(times)
        self._firsts = fixed.first_starts(times) if fixed.windows_per_record > 1 else None

    def _apply_fixed_many(
        self,
        ks: KeyState,
        kj: str,
        idxs: list[int],
        times: list[int],
        inputs: list[Sequence[Any]],
        base: int,
        wm0: int,
        late: list[LateEntry],
        added: dict[tuple[str, int], tuple[KeyState, WindowState]] | None,
    ) -> int:
        """:meth:`_apply_fixed` for one key's records of a unit (batch positions
        ``idxs``, in arrival order), without building a per-record item; records every window
        that received one into ``added``. Returns the key's max event time among them."""
        size = self._size
        # the unit's window starts (_fixed_spans); no starts: the global window
        lasts, firsts = self._lasts, self._firsts
        step = self._fixed.step_ms if self._fixed is not None else 0
        windows = ks.windows
        adders = self._adders
        event_basis = self._event_basis
        al = self._al
        alive = wm0 < POS_INF
        kmax = NEG_INF
        for i in idxs:
            t = times[i]
            if t > kmax:
                kmax = t
            seq = base + i
            bounds: list[tuple[int | None, int | None, int]]
            if firsts is not None:
                bounds = [(s, s + size, s + size) for s in range(firsts[i], lasts[i] + 1, step)]
            elif lasts:
                s = lasts[i]
                bounds = [(s, s + size, s + size)]
            else:  # the global window
                bounds = [(None, None, GLOBAL_CLOSE)]
            if event_basis and t < wm0:
                for s0, e0, _ in bounds:
                    self._drop(ks, kj, t, s0, e0, "before_watermark", i, late)
                continue
            for s0, e0, close in bounds:
                wid = NO_START if s0 is None else s0
                w = windows.get(wid)
                if w is None:
                    if not alive or wm0 >= close + al:  # expired
                        self._drop(ks, kj, t, s0, e0, "expired", i, late)
                        continue
                    w = windows[wid] = self._new_window(kj, s0, e0, close, wm0 >= close)
                # `_add` inlined: this loop runs once per (record, window) on the hot path
                accs = w.accs
                for j, add in adders:
                    accs[j] = add(accs[j], inputs[j][i], t, seq)
                w.elements += 1
                w.pending += 1
                first = w.first_t
                if first is None:
                    w.first_t = w.last_t = t
                elif t < first:
                    w.first_t = t
                elif t > w.last_t:  # type: ignore[operator]
                    w.last_t = t
                if added is not None:
                    added[(kj, wid)] = (ks, w)
                if wm0 >= close:
                    self._count_late(ks, kj, s0, e0, accepted=1)
        return kmax

    def _apply_session(
        self, ks: KeyState, kj: str, it: Item, wm0: int, late: list[LateEntry]
    ) -> bool:
        """Add one record to its session (True), or drop it (False)."""
        t, seq, vals, idx = it
        gap = self._gap
        if self._event_basis and t < wm0:
            self._drop(ks, kj, t, t, t + gap, "before_watermark", idx, late)
            return False
        hits = [
            w for w in ks.windows.values()
            if w.first_t is not None and w.first_t < t + gap and t < w.close
        ]
        if not hits:
            close = t + gap
            if self._expired(close, wm0):
                self._drop(ks, kj, t, t, close, "expired", idx, late)
                return False
            w = ks.windows[t] = self._new_window(kj, t, close, close, wm0 >= close)
        elif len(hits) == 1 and hits[0].first_t is not None and hits[0].last_t is not None and (
            hits[0].first_t <= t <= hits[0].last_t
        ):
            w = hits[0]
        else:
            w = self._merge_sessions(ks, kj, hits, t, wm0)
        self._add(w, t, seq, vals)
        return True

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
        self, ks: KeyState, kj: str, items: list[Item], wm0: int, late: list[LateEntry]
    ) -> None:
        """KIP-450 windows for one key's records (the engine passes one at a time), decided on
        the held record set.

        The records are held first; then, repeatedly, a record every window of
        which (computed on the records still held) has expired is dropped - it has no effect
        at all, so it may take a window another record relied on with it, hence the repeat.
        The survivors join their live windows, create the new ones (built from the held
        records) and open their right windows.
        """
        size = self._size
        recs = ks.records
        times = RecordTimes(recs)
        # records an expired window could only have come from are ignored (they may be gone)
        horizon = None if wm0 <= NEG_INF else wm0 - size - 2 - self._al

        def starts(t: int) -> list[int]:
            return sliding_starts_containing(t, size, times, horizon)

        def remove(rec: list[Any]) -> None:
            pos = bisect.bisect_left(recs, (rec[0], rec[1]), key=lambda r: (r[0], r[1]))
            del recs[pos]

        entries: list[tuple[list[Any], int]] = [
            ([t, seq, vals], idx) for t, seq, vals, idx in items
        ]
        behind: list[tuple[list[Any], int]] = []
        if self._event_basis:
            behind = [e for e in entries if e[0][0] < wm0]
            entries = [e for e in entries if e[0][0] >= wm0]
        for rec, _ in entries:
            bisect.insort(recs, rec, key=lambda r: (r[0], r[1]))
        for rec, idx in behind:  # joins nothing; its windows as the held records define them
            for s in starts(rec[0]):
                self._drop(ks, kj, rec[0], s, s + size, "before_watermark", idx, late)
        dropped: list[tuple[list[Any], int]] = []
        while True:
            gone = [
                e for e in entries
                if all(self._expired(s + size + 1, wm0) for s in starts(e[0][0]))
            ]
            if not gone:
                break
            for e in gone:
                remove(e[0])
                entries.remove(e)
            dropped.extend(gone)
        for rec, idx in dropped:
            for s in starts(rec[0]):
                self._drop(ks, kj, rec[0], s, s + size, "expired", idx, late)
        fresh: set[int] = set()
        for rec, idx in entries:
            t: int = rec[0]
            seq: int = rec[1]
            vals: list[Any] = rec[2]
            for s in starts(t):
                close = s + size + 1
                if self._expired(close, wm0):
                    self._drop(ks, kj, t, s, s + size, "expired", idx, late)
                    continue
                w = ks.windows.get(s)
                if w is None:
                    w = ks.windows[s] = self._sliding_window(kj, recs, s, wm0)
                    fresh.add(s)
                elif s not in fresh:
                    self._add(w, t, seq, vals)
                if wm0 >= close:
                    self._count_late(ks, kj, s, s + size, accepted=1)
        for rec, _ in entries:
            s = rec[0] + 1
            if (
                s not in ks.windows
                and not self._expired(s + size + 1, wm0)
                and sliding_right_window_nonempty(rec[0], size, times)
            ):
                ks.windows[s] = self._sliding_window(kj, recs, s, wm0)

    def _sliding_window(
        self, kj: str, recs: list[list[Any]], s: int, wm0: int
    ) -> WindowState:
        """A new sliding window [s, s+size] holding the held records inside it."""
        size = self._size
        w = self._new_window(kj, s, s + size, s + size + 1, wm0 >= s + size + 1)
        lo = bisect.bisect_left(recs, s, key=lambda r: r[0])
        hi = bisect.bisect_right(recs, s + size, key=lambda r: r[0])
        for r in recs[lo:hi]:
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
