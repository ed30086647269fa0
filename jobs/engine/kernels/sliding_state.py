"""The sliding kernel engine's state in the general engine's format: building an
:class:`~jobs.engine.state.EngineState` from the arrays (snapshots), loading one into them
(replay snapshots, Spark state blobs), and what the arrays cannot hold (then the engine hands
over to the general engine)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from jobs.engine.engine import Engine
from jobs.engine.kernels.handover import KernelState
from jobs.engine.kernels.sliding_arrays import (
    BY_REF,
    EXACT_INT,
    NO_TIME,
    TIME_LIMIT,
    SlidingArrays,
)
from jobs.engine.kernels.sliding_side import SIDE_FNS, side_accs, window_ranges
from jobs.engine.state import EngineState, KeyState, WindowState
from jobs.engine.vectorized.aggregates import object_array


class SlidingState(SlidingArrays):
    """State conversion of the sliding kernel engine."""

    def _record_vals(self, x: int) -> list[Any]:
        """Held record ``x``'s inputs as the general engine holds them."""
        out: list[Any] = []
        for j, (fn, star) in enumerate(zip(self._fns, self._star, strict=True)):
            if star:
                out.append(1)
            elif fn in BY_REF:
                out.append(self.objs[int(self.rref[j, x])])
            elif not self.rvalid[j, x]:
                out.append(None)
            elif self.risf[j, x]:
                out.append(float(self.rvf[j, x]))
            else:
                out.append(int(self.rvi[j, x]))
        return out

    def _side_ranges(self, slots: Any) -> tuple[Any, Any]:
        """Each window's held records ``[a, b)`` (:mod:`.sliding_side`)."""
        return window_ranges(slots, self.wstart, self.wkey, self.kstart, self.kend, self.rt,
                             self._size)

    def _side_accs(self, slots: Any) -> dict[int, list[Any]]:
        """The ``collect`` / ``count_distinct`` accumulators of the windows in ``slots``, by
        aggregation index."""
        js = [j for j, fn in enumerate(self._fns) if fn in SIDE_FNS]
        if not js:
            return {}
        a, b = self._side_ranges(slots)
        return {j: side_accs(self._fns[j], a, b, self.rvalid[j], self.rref[j], self.rt,
                             self.rseq, self.objs, self.distinct.tokens, self.rvi[j])
                for j in js}

    def _accs(self, vals: tuple[Any, ...], q: int, side: dict[int, list[Any]]) -> list[Any]:
        """Window ``q``'s accumulators (of ``_window_values`` and ``_side_accs``) as the
        general engine's."""
        _, _, _, cnt, osum, ofs, oisf, has, ot, oseq, oidx = vals
        out: list[Any] = []
        for j, fn in enumerate(self._fns):
            s: Any = float(ofs[j, q]) if oisf[j, q] else int(osum[j, q])
            if j in side:
                out.append(side[j][q])
            elif fn == "count":
                out.append(int(cnt[j, q]))
            elif fn == "sum":
                out.append(s)
            elif fn == "mean":
                out.append([s, int(cnt[j, q])])
            elif not has[j, q]:
                out.append(None)
            elif fn in ("first", "last"):
                out.append([int(ot[j, q]), int(oseq[j, q]),
                            self.objs[int(self.rref[j, int(oidx[j, q])])]])
            else:
                out.append(s)
        return out

    def to_engine_state(self) -> EngineState:
        """This state as the general engine's :class:`EngineState` (equal to the one the
        general engine would hold after the same calls)."""
        if self.general is not None:
            return self.general.state
        st = EngineState(
            processing_time=self.processing_time, watermark=self.wm, ended=self.ended,
            idle_base=self.idle_base, idle_base_pt=self.idle_base_pt,
            max_event_time=self.max_t, seq=self.seq, late_deltas=self._late_deltas(),
        )
        nrec = self.kend - self.kstart
        present = np.flatnonzero((self.key_nwin > 0) | (nrec > 0) | (self.late_acc > 0)
                                 | (self.late_drop > 0) | (self.key_wm != NO_TIME))
        kjs = self.keys.json_array()
        slots = np.flatnonzero(self.used)
        slots = slots[np.argsort(self.wborn[slots], kind="stable")]
        vals = self._window_values(slots)
        side = self._side_accs(slots)
        first_t, last_t, elements = (v.tolist() for v in vals[:3])
        by_key: dict[int, list[int]] = {}
        for q, w in enumerate(slots.tolist()):
            by_key.setdefault(int(self.wkey[w]), []).append(q)
        size = self._size
        for c in present.tolist():
            mt = int(self.key_max_t[c])
            ks = KeyState(
                key=self.keys.values[c], max_event_time=None if mt == NO_TIME else mt,
                late_accepted=int(self.late_acc[c]), late_dropped=int(self.late_drop[c]),
                watermark=_opt(self.key_wm[c]), idle_base=_opt(self.key_ib[c]),
                idle_base_pt=_opt(self.key_ibpt[c]),
                records=[[int(self.rt[x]), int(self.rseq[x]), self._record_vals(x)]
                         for x in range(int(self.kstart[c]), int(self.kend[c]))],
            )
            for q in by_key.get(c, []):
                w = int(slots[q])
                s = int(self.wstart[w])
                ks.windows[s] = WindowState(
                    start=s, end=s + size, close=s + size + 1, accs=self._accs(vals, q, side),
                    first_t=first_t[q], last_t=last_t[q], elements=elements[q],
                    pending=elements[q], emitted=0, passed=bool(self.wpassed[w]),
                    born_late=bool(self.wblate[w]),
                )
            st.keys[str(kjs[c])] = ks
        return st

    def _load(self, state: Any) -> None:
        """Start from a general-engine state or snapshot (the format both engines write);
        one the arrays cannot hold keeps running on the general engine."""
        if isinstance(state, SlidingKernelState):
            state = state.snapshot()
        st = state if isinstance(state, EngineState) else EngineState.restore(state)
        why = self._cannot_hold(st)
        if why is None:
            why = self._load_arrays(st)
        if why is not None:
            self._reset()
            self.handed_over_because = why
            self.general = Engine(self.defn, state=st, watermark=self.mode)

    def _load_arrays(self, st: EngineState) -> str | None:
        """Fill the arrays from ``st`` (checked by ``_cannot_hold``); returns why the result is
        not ``st`` exactly (a window whose float inputs were added in an order the held
        records do not show), or None."""
        self.wm, self.ended = st.watermark, st.ended
        self.idle_base, self.idle_base_pt = st.idle_base, st.idle_base_pt
        self.processing_time, self.max_t, self.seq = st.processing_time, st.max_event_time, st.seq
        kss = list(st.keys.values())
        codes = (self.keys.encode([ks.key for ks in kss]) if kss
                 else np.zeros(0, dtype=np.int64))
        self._grow_keys()
        m = len(self._names)
        times: list[int] = []
        seqs: list[int] = []
        rvals: list[list[Any]] = []
        order = sorted(range(len(kss)), key=lambda i: int(codes[i]))
        for i in order:
            ks, c = kss[i], int(codes[i])
            self.late_acc[c] = ks.late_accepted
            self.late_drop[c] = ks.late_dropped
            self.key_max_t[c] = NO_TIME if ks.max_event_time is None else ks.max_event_time
            for arr, v in ((self.key_wm, ks.watermark), (self.key_ib, ks.idle_base),
                           (self.key_ibpt, ks.idle_base_pt)):
                arr[c] = NO_TIME if v is None else v
            self.kstart[c] = len(times)
            for rec in ks.records:
                times.append(rec[0])
                seqs.append(rec[1])
                rvals.append(rec[2])
            self.kend[c] = len(times)
        r = len(times)
        self.rt = np.array(times, dtype=np.int64)
        self.rseq = np.array(seqs, dtype=np.int64)
        self.rvalid = np.ones((m, r), dtype=np.bool_)
        self.rvi = np.zeros((m, r), dtype=np.int64)
        self.rvf = np.zeros((m, r), dtype=np.float64)
        self.risf = np.zeros((m, r), dtype=np.bool_)
        self.rref = np.full((m, r), -1, dtype=np.int64)
        for j, (fn, star) in enumerate(zip(self._fns, self._star, strict=True)):
            if star:
                continue
            col = [v[j] for v in rvals]
            if fn in BY_REF:
                self.rvalid[j] = [v is not None for v in col]
                self.rref[j] = np.arange(len(self.objs), len(self.objs) + r)
                self.objs.extend(col)
                if fn == "count_distinct" and r:
                    ok = self.rvalid[j]
                    self.rvi[j, ok] = self.distinct.encode(object_array(col)[ok])
                continue
            for x, v in enumerate(col):
                if v is None:
                    self.rvalid[j, x] = False
                elif type(v) is float:
                    self.risf[j, x] = True
                    self.rvf[j, x] = v
                else:
                    self.rvi[j, x] = v
                    self.rvf[j, x] = float(v)
        self._prefix()
        self.held_abs = self._held_abs()
        code_of = {id(ks): int(c) for ks, c in zip(kss, codes.tolist(), strict=True)}
        wins = [(ks, w) for ks in kss for w in ks.windows.values()]
        self._ensure_slots(len(wins))
        slots = []
        for ks, w in wins:
            self.n_free -= 1
            slot = int(self.free[self.n_free])
            slots.append(slot)
            c = code_of[id(ks)]
            assert w.start is not None
            self.used[slot] = True
            self.wkey[slot] = c
            self.wstart[slot] = w.start
            self.wcseq[slot] = st.seq - 1
            self.wblate[slot] = w.born_late
            self.wpassed[slot] = w.passed
            self.wborn[slot] = self.born_next
            self.born_next += 1
            self.key_nwin[c] += 1
        if slots:
            sl = np.array(slots, dtype=np.int64)
            passed = self.wpassed[sl]
            close = self.wstart[sl] + (self._size + 1)
            if not self._key_scope:  # per-key watermarks scan the keys' windows instead
                self._add_due(sl[~passed], close[~passed], passed=False)
                self._add_due(sl[passed], close[passed] + self._al, passed=True)
        if st.late_deltas:
            kj_code = {str(k): c for c, k in enumerate(self.keys.json_array().tolist())}
            rows = list(st.late_deltas.items())
            self.late_chunks = [(
                np.array([kj_code[dk.rsplit("|", 2)[0]] for dk, _ in rows], dtype=np.int64),
                np.array([v[1] for _, v in rows], dtype=np.int64),
                np.array([v[3] for _, v in rows], dtype=np.int64),
                np.array([v[4] for _, v in rows], dtype=np.int64),
            )]
        if slots:
            sl = np.array(slots, dtype=np.int64)
            vals = self._window_values(sl)
            side = self._side_accs(sl)
            first_t, last_t, elements = (v.tolist() for v in vals[:3])
            for q, (ks, w) in enumerate(wins):
                mine = (self._accs(vals, q, side), first_t[q], last_t[q], elements[q])
                theirs = (w.accs, w.first_t, w.last_t, w.elements)
                if _canon(mine) != _canon(theirs):
                    return (f"state: key {ks.key!r} window {w.start} holds values its held "
                            "records do not give in their order (float inputs out of order)")
        return None

    def _cannot_hold(self, st: EngineState) -> str | None:
        """Why the arrays cannot hold ``st`` exactly (None when they can)."""
        # a base is an event time (|t| <= 2**60) minus a delay (<= 2**62): the bound holds
        # every base this engine sets itself
        if not all(v is None or type(v) is int and abs(v) <= 2**62 + 2**61
                   for v in (st.idle_base, st.idle_base_pt)):
            return "state: an idle-advance base beyond 2**62 + 2**61"
        size = self._size
        for kj, ks in st.keys.items():
            marks = (ks.watermark, ks.idle_base, ks.idle_base_pt)
            if any(v is not None for v in marks) and not self._key_scope:
                return f"state: key {kj} holds a key watermark"
            if not all(v is None or (type(v) is int and abs(v) <= 2**62 + 2**61) for v in marks):
                return f"state: key {kj} holds a watermark or idle base beyond 2**62 + 2**61"
            prev: tuple[int, int] | None = None
            for r in ks.records:
                if (not isinstance(r, list) or len(r) != 3 or type(r[0]) is not int
                        or type(r[1]) is not int or abs(r[0]) > TIME_LIMIT
                        or not isinstance(r[2], list) or len(r[2]) != len(self._fns)):
                    return f"state: key {kj} holds a record the arrays cannot hold"
                if prev is not None and (r[0], r[1]) < prev:
                    return f"state: key {kj} holds records out of order"
                prev = (r[0], r[1])
                for fn, star, v in zip(self._fns, self._star, r[2], strict=True):
                    if star or fn in BY_REF:
                        continue
                    if not (v is None or (type(v) is int and abs(v) <= EXACT_INT)
                            or (type(v) is float and v == v)):
                        return f"state: key {kj} holds a {fn} input beyond the arrays"
            for w in ks.windows.values():
                if (w.emitted or w.timer is not None or w.retract or w.last_pane is not None
                        or w.start is None or w.end != w.start + size
                        or w.close != w.start + size + 1 or w.pending != w.elements
                        or abs(w.start) > TIME_LIMIT):
                    return f"state: key {kj} holds a window of another kind"
        return None


def _opt(v: Any) -> int | None:
    return None if v == NO_TIME else int(v)


def _canon(x: Any) -> str:
    """Exact identity of accumulator data (1 vs 1.0, -0.0 vs 0.0 differ; a distinct set's
    tokens in any order)."""
    return json.dumps(x, default=repr, sort_keys=True)


class SlidingKernelState(KernelState):
    """The sliding kernel engine's state: a live view whose ``snapshot()`` is the general
    engine's snapshot of the same state."""
