"""The windowing engine: windows, watermark, lateness, triggers and accumulation.

One ``Engine`` holds all keys of one stream partition. The host drives it with four calls —
``advance_processing_time``, ``ingest`` (one arrival instant), ``advance_watermark`` and
``end_of_input`` — and gets back the emissions in output order. Everything the engine knows
lives in :class:`~jobs.engine.state.EngineState`, so a host can snapshot it between calls and
resume a new engine from it.

The rules implemented here are those of ``shared/spec/windowing.md``; the choices the spec
leaves open are written down in ``docs/semantics.md`` (arrival instants, ordering of panes
that fire together, what ``emitted_at`` is, ...). Internally minus/plus infinite watermarks
are the sentinels ``NEG_INF``/``POS_INF`` so comparisons need no special cases.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Sequence
from typing import Any, Literal, overload

import numpy as np

from jobs.definition.model import Definition
from jobs.engine import aggregates
from jobs.engine.errors import EngineError
from jobs.engine.records import (
    Emission,
    Key,
    LateReason,
    LateRecord,
    Pane,
    RecordBatch,
    Timing,
    key_json,
    plain_key,
)
from jobs.engine.state import EngineState, KeyState, WindowState, window_id
from jobs.engine.triggers import next_boundary, trigger_plan
from jobs.engine.windows import (
    hopping_starts,
    sliding_right_window_nonempty,
    sliding_starts_containing,
    tumbling_start,
)

NEG_INF = -(2**63)
POS_INF = 2**63
GLOBAL_CLOSE = 2**63 - 1
"""The global window's close: only the end-of-input watermark (POS_INF) reaches it, and it
still fits a signed 64-bit long in snapshots that leave Python."""
WatermarkMode = Literal["internal", "external"]

_Late = tuple[int, int, LateRecord]
"""(arrival index in the batch, window start, late record): sorted for output."""


class _Times(Sequence[int]):
    """The event times of a key's held records (``[t, seq, inputs]``), for ``bisect``."""

    __slots__ = ("_recs",)

    def __init__(self, recs: list[list[Any]]) -> None:
        self._recs = recs

    def __len__(self) -> int:
        return len(self._recs)

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...
    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [r[0] for r in self._recs[i]]
        t: int = self._recs[i][0]
        return t


class Engine:
    """Runs one definition over arrival instants of many keys; see module docstring."""

    def __init__(
        self,
        defn: Definition,
        state: EngineState | None = None,
        watermark: WatermarkMode = "internal",
    ) -> None:
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        w = defn.window
        for name in ("size", "step", "gap"):
            needed = (
                (name == "size" and w.type in ("tumbling", "hopping", "sliding"))
                or (name == "step" and w.type == "hopping")
                or (name == "gap" and w.type == "session")
            )
            value = getattr(w, name)
            if needed and (value is None or value <= 0):
                raise EngineError(f"window.{name}: must be a positive duration for {w.type}")
        if w.type == "hopping" and w.step is not None and w.size is not None and w.step > w.size:
            raise EngineError("window.step: must not exceed window.size")
        self.defn = defn
        self.state = state if state is not None else EngineState()
        self.mode: WatermarkMode = watermark
        self._plan = trigger_plan(defn)
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._adders = list(enumerate(aggregates.adder(fn) for fn in self._fns))
        self._wtype = w.type
        self._size = w.size or 0
        self._step = w.step or 0
        self._gap = w.gap or 0
        self._align = w.align_to
        self._al = defn.allowed_lateness
        self._event_basis = defn.lateness_basis == "event"
        self._discarding = defn.accumulation == "discarding"
        self._retracting = defn.accumulation == "retracting"
        self._bounds_out = w.type in ("session", "sliding")
        self._processing_clock = defn.uses_processing_time
        wmd = defn.watermark
        self._delay = wmd.delay
        self._source = wmd.strategy == "source"
        self._bounded = (
            watermark == "internal" and wmd.strategy == "bounded" and not self._processing_clock
        )
        self._idle = self._bounded and wmd.idle_advance
        self._key_scope = self._bounded and wmd.scope == "key"
        self._kj_cache: dict[tuple[type, Key], str] = {}
        # Derived indexes (never snapshotted, rebuilt from the state): windows by the global
        # watermark at which they next need attention (close, then close + allowed lateness;
        # under per-key watermarks a key's windows are scanned when its watermark moves), and
        # by their processing-time timer. Entries are (instant, key json, window id) and are
        # checked against the window when popped, so stale ones are simply skipped.
        self._deadlines: list[tuple[int, str, int]] = []
        self._timers: list[tuple[int, str, int]] = []
        for kj, ks in self.state.keys.items():
            for wid, win in ks.windows.items():
                if not self._key_scope:
                    self._deadlines.append((self._deadline(win), kj, wid))
                if win.timer is not None:
                    self._timers.append((win.timer, kj, wid))
        heapq.heapify(self._deadlines)
        heapq.heapify(self._timers)

    # ------------------------------------------------------------------ public API

    @property
    def max_event_time(self) -> int | None:
        return self.state.max_event_time

    @property
    def watermark(self) -> int | None:
        """The (global) watermark; ``None`` when minus or plus infinity."""
        st = self.state
        return None if st.ended else st.watermark

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """Move processing time to ``now_ms`` (never back): fire the processing-time timers
        due at or before it, then evaluate a watermark that moves with processing time."""
        st = self.state
        if st.ended or now_ms <= st.processing_time:
            return []
        st.processing_time = now_ms
        out = self._fire_timers(now_ms)
        if self.mode == "internal" and self._processing_clock:
            if st.watermark is None or now_ms > st.watermark:
                st.watermark = now_ms
                out.extend(self._fire(()))
        elif self._idle:
            if self._key_scope:
                moved = []
                for ks in st.keys.values():
                    if ks.idle_base is not None and ks.idle_base_pt is not None:
                        ks.watermark = ks.idle_base + (now_ms - ks.idle_base_pt)
                        moved.append(ks)
                out.extend(self._fire(moved))
            elif st.idle_base is not None and st.idle_base_pt is not None:
                st.watermark = st.idle_base + (now_ms - st.idle_base_pt)
                out.extend(self._fire(()))
        return out

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """Apply one arrival instant: lateness is judged against the watermark before the
        instant; then the watermark advances from the instant's records and what it passes
        fires. Late lines come first (in arrival order), then panes."""
        st = self.state
        if st.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        out: list[Emission] = []
        if batch.processing_time is not None and batch.processing_time > st.processing_time:
            out.extend(self.advance_processing_time(batch.processing_time))
        n = len(batch)
        if n == 0:
            return out
        now = st.processing_time
        times: list[int] = [now] * n if self._processing_clock else batch.event_times.tolist()
        cols: list[Sequence[Any] | None] = []
        for name, star in zip(self._names, self._star, strict=True):
            col = batch.columns.get(name)
            if col is None and not star:
                raise EngineError(f"ingest: the batch has no column for aggregation {name!r}")
            if isinstance(col, np.ndarray):
                col = col.tolist()  # plain Python values: state must stay JSON data
            cols.append(None if star else col)
        groups: dict[str, list[int]] = {}
        for i, k in enumerate(batch.keys):
            groups.setdefault(self._kj(k), []).append(i)
        records = batch.records
        late: list[_Late] = []
        touched: list[tuple[KeyState, int]] = []
        for kj, idxs in groups.items():
            ks = st.keys.get(kj)
            if ks is None:
                ks = st.keys[kj] = KeyState(key=plain_key(batch.keys[idxs[0]]))
            wm0 = self._wm(ks)
            kmax = NEG_INF
            for i in idxs:
                t = times[i]
                if t > kmax:
                    kmax = t
                vals = [1 if c is None else c[i] for c in cols]
                seq = st.seq
                st.seq += 1
                rec = records[i] if records is not None else None
                self._apply(ks, kj, t, seq, vals, wm0, i, rec, late)
            if ks.max_event_time is None or kmax > ks.max_event_time:
                ks.max_event_time = kmax
            touched.append((ks, kmax))
        bmax = max(k for _, k in touched)
        if st.max_event_time is None or bmax > st.max_event_time:
            st.max_event_time = bmax
        late.sort(key=lambda x: (x[0], x[1]))
        out.extend(x[2] for x in late)
        if self._bounded:
            if self._key_scope:
                for ks, kmax in touched:
                    self._raise_key_watermark(ks, kmax - self._delay, now)
            else:
                self._raise_global_watermark(bmax - self._delay, now)
        out.extend(self._fire([ks for ks, _ in touched]))
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark to ``wm_ms`` (never back): ``source`` strategy, or a host that
        drives the watermark (``watermark="external"``)."""
        st = self.state
        if not (self._source or self.mode == "external"):
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use Engine(..., watermark='external') to drive it)"
            )
        if st.ended or (st.watermark is not None and wm_ms <= st.watermark):
            return []
        st.watermark = wm_ms
        return self._fire(())

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires what it owes and closes."""
        st = self.state
        if st.ended:
            return []
        st.ended = True
        return self._fire(list(st.keys.values()))

    def open_windows(self) -> list[dict[str, Any]]:
        """Open windows for the UI and the runtime, ordered by key then start: bounds, element
        count, panes emitted and current values (since the last pane in discarding mode)."""
        out = []
        for kj in sorted(self.state.keys):
            ks = self.state.keys[kj]
            for wid in sorted(ks.windows):
                w = ks.windows[wid]
                row: dict[str, Any] = {
                    "key": ks.key,
                    "window_start": w.start,
                    "window_end": w.end,
                    "elements": w.elements,
                    "pending": w.pending,
                    "panes_emitted": w.emitted,
                    "values": self._values(w),
                }
                if self._bounds_out:
                    row["first_event_time"] = w.first_t
                    row["last_event_time"] = w.last_t
                out.append(row)
        return out

    def drain_late_counts(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per (key, window) since the last drain."""
        st = self.state
        rows = [
            {"key": v[0], "window_start": v[1], "window_end": v[2], "accepted": v[3],
             "dropped": v[4]}
            for _, v in sorted(st.late_deltas.items())
        ]
        st.late_deltas.clear()
        return rows

    def late_totals(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per key since the engine's state began."""
        return [
            {"key": ks.key, "accepted": ks.late_accepted, "dropped": ks.late_dropped}
            for kj, ks in sorted(self.state.keys.items())
            if ks.late_accepted or ks.late_dropped
        ]

    # ------------------------------------------------------------------ watermark

    def _wm(self, ks: KeyState) -> int:
        st = self.state
        if st.ended:
            return POS_INF
        v = ks.watermark if self._key_scope else st.watermark
        return NEG_INF if v is None else v

    def _raise_global_watermark(self, candidate: int, now: int) -> None:
        st = self.state
        if self._idle:
            if st.watermark is None or candidate > st.watermark:
                st.idle_base, st.idle_base_pt, st.watermark = candidate, now, candidate
        elif st.watermark is None or candidate > st.watermark:
            st.watermark = candidate

    def _raise_key_watermark(self, ks: KeyState, candidate: int, now: int) -> None:
        if self._idle:
            if ks.watermark is None or candidate > ks.watermark:
                ks.idle_base, ks.idle_base_pt, ks.watermark = candidate, now, candidate
        elif ks.watermark is None or candidate > ks.watermark:
            ks.watermark = candidate

    def _expired(self, close: int, wm: int) -> bool:
        return wm >= POS_INF or wm >= close + self._al

    # ------------------------------------------------------------------ assignment

    def _kj(self, key: Key) -> str:
        ck = (type(key), key)
        kj = self._kj_cache.get(ck)
        if kj is None:
            if len(self._kj_cache) > 100_000:
                self._kj_cache.clear()
            kj = self._kj_cache[ck] = key_json(key)
        return kj

    def _apply(
        self,
        ks: KeyState,
        kj: str,
        t: int,
        seq: int,
        vals: list[Any],
        wm0: int,
        idx: int,
        rec: dict[str, Any] | None,
        late: list[_Late],
    ) -> None:
        wt = self._wtype
        if wt == "session":
            self._apply_session(ks, kj, t, seq, vals, wm0, idx, rec, late)
            return
        if wt == "sliding":
            self._apply_sliding(ks, kj, t, seq, vals, wm0, idx, rec, late)
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
                self._drop(ks, kj, t, s0, e0, "before_watermark", idx, rec, late)
            return
        for s0, e0, close in bounds:
            wid = window_id(s0)
            w = ks.windows.get(wid)
            if w is None:
                if self._expired(close, wm0):
                    self._drop(ks, kj, t, s0, e0, "expired", idx, rec, late)
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
        rec: dict[str, Any] | None,
        late: list[_Late],
    ) -> None:
        gap = self._gap
        if self._event_basis and t < wm0:
            self._drop(ks, kj, t, t, t + gap, "before_watermark", idx, rec, late)
            return
        hits = [
            w for w in ks.windows.values()
            if w.first_t is not None and w.first_t < t + gap and t < w.close
        ]
        if not hits:
            close = t + gap
            if self._expired(close, wm0):
                self._drop(ks, kj, t, t, close, "expired", idx, rec, late)
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
        rec: dict[str, Any] | None,
        late: list[_Late],
    ) -> None:
        size = self._size
        recs = ks.records
        times = _Times(recs)
        item: list[Any] = [t, seq, vals]
        pos = bisect.bisect_right(recs, (t, seq), key=lambda r: (r[0], r[1]))
        recs.insert(pos, item)
        # records an expired window could only have come from are ignored (they may be gone)
        horizon = None if wm0 <= NEG_INF else wm0 - size - 2 - self._al
        starts = sliding_starts_containing(t, size, times, horizon)
        if self._event_basis and t < wm0:
            del recs[pos]
            for s in starts:
                self._drop(ks, kj, t, s, s + size, "before_watermark", idx, rec, late)
            return
        joined = False
        for s in starts:
            close = s + size + 1
            w = ks.windows.get(s)
            if w is None:
                if self._expired(close, wm0):
                    self._drop(ks, kj, t, s, s + size, "expired", idx, rec, late)
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

    def _new_window(self, kj: str, start: int | None, end: int | None, close: int,
                    born_late: bool) -> WindowState:
        """A new, empty window (the caller stores it under ``window_id(start)``)."""
        w = WindowState(
            start=start,
            end=end,
            close=close,
            accs=[aggregates.new(fn) for fn in self._fns],
            born_late=born_late,
        )
        if not self._key_scope:  # per-key watermarks: the key's own windows are scanned
            heapq.heappush(self._deadlines, (close, kj, window_id(start)))
        return w

    def _deadline(self, w: WindowState) -> int:
        """The watermark at which ``w`` next needs attention: its close, then its expiry."""
        return w.close + self._al if w.passed else w.close

    def _set_timer(self, kj: str, start: int | None, w: WindowState, due: int) -> None:
        w.timer = due
        heapq.heappush(self._timers, (due, kj, window_id(start)))

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
        rec: dict[str, Any] | None,
        late: list[_Late],
    ) -> None:
        late.append(
            (idx, start if start is not None else 0,
             LateRecord(key=ks.key, event_time=t, window_start=start, window_end=end,
                        reason=reason, record=rec))
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

    # ------------------------------------------------------------------ firing

    def _fire(self, scan: Iterable[KeyState]) -> list[Emission]:
        """Run windows through their triggers at the current watermark: every window of the
        keys in ``scan`` (they received records, or their own watermark moved) and, under a
        global watermark, every window whose deadline it has reached. Panes that fire
        together come out by window end, key JSON, window start."""
        st = self.state
        todo: dict[tuple[str, int], tuple[KeyState, WindowState]] = {}
        visited: dict[str, KeyState] = {}
        for ks in scan:
            kj = self._kj(ks.key)
            visited[kj] = ks
            for wid, w in ks.windows.items():
                todo[(kj, wid)] = (ks, w)
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
            if self._wtype == "sliding" and ks.records:
                self._prune_records(ks, self._wm(ks))
            if not ks.windows and not ks.records and not self._key_scope and not (
                ks.late_accepted or ks.late_dropped
            ):
                del st.keys[kj]
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
            if plan.on_time and not w.born_late:
                out = self._emit(ks, w, "ON_TIME", expired, wm)
                if expired:
                    del ks.windows[wid]
                return out
        if expired:
            if w.pending > 0:
                out = self._emit(ks, w, "ON_TIME" if plan.final else "LATE", True, wm)
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

    def _values(self, w: WindowState) -> dict[str, Any]:
        return {
            name: aggregates.result(fn, acc)
            for name, fn, acc in zip(self._names, self._fns, w.accs, strict=True)
        }

    def _emit(self, ks: KeyState, w: WindowState, timing: Timing, is_last: bool,
              wm: int) -> list[Emission]:
        """The pane ``w`` owes now, preceded (retracting mode) by the retractions it implies."""
        now = self.state.processing_time
        wm_out = None if wm <= NEG_INF or wm >= POS_INF else wm
        out: list[Emission] = []
        values = self._values(w)
        if self._retracting:
            olds = [*w.retract, *([w.last_pane] if w.last_pane is not None else [])]
            for old in olds:
                out.append(Pane(
                    key=ks.key, window_start=old["start"], window_end=old["end"],
                    timing=old["timing"], pane_index=old["pane_index"],
                    is_first=old["pane_index"] == 0, is_last=False, retraction=True,
                    values=old["values"], emitted_at=now, watermark=wm_out,
                    first_event_time=old["first_t"] if self._bounds_out else None,
                    last_event_time=old["last_t"] if self._bounds_out else None,
                ))
            w.retract = []
        out.append(Pane(
            key=ks.key, window_start=w.start, window_end=w.end, timing=timing,
            pane_index=w.emitted, is_first=w.emitted == 0, is_last=is_last, retraction=False,
            values=values, emitted_at=now, watermark=wm_out,
            first_event_time=w.first_t if self._bounds_out else None,
            last_event_time=w.last_t if self._bounds_out else None,
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
