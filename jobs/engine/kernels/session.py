"""SessionKernelEngine: the general engine's API and output for session windows with
``emit: final``, on array state driven by compiled kernels (:mod:`._session_kernels`).

For a qualifying definition (:func:`jobs.engine.kernels.qualify.qualifies`) a session emits
one pane, at its expiry, holding every record accepted into it; what makes that exact to
compute in a kernel is that nothing fires between the records of an arrival unit (global
watermark, no count triggers): one compiled pass applies the unit's records in arrival order
(joins, out-of-order merges, drops), the watermark advances once, and a second pass frees the
windows it expires. Python work per unit: encoding the keys and value columns, one object
per late record and one ``Pane`` per fired window.

State: a struct of arrays indexed by window slot (see :class:`SessionKernelEngine`), per-key
arrays indexed by the key's code in a :class:`~jobs.engine.vectorized.keys.KeyTable`. Its
snapshot *is* the general engine's (:meth:`SessionKernelEngine.to_engine_state`), so a store
written by either engine loads in the other; a state the arrays cannot hold (or an input
batch they cannot: non-numeric values, ints beyond 2**53, times beyond 2**60) hands over to
the general engine for good, as the vectorized engine does.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _session_kernels as K
from jobs.engine.kernels.qualify import qualification_problems
from jobs.engine.late_rows import drain_window_rows
from jobs.engine.records import Emission, LateReason, LateRecord, RecordBatch, make_pane
from jobs.engine.state import EngineState, KeyState, WindowState
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.values import Unsupported, null_mask, numeric_column

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]

AGG_KINDS = {"count": K.COUNT, "sum": K.SUM, "mean": K.SUM, "min": K.MIN, "max": K.MAX,
             "first": K.FIRST, "last": K.LAST}
ORDERED = ("first", "last")
"""Aggregates whose value is any input object: the arrays hold its order (event time, arrival
sequence) and a reference into the engine's value list."""
EXACT_INT = 2**53
"""Inputs of sum/mean/min/max are held as int64 and float64: ints up to this compare with
floats exactly."""
TIME_LIMIT = 2**60
"""Event times and gaps the kernels take (their sums with the allowed lateness fit int64)."""
WM_CLAMP = (-(2**62), 2**62 + 2**61)
"""A watermark outside this range compares with every window bound as its end does."""
NO_TIME = np.iinfo(np.int64).min


class SessionKernelEngine:
    """Same API and observable output as :class:`jobs.engine.Engine` for qualifying session
    definitions (see the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        problems = qualification_problems(defn)
        if problems or defn.window.type != "session":
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
        self._bounded = watermark == "internal" and wmd.strategy == "bounded"
        self._source = wmd.strategy == "source"
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._kinds = np.array([AGG_KINDS[fn] for fn in self._fns], dtype=np.int64)
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine (see ``_hand_over``)."""
        self.handed_over_because: str | None = None
        self._reset()
        if state is not None:
            self._load(state)

    # ------------------------------------------------------------------ state arrays

    def _reset(self) -> None:
        self.keys = KeyTable()
        self.key_head = np.zeros(0, dtype=np.int64)
        self.key_nwin = np.zeros(0, dtype=np.int64)
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.late_acc = np.zeros(0, dtype=np.int64)
        self.late_drop = np.zeros(0, dtype=np.int64)
        self.late_deltas: dict[str, list[Any]] = {}
        self.wm: int | None = None
        self.ended = False
        self.processing_time = 0
        self.max_t: int | None = None
        self.seq = 0
        self.born_next = 0
        self.int_budget = 0
        """A bound on |any int sum| a window can reach (sums stay in int64 below 2**62)."""
        self._cap = 0
        m = len(self._names)
        self.nxt = np.zeros(0, dtype=np.int64)
        self.wkey = np.zeros(0, dtype=np.int64)
        self.first = np.zeros(0, dtype=np.int64)
        self.last = np.zeros(0, dtype=np.int64)
        self.elements = np.zeros(0, dtype=np.int64)
        self.born = np.zeros(0, dtype=np.int64)
        self.blate = np.zeros(0, dtype=np.bool_)
        self.used = np.zeros(0, dtype=np.bool_)
        self.free = np.zeros(0, dtype=np.int64)
        self.n_free = 0
        self.cnt = np.zeros((m, 0), dtype=np.int64)
        self.isum = np.zeros((m, 0), dtype=np.int64)
        self.fsum = np.zeros((m, 0), dtype=np.float64)
        self.isf = np.zeros((m, 0), dtype=np.bool_)
        self.ei = np.zeros((m, 0), dtype=np.int64)
        self.ef = np.zeros((m, 0), dtype=np.float64)
        self.eisf = np.zeros((m, 0), dtype=np.bool_)
        self.has = np.zeros((m, 0), dtype=np.bool_)
        self.ot = np.zeros((m, 0), dtype=np.int64)
        self.oseq = np.zeros((m, 0), dtype=np.int64)
        self.oref = np.zeros((m, 0), dtype=np.int64)
        self.hexp = np.zeros(0, dtype=np.int64)
        self.hslot = np.zeros(0, dtype=np.int64)
        self.hborn = np.zeros(0, dtype=np.int64)
        self.hn = 0
        """A min-heap of (expiry, slot, creation number) of the windows, stale entries (windows
        a merge replaced) included until popped."""
        self.objs: list[Any] = []
        """Input values of first/last aggregations, referenced by ``oref``."""

    def _ensure_slots(self, need: int) -> None:
        """At least ``need`` free window slots (arrays grow by doubling)."""
        if self.n_free >= need:
            return
        old = self._cap
        cap = max(2 * old, old + need - self.n_free, 1024)

        def grow(a: NDArray[Any]) -> NDArray[Any]:
            shape = (*a.shape[:-1], cap)
            out = np.zeros(shape, dtype=a.dtype)
            out[..., :old] = a
            return out

        for name in ("nxt", "wkey", "first", "last", "elements", "born", "blate", "used", "cnt",
                     "isum", "fsum", "isf", "ei", "ef", "eisf", "has", "ot", "oseq", "oref"):
            setattr(self, name, grow(getattr(self, name)))
        free = np.zeros(cap, dtype=np.int64)
        free[: self.n_free] = self.free[: self.n_free]
        # new slots on the stack, lowest on top (reused first)
        new = np.arange(cap - 1, old - 1, -1, dtype=np.int64)
        free[self.n_free: self.n_free + len(new)] = new
        self.free = free
        self.n_free += len(new)
        self._cap = cap

    def _ensure_heap(self, need: int) -> None:
        if self.hn + need <= len(self.hexp):
            return
        cap = max(2 * len(self.hexp), self.hn + need, 1024)
        for name in ("hexp", "hslot", "hborn"):
            a = getattr(self, name)
            out = np.zeros(cap, dtype=np.int64)
            out[: self.hn] = a[: self.hn]
            setattr(self, name, out)

    def _grow_keys(self) -> None:
        extra = len(self.keys) - len(self.key_head)
        if extra > 0:
            self.key_head = np.concatenate([self.key_head, np.full(extra, -1, dtype=np.int64)])
            z = np.zeros(extra, dtype=np.int64)
            self.key_nwin = np.concatenate([self.key_nwin, z])
            self.key_max_t = np.concatenate([self.key_max_t, np.full(extra, NO_TIME)])
            self.late_acc = np.concatenate([self.late_acc, z])
            self.late_drop = np.concatenate([self.late_drop, z])

    # ------------------------------------------------------------------ public API

    @property
    def max_event_time(self) -> int | None:
        if self.general is not None:
            return self.general.max_event_time
        return self.max_t

    @property
    def watermark(self) -> int | None:
        """The (global) watermark; ``None`` when minus or plus infinity."""
        if self.general is not None:
            return self.general.watermark
        return None if self.ended else self.wm

    @property
    def state(self) -> SessionKernelState | EngineState:
        """``.snapshot()`` gives the general engine's snapshot data of this state."""
        if self.general is not None:
            return self.general.state
        return SessionKernelState(self)

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """No processing-time timers or idle advance exist for qualifying definitions."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if not self.ended and now_ms > self.processing_time:
            self.processing_time = now_ms
        return []

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival unit (:meth:`jobs.engine.Engine.ingest`): each record's late line in
        arrival order, then the panes of the sessions the unit's watermark advance expires."""
        if self.general is not None:
            return self.general.ingest(batch)
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            self.processing_time = batch.processing_time
        n = len(batch)
        if n == 0:
            return []
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
        status = np.empty(n, dtype=np.int8)
        out_start = np.empty(n, dtype=np.int64)
        out_end = np.empty(n, dtype=np.int64)
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
        self.seq += n
        out: list[Emission] = self._late(batch, codes, status, out_start, out_end)
        np.maximum.at(self.key_max_t, codes, times)
        tmax = int(times.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self._bounded:
            cand = tmax - self._delay
            if self.wm is None or cand > self.wm:
                self.wm = cand
        out.extend(self._fire(codes))
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark to ``wm_ms`` (never back): ``source`` strategy, or a host that
        drives the watermark (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        if not (self._source or self.mode == "external"):
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use Engine(..., watermark='external') to drive it)"
            )
        if self.ended or (self.wm is not None and wm_ms <= self.wm):
            return []
        self.wm = int(wm_ms)
        return self._fire(None)

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every session fires and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        if self.ended:
            return []
        self.ended = True
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
            out.append({
                "key": self.keys.values[int(self.wkey[w])], "window_start": first,
                "window_end": last + self._gap, "elements": n, "pending": n,
                "panes_emitted": 0, "values": values[i], "first_event_time": first,
                "last_event_time": last,
            })
        return out

    def drain_late_counts(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per (key, window) since the last drain."""
        if self.general is not None:
            return self.general.drain_late_counts()
        return drain_window_rows(self.late_deltas)

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

    def _wm_arg(self) -> int:
        if self.wm is None:
            return 0
        return min(max(self.wm, WM_CLAMP[0]), WM_CLAMP[1])

    def _columns(
        self, batch: RecordBatch, n: int
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64], I64, NDArray[np.bool_], I64, int]:
        """The aggregation inputs as (aggregation, record) arrays, and the int-sum budget they
        use; raises :class:`Unsupported` (before any state changes) for values the arrays
        cannot hold exactly."""
        m = len(self._names)
        valid = np.ones((m, n), dtype=np.bool_)
        vf = np.zeros((m, n), dtype=np.float64)
        vi = np.zeros((m, n), dtype=np.int64)
        visf = np.zeros((m, n), dtype=np.bool_)
        vref = np.zeros((m, n), dtype=np.int64)
        objs: list[Any] = []
        budget = 0
        for j, (name, fn, star) in enumerate(zip(self._names, self._fns, self._star,
                                                 strict=True)):
            if star:
                continue
            raw = batch.columns.get(name)
            if raw is None:
                raise EngineError(f"ingest: the batch has no column for aggregation {name!r}")
            if fn == "count":
                valid[j] = null_mask(raw, n)
                continue
            if fn in ORDERED:
                valid[j] = null_mask(raw, n)
                vref[j] = np.arange(n, dtype=np.int64) + len(self.objs) + len(objs)
                objs.extend(raw.tolist() if isinstance(raw, np.ndarray) else raw)
                continue
            col = numeric_column(name, raw, n)
            if col.max_abs_int > EXACT_INT:
                raise Unsupported(f"column {name!r}: integers beyond 2**53")
            valid[j] = col.valid
            vf[j] = col.f
            vi[j] = col.i
            visf[j] = col.is_float
            if fn in ("sum", "mean"):
                budget = max(budget, n * col.max_abs_int)
        if self.int_budget + budget >= 2**62:
            raise Unsupported("integer sums could leave 64 bits")
        self.objs.extend(objs)  # nothing raised: the references are the engine's now
        return valid, vf, vi, visf, vref, budget

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

    def _fire(self, touched: I64 | None) -> list[Emission]:
        """Emit and free every session the watermark expires (all of them at the end), by
        window end, key JSON, window start; then forget the per-key data of keys left with
        no session and no late counts, as the general engine forgets such keys."""
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
            slots, k, s, last, e = slots[order], k[order], s[order], last[order], e[order]
            values = self._values(slots)
            wm_out = None if self.ended else self.wm
            now = self.processing_time
            kv = self.keys.values
            panes = [
                make_pane(kv[c], st, en, "ON_TIME", 0, True, True, False, v, now, wm_out, st,
                          la)
                for c, st, en, la, v in zip(k.tolist(), s.tolist(), e.tolist(), last.tolist(),
                                            values, strict=True)
            ]
            touched = k if touched is None else np.concatenate([touched, k])
        if touched is not None and len(touched):
            gone = touched[(self.key_nwin[touched] == 0) & (self.late_acc[touched] == 0)
                           & (self.late_drop[touched] == 0)]
            self.key_max_t[gone] = NO_TIME
        if len(self.objs) > 65536:
            self._compact_objs()
        return panes

    def _compact_objs(self) -> None:
        """Drop first/last input values no open session refers to, when they are most of the
        list (it grows by every batch's values)."""
        live = self.has & self.used[None, :] & (self.oref >= 0)
        for j, fn in enumerate(self._fns):
            if fn not in ORDERED:
                live[j] = False
        n_live = int(live.sum())
        if 4 * n_live >= len(self.objs):
            return
        refs = self.oref[live]
        objs = self.objs
        self.objs = [objs[r] for r in refs.tolist()]
        self.oref[live] = np.arange(n_live, dtype=np.int64)

    def _values(self, slots: I64) -> list[dict[str, Any]]:
        """The ``values`` dict of each session in ``slots`` (aggregates.result's rules)."""
        cols: list[list[Any]] = []
        for j, fn in enumerate(self._fns):
            cnt = self.cnt[j, slots]
            if fn == "count":
                cols.append(cnt.tolist())
                continue
            isf = self.isf[j, slots]
            if fn in ("sum", "mean"):
                if fn == "mean":
                    num = np.where(isf, self.fsum[j, slots],
                                   self.isum[j, slots].astype(np.float64))
                    with np.errstate(divide="ignore", invalid="ignore"):
                        mean = num / cnt
                    cols.append([None if c == 0 else x
                                 for c, x in zip(cnt.tolist(), mean.tolist(), strict=True)])
                elif isf.any():
                    cols.append([f if b else i for i, f, b in zip(
                        self.isum[j, slots].tolist(), self.fsum[j, slots].tolist(),
                        isf.tolist(), strict=True)])
                else:
                    cols.append(self.isum[j, slots].tolist())
                continue
            has = self.has[j, slots].tolist()
            if fn in ORDERED:
                objs = self.objs
                cols.append([objs[r] if h else None
                             for h, r in zip(has, self.oref[j, slots].tolist(), strict=True)])
                continue
            eisf = self.eisf[j, slots].tolist()
            cols.append([
                (f if b else i) if h else None
                for h, b, i, f in zip(has, eisf, self.ei[j, slots].tolist(),
                                      self.ef[j, slots].tolist(), strict=True)
            ])
        names = self._names
        return [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]

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
        st = EngineState(
            processing_time=self.processing_time, watermark=self.wm, ended=self.ended,
            max_event_time=self.max_t, seq=self.seq,
            late_deltas={k: list(v) for k, v in self.late_deltas.items()},
        )
        present = np.flatnonzero((self.key_nwin > 0) | (self.late_acc > 0)
                                 | (self.late_drop > 0))
        kjs = self.keys.json_array()
        slots = np.flatnonzero(self.used)
        slots = slots[np.argsort(self.born[slots], kind="stable")]
        by_key: dict[int, list[int]] = {}
        for w in slots.tolist():
            by_key.setdefault(int(self.wkey[w]), []).append(w)
        for c in present.tolist():
            mt = int(self.key_max_t[c])
            ks = KeyState(
                key=self.keys.values[c], max_event_time=None if mt == NO_TIME else mt,
                late_accepted=int(self.late_acc[c]), late_dropped=int(self.late_drop[c]),
            )
            for w in by_key.get(c, []):
                first, last = int(self.first[w]), int(self.last[w])
                close = last + self._gap
                n = int(self.elements[w])
                ks.windows[first] = WindowState(
                    start=first, end=close, close=close, accs=self._accs(w), first_t=first,
                    last_t=last, elements=n, pending=n, emitted=0,
                    passed=self.wm is not None and self.wm >= close,
                    born_late=bool(self.blate[w]),
                )
            st.keys[str(kjs[c])] = ks
        return st

    def _accs(self, w: int) -> list[Any]:
        """Window slot ``w``'s accumulators as :mod:`jobs.engine.aggregates` holds them."""
        out: list[Any] = []
        for j, fn in enumerate(self._fns):
            s: Any = float(self.fsum[j, w]) if self.isf[j, w] else int(self.isum[j, w])
            if fn == "count":
                out.append(int(self.cnt[j, w]))
            elif fn == "sum":
                out.append(s)
            elif fn == "mean":
                out.append([s, int(self.cnt[j, w])])
            elif not self.has[j, w]:
                out.append(None)
            elif fn in ORDERED:
                out.append([int(self.ot[j, w]), int(self.oseq[j, w]),
                            self.objs[int(self.oref[j, w])]])
            else:
                out.append(float(self.ef[j, w]) if self.eisf[j, w] else int(self.ei[j, w]))
        return out

    def _load(self, state: Any) -> None:
        """Start from a general-engine state or snapshot (the format both engines write);
        one the arrays cannot hold keeps running on the general engine."""
        if isinstance(state, SessionKernelState):
            state = state.snapshot()
        st = state if isinstance(state, EngineState) else EngineState.restore(state)
        why = self._cannot_hold(st)
        if why is not None:
            self.handed_over_because = why
            self.general = Engine(self.defn, state=st, watermark=self.mode)
            return
        self.wm, self.ended = st.watermark, st.ended
        self.processing_time, self.max_t, self.seq = st.processing_time, st.max_event_time, st.seq
        self.late_deltas = {k: list(v) for k, v in st.late_deltas.items()}
        wins = [(ks, w) for ks in st.keys.values() for w in ks.windows.values()]
        codes = self.keys.encode([ks.key for ks in st.keys.values()]) if st.keys else np.zeros(
            0, dtype=np.int64)
        self._grow_keys()
        self._ensure_slots(len(wins))
        code_of = {id(ks): int(c) for ks, c in zip(st.keys.values(), codes.tolist(),
                                                   strict=True)}
        for ks in st.keys.values():
            c = code_of[id(ks)]
            self.late_acc[c] = ks.late_accepted
            self.late_drop[c] = ks.late_dropped
            self.key_max_t[c] = NO_TIME if ks.max_event_time is None else ks.max_event_time
        budget = 0
        for ks, w in wins:
            c = code_of[id(ks)]
            self.n_free -= 1
            slot = int(self.free[self.n_free])
            self.used[slot] = True
            self.wkey[slot] = c
            assert w.first_t is not None and w.last_t is not None  # _cannot_hold checked
            self.first[slot] = w.first_t
            self.last[slot] = w.last_t
            self.elements[slot] = w.elements
            self.blate[slot] = w.born_late
            self.born[slot] = self.born_next
            self.born_next += 1
            self.nxt[slot] = self.key_head[c]
            self.key_head[c] = slot
            self.key_nwin[c] += 1
            for j, (fn, acc) in enumerate(zip(self._fns, w.accs, strict=True)):
                self._set_acc(j, slot, fn, acc)
                if fn in ("sum", "mean"):
                    s = acc if fn == "sum" else acc[0]
                    if type(s) is int:
                        budget = max(budget, abs(s))
        self.int_budget = budget
        slots = np.flatnonzero(self.used)
        exp = self.last[slots] + self._gap + self._al
        order = np.argsort(exp, kind="stable")  # a sorted array is a heap
        self._ensure_heap(len(slots))
        self.hn = len(slots)
        self.hexp[: self.hn] = exp[order]
        self.hslot[: self.hn] = slots[order]
        self.hborn[: self.hn] = self.born[slots[order]]

    def _set_acc(self, j: int, slot: int, fn: str, acc: Any) -> None:
        for arr in (self.cnt, self.isum, self.ei):
            arr[j, slot] = 0
        for farr in (self.fsum, self.ef):
            farr[j, slot] = 0.0
        for barr in (self.isf, self.eisf, self.has):
            barr[j, slot] = False
        self.ot[j, slot] = self.oseq[j, slot] = 0
        self.oref[j, slot] = -1
        if fn == "count":
            self.cnt[j, slot] = acc
            return
        if fn in ("sum", "mean"):
            s = acc if fn == "sum" else acc[0]
            if fn == "mean":
                self.cnt[j, slot] = acc[1]
            if type(s) is float:
                self.isf[j, slot] = True
                self.fsum[j, slot] = s
            else:
                self.isum[j, slot] = s
            return
        if acc is not None and fn in ORDERED:
            self.has[j, slot] = True
            self.ot[j, slot], self.oseq[j, slot] = acc[0], acc[1]
            self.oref[j, slot] = len(self.objs)
            self.objs.append(acc[2])
        elif acc is not None:
            self.has[j, slot] = True
            if type(acc) is float:
                self.eisf[j, slot] = True
                self.ef[j, slot] = acc
            else:
                self.ei[j, slot] = acc
                self.ef[j, slot] = float(acc)

    def _cannot_hold(self, st: EngineState) -> str | None:
        """Why the arrays cannot hold ``st`` exactly (None when they can)."""
        if st.idle_base is not None:
            return "state: an idle-advance base"
        gap = self._gap
        for kj, ks in st.keys.items():
            if ks.records or ks.watermark is not None or ks.idle_base is not None:
                return f"state: key {kj} holds sliding records or a key watermark"
            for w in ks.windows.values():
                if (w.emitted or w.timer is not None or w.retract or w.last_pane is not None
                        or w.first_t is None or w.last_t is None or w.start != w.first_t
                        or w.close != w.last_t + gap or w.pending != w.elements
                        or abs(w.first_t) > TIME_LIMIT or abs(w.last_t) > TIME_LIMIT):
                    return f"state: key {kj} holds a window of another kind"
                for fn, acc in zip(self._fns, w.accs, strict=True):
                    if not _representable(fn, acc):
                        return f"state: key {kj} holds a {fn} accumulator beyond the arrays"
        return None


def _num_ok(v: Any) -> bool:
    if type(v) is int:
        return abs(v) <= EXACT_INT
    return type(v) is float and v == v


def _representable(fn: str, acc: Any) -> bool:
    if fn == "count":
        return type(acc) is int
    if fn == "sum":
        return _num_ok(acc) or (type(acc) is int and abs(acc) < 2**62)
    if fn == "mean":
        return (isinstance(acc, list) and len(acc) == 2 and type(acc[1]) is int
                and (_num_ok(acc[0]) or (type(acc[0]) is int and abs(acc[0]) < 2**62)))
    if fn in ORDERED:
        return acc is None or (isinstance(acc, list) and len(acc) == 3 and type(acc[0]) is int
                               and type(acc[1]) is int and abs(acc[0]) <= TIME_LIMIT
                               and 0 <= acc[1] < 2**62)
    return acc is None or _num_ok(acc)


class SessionKernelState:
    """The session kernel engine's state as the Engine API exposes it: a live view whose
    ``snapshot()`` is the general engine's snapshot of the same state."""

    def __init__(self, engine: SessionKernelEngine) -> None:
        self._engine = engine

    @property
    def processing_time(self) -> int:
        return self._engine.processing_time

    def snapshot(self) -> dict[str, Any]:
        return self._engine.to_engine_state().snapshot()

    def to_engine_state(self) -> EngineState:
        return self._engine.to_engine_state()

    @classmethod
    def restore(cls, d: dict[str, Any], *, copy_data: bool = True) -> EngineState:
        """The state a snapshot describes (the general engine's format, which
        :class:`SessionKernelEngine` takes as ``state=``)."""
        return EngineState.restore(d, copy_data=copy_data)

