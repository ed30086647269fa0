"""SessionKernelEngine: the general engine's API and output for session windows, on array
state driven by compiled kernels (:mod:`._session_kernels`, :mod:`._session_trigger_kernels`).

For a qualifying definition (:func:`jobs.engine.kernels.qualify.qualifies`) what makes the
kernels exact is that under a global watermark nothing but a record's own count trigger
fires between the records of an arrival unit: one compiled pass applies the unit's records in
arrival order (joins, out-of-order merges, drops, and with triggers each record's EARLY or
LATE pane), the watermark advances once, and a second pass fires the sessions it reaches
(``emit: final``: one pane per session, at its expiry; otherwise :mod:`.session_triggers`).
Under per-key watermarks a record's move of its key's watermark fires that key's sessions
right after the record, in the same pass (:mod:`._session_key_kernels`, and
:mod:`.session_key_triggers` for sessions that fire more than once).
Python work per unit: encoding the keys and value columns, one object per late record and
one ``Pane`` (plus its retractions) per fired pane.

State: the arrays of :mod:`.session_arrays`. Its snapshot *is* the general engine's
(:mod:`.session_state`), so a store written by either engine loads in the other; a state the
arrays cannot hold (or an input batch they cannot: non-numeric values, ints beyond 2**53,
times beyond 2**60) hands over to the general engine for good, as the vectorized engine does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from jobs.definition.errors import DefinitionError
from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import Session, kind_class, window_kind
from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _session_kernels as K
from jobs.engine.kernels import _session_key_kernels as KK
from jobs.engine.kernels.handover import HandsOver
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.kernels.session_arrays import (
    AGG_KINDS,
    I64,
    NO_TIME,
    TIME_LIMIT,
    WatermarkMode,
)
from jobs.engine.kernels.session_key_triggers import KeyTriggeredSessions
from jobs.engine.kernels.session_state import (
    SessionKernelState,
    cannot_hold,
    load_state,
    to_engine_state,
)
from jobs.engine.records import Emission, RecordBatch, make_pane
from jobs.engine.state import EngineState
from jobs.engine.vectorized.values import Unsupported

__all__ = ["SessionKernelEngine", "SessionKernelState"]



class SessionKernelEngine(KeyTriggeredSessions, HandsOver):
    """Same API and observable output as :class:`jobs.engine.Engine` for qualifying session
    definitions (see the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        try:  # the general engine's check of a window built in code (a gap of 0 ms)
            window_kind(defn.window)
        except DefinitionError as exc:
            raise EngineError(str(exc)) from None
        problems = qualification_problems(defn)
        if problems or kind_class(defn.window.type) is not Session:
            raise EngineError("session kernel engine: " + "; ".join(
                problems or [f"window.type: {defn.window.type} is not session"]))
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        self.defn = defn
        self.mode: WatermarkMode = watermark
        wmd = defn.watermark
        self._gap = int(defn.window.gap or 0)
        self._al = int(defn.allowed_lateness)
        self._delay = wmd.delay
        self._event_basis = defn.lateness_basis == "event"
        self._clock = defn.uses_processing_time
        """The processing clock: a record's event time is its unit's processing time, and
        (internal mode) the watermark is processing time itself."""
        self._bounded = (watermark == "internal" and wmd.strategy == "bounded"
                         and not self._clock)
        self._source = wmd.strategy == "source"
        self._key_scope = self._bounded and wmd.scope == "key"
        self._idle = wmd.strategy == "bounded" and wmd.idle_advance and not self._clock
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._kinds = np.array([AGG_KINDS[fn] for fn in self._fns], dtype=np.int64)
        plan = effective_trigger(defn)
        self._triggered = plan.emit != "final"
        self._early_count = (plan.early.count or 1) if (
            plan.early is not None and plan.early.kind == "count") else 0
        self._late_count = (plan.late.count or 1) if (
            plan.late is not None and plan.late.kind == "count") else 0
        self._at_window_end, self._at_expiry = plan.at_window_end, plan.at_expiry
        self._early_part = plan.early
        self._late_part = plan.late
        self._timed = plan.needs_clock
        self._step = plan.fires_on_count
        self._discarding = defn.accumulation == "discarding"
        self._retracting = defn.accumulation == "retracting"
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine (see ``_hand_over``)."""
        self.handed_over_because: str | None = None
        self._reset()
        if state is not None:
            self._load(state)

    # ------------------------------------------------------------------ public API

    @property
    def state(self) -> SessionKernelState | EngineState:
        """``.snapshot()`` gives the general engine's snapshot data of this state."""
        if self.general is not None:
            return self.general.state
        return SessionKernelState(self)

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit (:meth:`jobs.engine.Engine.ingest`): each record's late line (or,
        with count triggers, the panes it fired) in arrival order, then the panes the unit's
        watermark advance fires."""
        if self.general is not None:
            return self.general.ingest(batch)
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        ticked: list[Emission] = []
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            ticked = self.advance_processing_time(batch.processing_time)
        n = len(batch)
        if n == 0:
            return ticked
        if ticked:
            return ticked + self.ingest(batch)
        if self._clock:  # every record arrives, and happens, at the unit's processing time
            batch = replace(batch, event_times=np.full(n, self.processing_time, dtype=np.int64))
        try:
            valid, vf, vi, visf, vref, budget = self._columns(batch, n)
            times = batch.event_times
            if int(times.min()) < -TIME_LIMIT or int(times.max()) > TIME_LIMIT:
                raise Unsupported(f"event times beyond +-2**60 ms (key {batch.keys[0]!r})")
        except Unsupported as exc:
            return self._hand_over(batch, str(exc))
        self.int_budget += budget
        codes = self.keys.encode(batch.keys)
        self._grow_keys()
        self._ensure_slots(n)
        self._ensure_heap(n)
        if self._triggered and self._key_scope:
            return self._ingest_keys_triggered(batch, codes, valid, vf, vi, visf, vref)
        if self._triggered:
            fired = self._ingest_triggered(batch, codes, valid, vf, vi, visf, vref)
            return self._after_unit(codes, times, fired)
        status = np.empty(n, dtype=np.int8)
        out_start = np.empty(n, dtype=np.int64)
        out_end = np.empty(n, dtype=np.int64)
        if self._key_scope:
            return self._ingest_keys(batch, codes, times, valid, vf, vi, visf, vref, status,
                                     out_start, out_end)
        wm0 = self._wm_arg()
        self.n_free, self.born_next, self.hn = K.ingest_unit(
            codes, times, self.seq, valid, vf, vi, visf, vref, self._kinds,
            wm0, self.wm is not None, self._event_basis, self._gap, self._al,
            self.key_head, self.nxt, self.wkey, self.first, self.last, self.elements,
            self.born, self.blate, self.used, self.free, self.n_free, self.born_next,
            self.cnt, self.isum, self.fsum, self.isf, self.ei, self.ef, self.eisf, self.has,
            self.ot, self.oseq, self.oref, status, out_start, out_end, self.key_nwin,
            self.hexp, self.hslot, self.hborn, self.hn,
        )
        if self.side:
            self._side_accept(codes, times, self.seq, valid,
                              (status == K.JOINED) | (status == K.ACCEPTED_LATE))
        self.seq += n
        out: list[Emission] = self._late(batch, codes, status, out_start, out_end)
        return self._after_unit(codes, times, out)

    def _ingest_keys(self, batch: RecordBatch, codes: I64, times: I64, valid: Any, vf: Any,
                     vi: I64, visf: Any, vref: I64, status: Any, out_start: I64,
                     out_end: I64) -> list[Emission]:
        """``watermark.scope: key`` (``emit: final``): per record in arrival order, its late
        line, then the sessions its move of the key's watermark expires (by window end,
        start), each pane showing that watermark."""
        n = len(times)
        fired = np.empty(max(self._cap, 1), dtype=np.int64)
        fired_rec = np.empty(len(fired), dtype=np.int64)
        self.n_free, self.born_next, self.hn, m = KK.ingest_unit_keys(
            codes, times, self.seq, valid, vf, vi, visf, vref, self._kinds,
            self._delay, self._idle, self.processing_time, self.key_wm, self.key_ib,
            self.key_ibpt, NO_TIME, self._event_basis, self._gap, self._al,
            self.key_head, self.nxt, self.wkey, self.first, self.last, self.elements,
            self.born, self.blate, self.used, self.free, self.n_free, self.born_next,
            self.cnt, self.isum, self.fsum, self.isf, self.ei, self.ef, self.eisf, self.has,
            self.ot, self.oseq, self.oref, status, out_start, out_end, self.key_nwin,
            self.hexp, self.hslot, self.hborn, self.hn, fired, fired_rec,
        )
        if self.side:
            self._side_accept(codes, times, self.seq, valid,
                              (status == K.JOINED) | (status == K.ACCEPTED_LATE))
        self.seq += n
        late = self._late(batch, codes, status, out_start, out_end)
        slots, recs = fired[:m], fired_rec[:m]
        order = np.lexsort((self.first[slots], self.last[slots], recs))
        slots, recs = slots[order], recs[order]
        # the key's watermark the firing record raised (it may have moved on since)
        panes = self._final_panes(slots, times[recs] - self._delay, self.seq - n + recs)
        dropped = np.flatnonzero((status == K.DROPPED_BEFORE_WM)
                                 | (status == K.DROPPED_EXPIRED)).tolist()
        out: list[Emission] = []
        i = 0
        for r, pane in zip(recs.tolist(), panes, strict=True):
            while i < len(dropped) and dropped[i] <= r:
                out.append(late[i])
                i += 1
            out.append(pane)
        out.extend(late[i:])
        np.maximum.at(self.key_max_t, codes, times)
        tmax = int(times.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        self._compact_heap()
        if len(self.objs) > 65536:
            self._compact_objs()
        return out

    def _compact_heap(self) -> None:
        """Per-key firing leaves the expiry heap's entries of fired sessions behind (the heap
        only serves the end of input there): rebuild it from the open sessions when they are
        less than half of it."""
        slots = np.flatnonzero(self.used)
        if self.hn <= 2 * len(slots) + 1024:
            return
        exp = self.last[slots] + self._gap + self._al
        order = np.argsort(exp, kind="stable")  # a sorted array is a heap
        self.hn = len(slots)
        self.hexp[: self.hn] = exp[order]
        self.hslot[: self.hn] = slots[order]
        self.hborn[: self.hn] = self.born[slots][order]

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """Move processing time to ``now_ms`` (never back), fire the timers due by then, then
        (idle advance) move the watermark from its base and fire what it expires."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if self.ended or now_ms <= self.processing_time:
            return []
        self.processing_time = now_ms
        out = [] if now_ms < self.timer_floor else self._fire_timers(now_ms)
        if self._clock and self.mode == "internal" and (self.wm is None or now_ms > self.wm):
            self.wm = now_ms  # the processing clock is the watermark
            out.extend(self._fire(None))
        if not self._idle:
            return out
        if self._key_scope and self._triggered:
            out.extend(self._idle_keys_triggered(now_ms))
        elif self._key_scope:
            moved = np.flatnonzero(self.key_ib != NO_TIME)
            self.key_wm[moved] = self.key_ib[moved] + (now_ms - self.key_ibpt[moved])
            slots, self.n_free = KK.expire_keys(
                moved, self.key_wm, self._gap, self._al, self.key_head, self.nxt, self.used,
                self.last, self.key_nwin, self.free, self.n_free, max(self._cap, 1))
            k = self.wkey[slots]
            order = np.lexsort((self.first[slots], self.keys.json_rank()[k],
                                self.last[slots]))
            slots = slots[order]
            out.extend(self._final_panes(slots, self.key_wm[self.wkey[slots]]))
        elif self.idle_base is not None and self.idle_base_pt is not None:
            self.wm = self.idle_base + (now_ms - self.idle_base_pt)
            out.extend(self._fire(None))
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """:meth:`jobs.engine.Engine.advance_watermark`; with idle advance the watermark the
        host hands in is also the base the watermark moves on from."""
        if (self.general is None and self._idle and not self.ended
                and (self._source or self.mode == "external")
                and (self.wm is None or wm_ms > self.wm)):
            self.idle_base, self.idle_base_pt = int(wm_ms), self.processing_time
        return super().advance_watermark(wm_ms)

    def _after_unit(self, codes: I64, times: I64, out: list[Emission]) -> list[Emission]:
        """Max event times, the watermark advance, and the panes it fires."""
        np.maximum.at(self.key_max_t, codes, times)
        tmax = int(times.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self._bounded:
            cand = tmax - self._delay
            if self.wm is None or cand > self.wm:
                self.wm = cand
                if self._idle:
                    self.idle_base, self.idle_base_pt = cand, self.processing_time
        out.extend(self._fire(codes))
        return out

    def _fire_watermark(self) -> list[Emission]:
        return self._fire(None)

    def _fire_all(self) -> list[Emission]:
        return self._fire(None)

    def open_windows(self) -> list[dict[str, Any]]:
        """Open sessions as :meth:`jobs.engine.Engine.open_windows` reports them."""
        if self.general is not None:
            return self.general.open_windows()
        slots = np.flatnonzero(self.used)
        if len(slots) == 0:
            return []
        kjs = self.keys.json_array()
        k = self.wkey[slots]
        order = sorted(range(len(slots)), key=lambda i: (kjs[k[i]], int(self.first[slots[i]])))
        slots = slots[order]
        values = self._values(slots)
        out = []
        for i, w in enumerate(slots.tolist()):
            first, last, n = int(self.first[w]), int(self.last[w]), int(self.elements[w])
            pending, emitted = (int(self.pending[w]), int(self.emitted[w])) if (
                self._triggered) else (n, 0)
            out.append({
                "key": self.keys.values[int(self.wkey[w])], "window_start": first,
                "window_end": last + self._gap, "elements": n, "pending": pending,
                "panes_emitted": emitted, "values": values[i], "first_event_time": first,
                "last_event_time": last,
            })
        return out

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

    def _fire(self, touched: I64 | None) -> list[Emission]:
        """Emit and free every session the watermark expires (all of them at the end), by
        window end, key JSON, window start; then forget the per-key data of keys left with
        no session and no late counts, as the general engine forgets such keys."""
        if self._triggered and self._key_scope:
            if not self.ended:  # a key's own watermark fired its windows as it moved
                return []
            self._rebuild_key_heap()
        if self._triggered:
            return self._fire_triggered(touched)
        if self.wm is None and not self.ended:
            return []
        wm = self._wm_arg()
        slots, self.n_free, self.hn = K.expired_slots(
            wm, self.ended, self.used, self.born, self.wkey, self.key_head, self.nxt,
            self.key_nwin, self.free, self.n_free, self.hexp, self.hslot, self.hborn, self.hn,
        )
        panes: list[Emission] = []
        if len(slots):
            k = self.wkey[slots]
            s = self.first[slots]
            last = self.last[slots]
            e = last + self._gap
            order = np.lexsort((s, self.keys.json_rank()[k], e))
            slots, k = slots[order], k[order]
            panes = self._final_panes(slots, None)
            touched = k if touched is None else np.concatenate([touched, k])
        if not self._key_scope:  # a key holding its own watermark is never forgotten
            self._forget_idle_keys(touched)
        if len(self.objs) > 65536:
            self._compact_objs()
        return panes

    def _final_panes(self, slots: I64, wms: I64 | None,
                     bound: I64 | None = None) -> list[Emission]:
        """The final pane of each expired session in ``slots`` (in that order), showing the
        watermark in ``wms`` (one per slot; None: the global one); ``bound``: the arrival
        number of the record that expired each (a later record of the unit may open a
        session of its key over the same times)."""
        if len(slots) == 0:
            return []
        k = self.wkey[slots]
        s = self.first[slots]
        last = self.last[slots]
        values = self._values(slots, expired=True) if bound is None else self._values(
            slots, panes=(k, s, last, bound), once=True)
        now = self.processing_time
        kv = self.keys.values
        gwm = None if self.ended else self.wm
        wl: list[int | None] = [gwm] * len(slots) if wms is None or self.ended else wms.tolist()
        return [
            make_pane(kv[c], st, la + self._gap, "ON_TIME", 0, True, True, False, v, now, w,
                      st, la)
            for c, st, la, v, w in zip(k.tolist(), s.tolist(), last.tolist(), values, wl,
                                       strict=True)
        ]

    def _hand_over(self, batch: RecordBatch, why: str) -> list[Emission]:
        """Convert the state to the general engine's and let it run from now on (this batch
        included): exactness over speed for input the arrays cannot hold."""
        self.handed_over_because = why
        self.general = Engine(self.defn, state=self.to_engine_state(), watermark=self.mode)
        return self.general.ingest(batch)


    # ------------------------------------------------------------------ state conversion

    def to_engine_state(self) -> EngineState:
        """This state as the general engine's :class:`EngineState` (equal to the one the
        general engine would hold after the same calls)."""
        if self.general is not None:
            return self.general.state
        return to_engine_state(self)

    def _load(self, state: Any) -> None:
        """Start from a general-engine state or snapshot (the format both engines write);
        one the arrays cannot hold keeps running on the general engine."""
        if isinstance(state, SessionKernelState):
            state = state.snapshot()
        st = state if isinstance(state, EngineState) else EngineState.restore(state)
        why = cannot_hold(self, st)
        if why is not None:
            self.handed_over_because = why
            self.general = Engine(self.defn, state=st, watermark=self.mode)
            return
        load_state(self, st)
