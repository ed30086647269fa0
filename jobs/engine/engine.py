"""The windowing engine: windows, watermark, lateness, triggers and accumulation.

One ``Engine`` holds all keys of one stream partition. The host drives it with four calls —
``advance_processing_time``, ``ingest`` (one arrival unit), ``advance_watermark`` and
``end_of_input`` — and gets back the emissions in output order. Everything the engine knows
lives in :class:`~jobs.engine.state.EngineState`, so a host can snapshot it between calls and
resume a new engine from it.

The rules implemented here are those of ``docs/semantics.md`` (the model, the arrival model,
the order of panes that fire together, what ``emitted_at`` is, ...). Internally minus/plus infinite watermarks
are the sentinels ``NEG_INF``/``POS_INF`` so comparisons need no special cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jobs.engine.assign import Assigner
from jobs.engine.core import NEG_INF, POS_INF, LateEntry, WatermarkMode
from jobs.engine.errors import EngineError
from jobs.engine.firing import Firing
from jobs.engine.records import Emission, RecordBatch, plain_key
from jobs.engine.state import KeyState, WindowState

__all__ = ["NEG_INF", "POS_INF", "Engine", "WatermarkMode"]


class Engine(Assigner, Firing):
    """Runs one definition over arrival units of many keys; see module docstring."""

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
        """Apply one arrival unit (docs/semantics.md, "Arrival model").

        Within a key, records apply one at a time in arrival order: each is judged against
        the key's watermark as the key's earlier records left it (under ``scope: key`` they
        move it) and the key's count triggers run after each record. The global watermark
        (``scope: global``) is the one before the unit for every record; it advances from
        the unit's records once, at the end, and what it passes fires. Output: each record's
        late lines then the panes it fired, in arrival order; then the unit's closing panes.
        """
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
        base = st.seq
        st.seq += n
        keys = batch.keys
        groups: dict[Any, list[int]] = {}
        if all(type(k) is str for k in keys):
            # str keys only: the key itself identifies the group (no 1 / 1.0 / True clash)
            for i, k in enumerate(keys):
                g = groups.get(k)
                if g is None:
                    groups[k] = [i]
                else:
                    g.append(i)
            by_kj = {self._kj(k): idxs for k, idxs in groups.items()}
        else:
            by_kj = {}
            for i, k in enumerate(keys):
                by_kj.setdefault(self._kj(k), []).append(i)
        self._records = batch.records  # read only for dropped records (may be lazy)
        late: list[LateEntry] = []
        # (arrival index, emissions) of records that fired something on their own
        per_record: list[tuple[int, list[Emission]]] = []
        touched: dict[str, tuple[KeyState, int]] = {}
        fixed = self._kind.fixed_by_arithmetic
        step = self._per_record_firing
        # windows that received records (global watermark, fixed windows): the only ones of
        # the touched keys that the closing firing needs to run
        added: dict[tuple[str, int], tuple[KeyState, WindowState]] | None = (
            {} if fixed and not self._key_scope else None
        )
        inputs: list[Sequence[Any]] = []
        if fixed:
            inputs = [[1] * n if c is None else c for c in cols]
            self._fixed_spans(times)
        for kj, idxs in by_kj.items():
            ks = st.keys.get(kj)
            if ks is None:
                ks = st.keys[kj] = KeyState(key=plain_key(keys[idxs[0]]))
            if fixed and not step:
                # fixed windows, nothing fires between records: applying the key's records
                # together is applying them one at a time
                kmax = self._apply_fixed_many(ks, kj, idxs, times, inputs, base,
                                              self._wm(ks), late, added)
            else:
                kmax = NEG_INF
                for i in idxs:
                    if kj not in st.keys:  # forgotten by a firing: it comes back as new
                        ks = st.keys[kj] = KeyState(key=plain_key(keys[i]))
                    mine: list[LateEntry] = late if not step else []
                    wins: dict[tuple[str, int], tuple[KeyState, WindowState]] | None = (
                        {} if added is not None else None
                    )
                    wm = self._wm(ks)
                    if fixed:
                        t = self._apply_fixed_many(ks, kj, [i], times, inputs, base, wm,
                                                   mine, wins)
                    else:
                        t = times[i]
                        item = (t, base + i, [1 if c is None else c[i] for c in cols], i)
                        self._apply_key(ks, kj, [item], wm, mine)
                    if wins is not None and added is not None:
                        added.update(wins)
                    kmax = max(kmax, t)
                    if ks.max_event_time is None or t > ks.max_event_time:
                        ks.max_event_time = t
                    if not step:
                        continue
                    # the record's own panes (count triggers) at the watermark it met, then
                    # (scope: key) what the key's watermark passes as the record moves it
                    fired = self._fire([ks], wins)
                    if self._key_scope:
                        before = ks.watermark
                        self._raise_key_watermark(ks, t - self._delay, now)
                        if ks.watermark != before:
                            fired += self._fire([ks])
                    if mine or fired:
                        mine.sort(key=lambda x: x[1])
                        per_record.append((i, [x[2] for x in mine] + fired))
            if ks.max_event_time is None or kmax > ks.max_event_time:
                ks.max_event_time = kmax
            touched[kj] = (ks, kmax)
        self._records = None
        bmax = max(k for _, k in touched.values())
        if st.max_event_time is None or bmax > st.max_event_time:
            st.max_event_time = bmax
        if step:
            per_record.sort(key=lambda x: x[0])
            for _, em in per_record:
                out.extend(em)
        else:
            late.sort(key=lambda x: (x[0], x[1]))
            out.extend(x[2] for x in late)
        if self._bounded and not self._key_scope:
            self._raise_global_watermark(bmax - self._delay, now)
        scan = [ks for kj, (ks, _) in touched.items() if st.keys.get(kj) is ks]
        out.extend(self._fire(scan, added))
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
        if self._idle:  # external host, idle advance: a candidate ahead of wm becomes the base
            st.idle_base, st.idle_base_pt = wm_ms, st.processing_time
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
        """Accepted-late and dropped counts per key since the engine's state began (a key with
        late counts is remembered even when it holds no window)."""
        return [
            {"key": ks.key, "accepted": ks.late_accepted, "dropped": ks.late_dropped}
            for kj, ks in sorted(self.state.keys.items())
            if ks.late_accepted or ks.late_dropped
        ]
