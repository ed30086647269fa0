"""Firing: windows -> panes, at the watermark and processing time the engine is at.

A window is in its early phase until the watermark reaches its close, then (after its one
ON_TIME firing) in its late phase until it expires at close + allowed lateness. Triggers,
accumulation and retractions are applied here; so is the output order of panes that fire
together (window end, key JSON, window start).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from jobs.engine import aggregates
from jobs.engine.core import NEG_INF, POS_INF, EngineCore
from jobs.engine.records import Emission, Timing, make_pane
from jobs.engine.state import KeyState, WindowState
from jobs.engine.triggers import next_boundary


class Firing(EngineCore):
    """Windows -> panes (see module docstring)."""

    def _fire(
        self,
        scan: Iterable[KeyState],
        windows: dict[tuple[str, int], tuple[KeyState, WindowState]] | None = None,
    ) -> list[Emission]:
        """Run windows through their triggers at the current watermark: every window of the
        keys in ``scan`` (they received records, or their own watermark moved) — or, when
        ``windows`` is given, only those (the windows a unit added records to: under a
        global watermark the other windows of those keys are exactly as their last run left
        them) — and, under a global watermark, every window whose deadline it has reached.
        Panes that fire together come out by window end, key JSON, window start."""
        st = self.state
        todo: dict[tuple[str, int], tuple[KeyState, WindowState]] = {}
        visited: dict[str, KeyState] = {}
        for ks in scan:
            kj = self._kj(ks.key)
            visited[kj] = ks
            if windows is None:
                for wid, w in ks.windows.items():
                    todo[(kj, wid)] = (ks, w)
        if windows is not None:
            todo.update(windows)
        if not self._key_scope or st.ended:
            wm = POS_INF if st.ended else (NEG_INF if st.watermark is None else st.watermark)
            heap = self._deadlines
            while heap and heap[0][0] <= wm:
                d, kj, wid = heapq.heappop(heap)
                ks_ = st.keys.get(kj)
                w_ = ks_.windows.get(wid) if ks_ is not None else None
                if ks_ is None or w_ is None or self._deadline(w_) != d:
                    continue  # stale: the window is gone or its deadline moved
                todo[(kj, wid)] = (ks_, w_)
                visited[kj] = ks_
        groups: list[tuple[tuple[int, str, int], list[Emission]]] = []
        for (kj, wid), (ks, w) in todo.items():
            g = self._fire_window(ks, kj, wid, w, self._wm(ks))
            if g:
                end = w.end if w.end is not None else POS_INF
                groups.append(((end, kj, wid), g))
        for kj, ks in visited.items():
            if self._sliding and ks.records:
                self._prune_records(ks, self._wm(ks))
            if not ks.windows and not ks.records and not self._key_scope and not (
                ks.late_accepted or ks.late_dropped
            ):
                del st.keys[kj]  # forget idle keys (unless they carry late totals)
        groups.sort(key=lambda g: g[0])
        return [e for _, g in groups for e in g]

    def _fire_window(
        self, ks: KeyState, kj: str, wid: int, w: WindowState, wm: int
    ) -> list[Emission]:
        plan = self._plan
        now = self.state.processing_time
        if wm < w.close:  # early phase
            early = plan.early
            if early is not None and w.pending > 0:
                if early.kind == "count":
                    if w.pending >= (early.count or 1):
                        return self._emit(ks, w, "EARLY", False, wm)
                elif w.timer is None:
                    d = early.duration or 0
                    self._set_timer(kj, w.start, w, now + d if early.kind == "after"
                                    else next_boundary(now, d, early.align_to))
            return []
        out: list[Emission] = []
        expired = self._expired(w.close, wm)
        if not w.passed:
            w.passed = True
            w.timer = None  # pending early timers are dropped when the on-time pane fires
            if not expired and not self._key_scope:
                heapq.heappush(self._deadlines, (self._deadline(w), kj, wid))
            if plan.at_window_end and not w.born_late:
                out = self._emit(ks, w, "ON_TIME", expired, wm)
                if expired:
                    del ks.windows[wid]
                return out
        if expired:
            if w.pending > 0:
                out = self._emit(ks, w, "ON_TIME" if plan.at_expiry else "LATE", True, wm)
            del ks.windows[wid]
            return out
        late = plan.late
        if late is not None and w.pending > 0:
            if late.kind == "count":
                if w.pending >= (late.count or 1):
                    return self._emit(ks, w, "LATE", False, wm)
            elif w.timer is None:
                self._set_timer(kj, w.start, w, now + (late.duration or 0))
        return []

    def _fire_timers(self, now: int) -> list[Emission]:
        """Fire the processing-time timers due at or before ``now``: by due time, then window
        end, key JSON, window start."""
        st = self.state
        due: dict[tuple[str, int], tuple[tuple[int, int, str, int], KeyState, WindowState]] = {}
        heap = self._timers
        while heap and heap[0][0] <= now:
            at, kj, wid = heapq.heappop(heap)
            ks = st.keys.get(kj)
            w = ks.windows.get(wid) if ks is not None else None
            if ks is None or w is None or w.timer != at:
                continue  # stale: fired, dropped or replaced since
            end = w.end if w.end is not None else POS_INF
            due[(kj, wid)] = ((at, end, kj, wid), ks, w)
        out: list[Emission] = []
        for _, ks, w in sorted(due.values(), key=lambda d: d[0]):
            w.timer = None
            if w.pending > 0:
                wm = self._wm(ks)
                out.extend(self._emit(ks, w, "EARLY" if wm < w.close else "LATE", False, wm))
        return out

    def _emit(self, ks: KeyState, w: WindowState, timing: Timing, is_last: bool,
              wm: int) -> list[Emission]:
        """The pane ``w`` owes now, preceded (retracting mode) by the retractions it implies."""
        now = self.state.processing_time
        wm_out = None if wm <= NEG_INF or wm >= POS_INF else wm
        out: list[Emission] = []
        values = self._values(w)
        if self._retracting:
            # replaced sessions in start order (however the merges happened), then its own
            replaced = sorted(w.retract, key=lambda r: (r["start"], r["pane_index"]))
            olds = [*replaced, *([w.last_pane] if w.last_pane is not None else [])]
            for old in olds:
                out.append(make_pane(
                    ks.key, old["start"], old["end"], old["timing"], old["pane_index"],
                    old["pane_index"] == 0, False, True, old["values"], now, wm_out,
                    old["first_t"] if self._bounds_out else None,
                    old["last_t"] if self._bounds_out else None,
                ))
            w.retract = []
        out.append(make_pane(
            ks.key, w.start, w.end, timing, w.emitted, w.emitted == 0, is_last, False, values,
            now, wm_out, w.first_t if self._bounds_out else None,
            w.last_t if self._bounds_out else None,
        ))
        if self._retracting:
            w.last_pane = {
                "start": w.start, "end": w.end, "timing": timing, "pane_index": w.emitted,
                "values": dict(values), "first_t": w.first_t, "last_t": w.last_t,
            }
        w.emitted += 1
        w.pending = 0
        w.timer = None
        if self._discarding:
            w.accs = [aggregates.new(fn) for fn in self._fns]
        return out

    def _prune_records(self, ks: KeyState, wm: int) -> None:
        """Forget sliding records no live or future window needs. A record r is in windows
        ending by r + size (expired once wm >= r + size + 1 + lateness) and it *defines* the
        right window [r+1, r+1+size] (expired once wm >= r + size + 2 + lateness), whose start
        the engine finds from r; so r is kept until the latter."""
        recs = ks.records
        n = 0
        while n < len(recs) and self._expired(recs[n][0] + self._size + 2, wm):
            n += 1
        if n:
            del recs[:n]
