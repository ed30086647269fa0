"""VectorizedEngine: the general engine's API and output, on columnar numpy state.

Only definitions accepted by :func:`jobs.engine.vectorized.qualify.qualifies` are run here:
fixed (tumbling / hopping) or global windows, ``emit: final``, a bounded event-time watermark
without idle advance. For those, a window emits exactly one pane, at its expiry, holding every
record accepted into it, which is what makes the columnar shortcut exact: no per-window timers,
no pane history, nothing to retract.

Per ingest call (one arrival instant, docs/architecture.md): records are judged against the
watermark as it stood before the call, accepted records are folded into their slices, the
watermark advances, and every window whose expiry the advance crosses is emitted; slices no
window needs any more are dropped.

Output: ``ingest_columns`` / ``advance_watermark_columns`` / ``end_of_input_columns`` return the
fired windows as columns (:class:`~jobs.engine.vectorized.columns.FinalPanes`, late records as
objects before them); ``ingest`` / ``advance_watermark`` / ``end_of_input`` are those calls with
the columns materialized as ``Pane`` objects (``to_panes()``), the general engine's API. The
columns are the engine's product: building the objects costs more than computing them.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.late_rows import drain_window_rows, key_total_rows
from jobs.engine.records import Emission, LateRecord, RecordBatch, key_json
from jobs.engine.state import EngineState
from jobs.engine.vectorized.aggregates import Agg, CountAgg, ExtremeAgg, SumAgg
from jobs.engine.vectorized.columns import ColumnarOutput, FinalPanes
from jobs.engine.vectorized.dense import DenseStore, dense_eligible
from jobs.engine.vectorized.geometry import WM_INF, WM_NONE, Geometry
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.qualify import qualification_problems
from jobs.engine.vectorized.store import SliceStore, first_occurrences, group_pairs
from jobs.engine.vectorized.values import Column, Unsupported, null_mask, numeric_column

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]
SNAPSHOT_VERSION = 1


ELEMENTS = "\x00elements"
"""Hidden per-slice record count (``open_windows`` reports a window's elements)."""


def _make_aggs(defn: Definition) -> list[Agg]:
    out: list[Agg] = [CountAgg(ELEMENTS, counts_records=True)]
    for a in defn.aggregations:
        if a.fn == "count":
            out.append(CountAgg(a.name, counts_records=a.of is None))
        elif a.fn in ("sum", "mean"):
            out.append(SumAgg(a.name, mean=a.fn == "mean"))
        elif a.fn in ("min", "max"):
            out.append(ExtremeAgg(a.name, is_max=a.fn == "max"))
        else:  # pragma: no cover - qualifies() refuses it
            raise Unsupported(f"aggregations.{a.name}: fn {a.fn} is not vectorized")
    return out


def _subset(col: Column | None, mask: NDArray[np.bool_]) -> Column | None:
    if col is None:
        return None
    if len(col.f) == 0 and len(col.valid):  # count of an expression: only the null mask
        return Column(col.valid[mask], col.f, col.i, col.is_float, False, False, 0)
    return Column(
        col.valid[mask], col.f[mask], col.i[mask], col.is_float[mask],
        col.any_float, col.all_float, col.max_abs_int,
    )


class VectorizedEngine:
    """Same API and observable output as :class:`jobs.engine.Engine`, for qualifying
    definitions (see the module docstring)."""

    def __init__(
        self, defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
    ) -> None:
        problems = qualification_problems(defn)
        if problems:
            raise EngineError("vectorized engine: " + "; ".join(problems))
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        self.defn = defn
        self.mode: WatermarkMode = watermark
        self.geo = Geometry.of(defn)
        self.key_scope = defn.watermark.scope == "key" and watermark == "internal"
        self.delay = defn.watermark.delay
        self.keys = KeyTable()
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.key_wm = np.zeros(0, dtype=np.int64)
        self.max_t: int | None = None
        self.wm = WM_NONE
        self.seq = 0
        self.processing_time = 0
        self.ended = False
        self.store: SliceStore | DenseStore = (
            DenseStore(self.geo, _make_aggs(defn))
            if dense_eligible(self.geo, self.key_scope)
            else SliceStore(self.geo, _make_aggs(defn))
        )
        self._by_rank = np.zeros(0, dtype=np.int64)
        self.late_totals_by_key: dict[str, list[Any]] = {}
        """key JSON -> [key, accepted, dropped] since the state began."""
        self.late_deltas: dict[str, list[Any]] = {}
        """"<key json>|<start>|<end>" -> [key, start, end, accepted, dropped] since last drain."""
        self.handed_over_because: str | None = None
        self.general: Engine | None = None
        """Set once the engine handed over to the general engine (see ``_hand_over``)."""
        if isinstance(state, EngineState):
            self.general = Engine(defn, state=state, watermark=watermark)
        elif state is not None:
            snap = state if isinstance(state, dict) else state.snapshot()
            if snap.get("engine") == "vectorized":
                self._load(snap)
            else:  # a general-engine snapshot: keep running on the general engine
                self.general = Engine(defn, EngineState.restore(snap), watermark=watermark)

    # ------------------------------------------------------------------ public API

    @property
    def max_event_time(self) -> int | None:
        if self.general is not None:
            return self.general.max_event_time
        return self.max_t

    @property
    def watermark(self) -> int | None:
        """The (global) watermark; None before any record (minus infinity) or after the end."""
        if self.general is not None:
            return self.general.watermark
        return None if self.ended or self.wm in (WM_NONE, WM_INF) else self.wm

    @property
    def state(self) -> VectorizedState | EngineState:
        """``.snapshot()`` gives JSON data; after a hand-over, the general engine's state."""
        if self.general is not None:
            return self.general.state
        return VectorizedState(engine=self)

    def open_windows(self) -> list[dict[str, Any]]:
        """Windows holding state, as :meth:`jobs.engine.Engine.open_windows` reports them:
        ordered by key JSON then start; nothing has been emitted from them yet (final)."""
        if self.general is not None:
            return self.general.open_windows()
        store = self._sparse_store()
        if len(store) == 0 or self.ended:
            return []
        starts, valid = self.geo.window_starts(store.start)
        rows = np.repeat(np.arange(len(store)), valid.shape[1])[valid.ravel()]
        ws = starts[valid]
        wm = self.key_wm[store.key[rows]] if self.key_scope else np.full(len(rows), self.wm)
        alive = self.geo.expiry(ws) > wm
        rows, ws = rows[alive], ws[alive]
        if len(rows) == 0:
            return []
        gid = group_pairs(store.key[rows], ws)
        first = first_occurrences(gid)
        k, s = store.key[rows[first]], ws[first]
        idx = self._slices_of(k, s, store)
        values = [agg.combine(idx) for agg in store.aggs]
        kjs = [key_json(self.keys.values[c]) for c in k.tolist()]
        out = []
        for i in sorted(range(len(k)), key=lambda i: (kjs[i], int(s[i]))):
            key, w_start, w_end = self._window_id(int(k[i]), int(s[i]))
            vals = {a.name: v[i] for a, v in zip(store.aggs[1:], values[1:], strict=True)}
            out.append({
                "key": key, "window_start": w_start, "window_end": w_end,
                "elements": values[0][i], "pending": values[0][i], "panes_emitted": 0,
                "values": vals,
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
        return key_total_rows(self.late_totals_by_key)

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """No processing-time timers or idle advance exist for qualifying definitions."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if not self.ended and now_ms > self.processing_time:
            self.processing_time = now_ms
        return []

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        """One arrival instant (see :meth:`jobs.engine.Engine.ingest`): late lines first, in
        arrival order, then the panes of the windows the new watermark expires."""
        if self.general is not None:
            return self.general.ingest(batch)
        return self.ingest_columns(batch).to_emissions()

    def ingest_columns(self, batch: RecordBatch) -> ColumnarOutput:
        """:meth:`ingest` with the fired windows as columns (``to_emissions()`` of the result
        is exactly what ``ingest`` returns)."""
        if self.general is not None:
            return self._columnar(self.general.ingest(batch))
        if self.ended:
            raise EngineError("ingest: the input has already ended (end_of_input was called)")
        if batch.processing_time is not None and batch.processing_time > self.processing_time:
            self.processing_time = batch.processing_time
        n = len(batch)
        if n == 0:
            return ColumnarOutput([], self._no_panes())
        try:
            cols = self._columns(batch, n)  # checked before any state changes
        except Unsupported as exc:
            return self._columnar(self._hand_over(batch, str(exc)))
        if self.key_scope and self.mode == "internal" and n > 1:
            # each record moves its key's watermark and fires before the next one is judged
            # (docs/semantics.md, "Arrival model"); the arrays judge a whole unit at once, so
            # the general engine takes over (a vectorized store of a key-scope job, written
            # before this model, keeps loading and hands over here)
            return self._columnar(self._hand_over(
                batch, "watermark.scope: key with several records in one arrival unit"))
        codes = self.keys.encode(batch.keys)
        self._grow_keys()
        t = batch.event_times
        if self.key_scope:
            wm_b: I64 | int = self.key_wm[codes]
        else:
            wm_b = self.wm
        sl = self.geo.slice_of(t)
        out: list[Emission] = []
        accept = self._judge(codes, t, sl, wm_b, batch, out)
        seq = np.arange(self.seq, self.seq + n, dtype=np.int64)
        self.seq += n
        if accept is None or accept.all():
            self._add(codes, sl, cols, seq)
        else:
            sub = {name: _subset(c, accept) for name, c in cols.items()}
            self._add(codes[accept], sl[accept], sub, seq[accept])
        np.maximum.at(self.key_max_t, codes, t)
        tmax = int(t.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self.mode == "external":
            return ColumnarOutput(out, self._no_panes())
        if self.key_scope:
            old = self.key_wm.copy()
            if self.wm != WM_INF:
                self.key_wm = np.maximum(self.key_wm, self.key_max_t - self.delay)
            return ColumnarOutput(out, self._fire(old, self.key_wm))
        old_wm = self.wm
        if self.wm != WM_INF:
            self.wm = max(self.wm, self.max_t - self.delay)
        return ColumnarOutput(out, self._fire(old_wm, self.wm))

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark (never back) when the host drives it (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        return self.advance_watermark_columns(wm_ms).to_emissions()

    def advance_watermark_columns(self, wm_ms: int) -> ColumnarOutput:
        """:meth:`advance_watermark` with the fired windows as columns."""
        if self.general is not None:
            return self._columnar(self.general.advance_watermark(wm_ms))
        if self.mode != "external":
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use watermark='external' to drive it)"
            )
        if self.ended or (self.wm != WM_NONE and wm_ms <= self.wm):
            return ColumnarOutput([], self._no_panes())
        return ColumnarOutput([], self._raise_all(int(wm_ms)))

    def end_of_input(self) -> list[Emission]:
        if self.general is not None:
            return self.general.end_of_input()
        return self.end_of_input_columns().to_emissions()

    def end_of_input_columns(self) -> ColumnarOutput:
        """:meth:`end_of_input` with the fired windows as columns."""
        if self.general is not None:
            return self._columnar(self.general.end_of_input())
        if self.ended:
            return ColumnarOutput([], self._no_panes())
        self.ended = True
        return ColumnarOutput([], self._raise_all(WM_INF))

    # ------------------------------------------------------------------ internals

    def _add(self, k: I64, s: I64, cols: dict[str, Column | None], seq: I64) -> None:
        store = self.store
        if isinstance(store, DenseStore):
            if store.add(k, s, cols, seq, len(self.keys)):
                return
            # the cells would exceed the dense budget: sparse from now on, same state
            sparse = store.to_sparse()
            self.store = sparse
            sparse.add(k, s, cols, seq)
            return
        store.add(k, s, cols, seq)

    def _sparse_store(self) -> SliceStore:
        """The state as a sparse store (a converted copy when the dense store is in use), for
        the rare paths (open windows, hand-over) written once, against rows."""
        store = self.store
        return store.to_sparse() if isinstance(store, DenseStore) else store

    def _agg_names(self) -> list[str]:
        return [a.name for a in self.defn.aggregations]

    def _no_panes(self) -> FinalPanes:
        return FinalPanes.empty(self._agg_names(), self.keys, self.geo.size, self.geo.is_global,
                                self.processing_time)

    def _columnar(self, out: list[Emission]) -> ColumnarOutput:
        """Object output of the general engine (after a hand-over) as a columnar output."""
        return ColumnarOutput.of_emissions(out, self._agg_names(), self.geo.size,
                                           self._processing_time_now())

    def _processing_time_now(self) -> int:
        if self.general is not None:
            return int(self.general.state.processing_time)
        return self.processing_time

    def _hand_over(self, batch: RecordBatch, why: str) -> list[Emission]:
        """Convert the state to the general engine's and let it run from now on (this batch
        included): exactness over speed for input the arrays cannot hold."""
        from jobs.engine.vectorized.convert import to_engine_state

        self.handed_over_because = why
        self.general = Engine(self.defn, state=to_engine_state(self), watermark=self.mode)
        return self.general.ingest(batch)

    def _raise_all(self, wm: int) -> FinalPanes:
        old = self.wm
        self.wm = max(self.wm, wm)
        if self.key_scope:
            old_k = self.key_wm.copy()
            self.key_wm = np.maximum(self.key_wm, self.wm)
            return self._fire(old_k, self.key_wm)
        return self._fire(old, self.wm)

    def _grow_keys(self) -> None:
        extra = len(self.keys) - len(self.key_wm)
        if extra > 0:
            start_wm = WM_INF if self.wm == WM_INF else WM_NONE
            self.key_wm = np.concatenate([self.key_wm, np.full(extra, start_wm, dtype=np.int64)])
            self.key_max_t = np.concatenate(
                [self.key_max_t, np.full(extra, WM_NONE, dtype=np.int64)]
            )

    def _columns(self, batch: RecordBatch, n: int) -> dict[str, Column | None]:
        cols: dict[str, Column | None] = {}
        for a in self.defn.aggregations:
            if a.fn == "count" and a.of is None:
                cols[a.name] = None
                continue
            if a.name not in batch.columns:
                raise Unsupported(f"aggregations.{a.name}: batch has no column {a.name!r}")
            raw = batch.columns[a.name]
            if a.fn == "count":
                empty_f = np.zeros(0, dtype=np.float64)
                empty_i = np.zeros(0, dtype=np.int64)
                cols[a.name] = Column(
                    null_mask(raw, n), empty_f, empty_i, np.zeros(0, dtype=bool), False, False, 0
                )
            else:
                cols[a.name] = numeric_column(a.name, raw, n)
        for agg in self.store.aggs[1:]:
            agg.precheck(cols[agg.name])
        return cols

    def _judge(
        self, codes: I64, t: I64, sl: I64, wm_b: I64 | int, batch: RecordBatch,
        out: list[Emission],
    ) -> NDArray[np.bool_] | None:
        """Lateness of each record against the watermark before the instant. Appends the late
        outputs, counts late pairs, and returns the mask of records to fold in (None = all)."""
        wm_arr = np.broadcast_to(np.asarray(wm_b, dtype=np.int64), t.shape)
        suspect = np.flatnonzero(wm_arr > t)  # only these can be late for any window
        if len(suspect) == 0:
            return None
        accept = np.ones(len(t), dtype=bool)
        starts, valid = self.geo.window_starts(sl[suspect])
        wm_s = wm_arr[suspect][:, None]
        if self.defn.lateness_basis == "event":
            dropped = valid
            late_ok = np.zeros_like(valid)
            accept[suspect] = False
            reason: Literal["expired", "before_watermark"] = "before_watermark"
        else:
            end = self.geo.window_end(starts.ravel()).reshape(starts.shape)
            exp = self.geo.expiry(starts.ravel()).reshape(starts.shape)
            dropped = valid & (wm_s >= exp)
            late_ok = valid & (wm_s >= end) & ~dropped
            accept[suspect] = ~dropped[:, 0]  # the latest window of the record is still open
            reason = "expired"
            if not (dropped.any() or late_ok.any()):
                return None
        # late outputs in arrival order; a record's windows by ascending start. Only records
        # with a late pair are visited, on Python lists (most suspects are merely out of order,
        # and indexing numpy arrays element by element cost more than the rest of the judging)
        hit = np.flatnonzero((dropped | late_ok).any(axis=1))
        drop_l, ok_l, starts_l = dropped[hit].tolist(), late_ok[hit].tolist(), starts[hit].tolist()
        rec_i = suspect[hit].tolist()
        codes_l, t_l = codes[rec_i].tolist(), t[rec_i].tolist()
        width = starts.shape[1]
        for h, r_i in enumerate(rec_i):
            code, drop_h, ok_h, starts_h = codes_l[h], drop_l[h], ok_l[h], starts_l[h]
            for j in range(width - 1, -1, -1):
                if not (drop_h[j] or ok_h[j]):
                    continue
                wid = self._window_id(code, starts_h[j])
                self._count_late(code, wid, 1 if drop_h[j] else 0)
                if drop_h[j]:
                    rec = batch.records[r_i] if batch.records is not None else None
                    out.append(LateRecord(wid[0], t_l[h], wid[1], wid[2], reason, rec))
        return accept

    def _count_late(self, code: int, wid: tuple[Any, int | None, int | None], slot: int) -> None:
        key, start, end = wid
        kj = self.keys.json_array()[code]  # cached per code (json.dumps per late pair was slow)
        tot = self.late_totals_by_key.setdefault(kj, [key, 0, 0])
        tot[1 + slot] += 1
        row = self.late_deltas.setdefault(f"{kj}|{start}|{end}", [key, start, end, 0, 0])
        row[3 + slot] += 1

    def _slices_of(self, k: I64, s: I64, store: SliceStore) -> NDArray[np.int64]:
        """Store rows of every slice of each window (k, s): shape (windows, slices), -1 absent."""
        g = self.geo.slice_width
        offs = np.arange(self.geo.slices_per_window, dtype=np.int64) * g
        qs = (s[:, None] + offs[None, :]).ravel()
        qk = np.repeat(k, len(offs))
        return store.lookup(qk, qs).reshape(len(k), len(offs))

    def _window_id(self, code: int, start: int) -> tuple[Any, int | None, int | None]:
        key = self.keys.values[code]
        if self.geo.is_global:
            return (key, None, None)
        return (key, start, start + self.geo.size)

    def _order(self, k: I64, s: I64) -> I64:
        """Emission order of windows firing together, as the general engine: by window end,
        then key JSON, then window start."""
        if len(k) <= 1:
            return np.arange(len(k))
        return np.lexsort((s, self.keys.json_rank()[k], self.geo.window_end(s)))

    def _fire(self, old: I64 | int, new: I64 | int) -> FinalPanes:
        """Emit every window whose expiry lies in (old, new]; drop slices no longer needed."""
        store = self.store
        if isinstance(store, DenseStore):
            assert not isinstance(old, np.ndarray) and not isinstance(new, np.ndarray)
            return self._fire_dense(store, int(old), int(new))
        if len(store) == 0:
            return self._no_panes()
        if self.key_scope:
            assert isinstance(old, np.ndarray) and isinstance(new, np.ndarray)
            o_rows, n_rows = old[store.key], new[store.key]
        else:
            if new == old:
                return self._no_panes()
            o_rows = np.full(len(store), old, dtype=np.int64)
            n_rows = np.full(len(store), new, dtype=np.int64)
        starts, valid = self.geo.window_starts(store.start)
        exp = self.geo.expiry(starts.ravel()).reshape(starts.shape)
        fire = valid & (exp > o_rows[:, None]) & (exp <= n_rows[:, None])
        emitted = self._no_panes()
        if fire.any():
            rows = np.repeat(np.arange(len(store)), starts.shape[1])[fire.ravel()]
            ws = starts[fire]
            if self.geo.slices_per_window == 1:
                k, s = store.key[rows], ws
                order = self._order(k, s)
                rows, k, s = rows[order], k[order], s[order]
                values = [agg.values_array(rows) for agg in store.aggs[1:]]
            else:
                gid = group_pairs(store.key[rows], ws)
                first = first_occurrences(gid)
                k, s = store.key[rows[first]], ws[first]
                order = self._order(k, s)
                k, s = k[order], s[order]
                idx = self._slices_of(k, s, store)
                values = [agg.combine_array(idx) for agg in store.aggs[1:]]
            emitted = self._final(k, s, values)
        last_exp = exp[:, 0]
        store.keep(last_exp > n_rows)
        return emitted

    def _codes_by_rank(self) -> I64:
        """Key codes in key-JSON order (the inverse of ``json_rank``), cached per key count."""
        n = len(self.keys)
        if len(self._by_rank) != n:
            by_rank = np.empty(n, dtype=np.int64)
            by_rank[self.keys.json_rank()] = np.arange(n, dtype=np.int64)
            self._by_rank = by_rank
        return self._by_rank

    def _fire_dense(self, store: DenseStore, old: int, new: int) -> FinalPanes:
        """``_fire`` on the dense store (global watermark): the fired window starts are found
        from the few live slots; each fired window's keys are the non-empty cells of its slots,
        taken in key-JSON order, so no sort or lookup is needed."""
        if new == old or not store.slot_of:
            return self._no_panes()
        geo = self.geo
        live = store.live_slots()
        ss = store.slot_start[live]
        starts, valid = geo.window_starts(ss)
        exp = geo.expiry(starts.ravel()).reshape(starts.shape)
        fire = valid & (exp > old) & (exp <= new)
        emitted = self._no_panes()
        if fire.any():
            cap = store.cap
            spw = geo.slices_per_window
            elements = store.elements.reshape(store.n_slots, cap)
            by_rank = self._codes_by_rank()
            offs = np.arange(spw, dtype=np.int64) * geo.slice_width
            ks: list[I64] = []
            ss_out: list[I64] = []
            idxs: list[I64] = []
            for w in np.unique(starts[fire]).tolist():  # ascending start = ascending end
                slots = np.array(
                    [store.slot_of.get(x, -1) for x in (w + offs).tolist()], dtype=np.int64
                )
                have = slots[slots >= 0]
                # a key's window fired iff it has a record in one of the window's slices
                present = np.zeros(max(cap, len(by_rank)), dtype=np.bool_)
                present[:cap] = elements[have].any(axis=0)  # keys beyond cap: no record yet
                codes = by_rank[present[by_rank]]
                idx = slots[None, :] * cap + codes[:, None]
                if len(have) < spw:
                    idx[:, slots < 0] = -1
                ks.append(codes)
                ss_out.append(np.full(len(codes), w, dtype=np.int64))
                idxs.append(idx)
            k = np.concatenate(ks)
            s = np.concatenate(ss_out)
            idx2 = np.concatenate(idxs)
            if spw == 1:
                values = [agg.values_array(idx2[:, 0]) for agg in store.aggs[1:]]
            else:
                values = [agg.combine_array(idx2) for agg in store.aggs[1:]]
            emitted = self._final(k, s, values)
        last_exp = exp[:, 0]
        dead = live[last_exp <= new]
        if len(dead):
            store.release(dead)
        return emitted

    def _final(self, k: I64, s: I64, values: list[NDArray[Any]]) -> FinalPanes:
        """The fired windows (k, s), already in emission order, as columns: no per-window
        Python work at all (objects are built only if the caller asks, ``to_panes``)."""
        wm = self.key_wm[k] if self.key_scope else np.full(len(k), self.wm, dtype=np.int64)
        names = self._agg_names()
        return FinalPanes(
            key_codes=k, key_table=self.keys, window_start=None if self.geo.is_global else s,
            window_size=self.geo.size, watermark=wm,
            values=dict(zip(names, values, strict=True)), emitted_at=self.processing_time,
        )

    # ------------------------------------------------------------------ snapshot

    def snapshot(self) -> dict[str, Any]:
        """JSON data of the whole state (its own format, tagged ``engine: vectorized``; the
        general engine's format after a hand-over)."""
        if self.general is not None:
            return self.general.state.snapshot()
        return {
            "engine": "vectorized",
            "version": SNAPSHOT_VERSION,
            "keys": list(self.keys.values),
            "key_max_t": self.key_max_t.tolist(),
            "key_wm": self.key_wm.tolist(),
            "max_t": self.max_t,
            "wm": self.wm,
            "ended": self.ended,
            "seq": self.seq,
            "processing_time": self.processing_time,
            "store": self.store.dump(),
            "late_totals": {k: list(v) for k, v in self.late_totals_by_key.items()},
            "late_deltas": {k: list(v) for k, v in self.late_deltas.items()},
        }

    def _load(self, d: dict[str, Any]) -> None:
        if d.get("version") != SNAPSHOT_VERSION:
            raise EngineError(f"state snapshot version {d.get('version')!r} is not {SNAPSHOT_VERSION}")
        try:
            self.keys = KeyTable(d["keys"])
            self.key_max_t = np.asarray(d["key_max_t"], dtype=np.int64)
            self.key_wm = np.asarray(d["key_wm"], dtype=np.int64)
            self.max_t = d["max_t"]
            self.wm = int(d["wm"])
            self.ended = bool(d["ended"])
            self.seq = int(d["seq"])
            self.processing_time = int(d["processing_time"])
            sparse = SliceStore(self.geo, _make_aggs(self.defn))
            sparse.load(d["store"])
            self.store = sparse
            if dense_eligible(self.geo, self.key_scope):
                self.store = DenseStore.from_sparse(sparse, len(self.keys)) or sparse
            self.late_totals_by_key = {k: list(v) for k, v in d["late_totals"].items()}
            self.late_deltas = {k: list(v) for k, v in d["late_deltas"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise EngineError(f"state snapshot is malformed: {exc!r}") from exc


class VectorizedState:
    """The vectorized engine's state as the Engine API exposes it. ``engine.state`` is a live
    view (cheap: nothing is copied until ``snapshot()``); ``VectorizedState.restore(d)`` holds
    snapshot data to pass as ``state=`` to a new engine."""

    def __init__(
        self, data: dict[str, Any] | None = None, engine: VectorizedEngine | None = None
    ) -> None:
        self._data = data
        self._engine = engine

    @property
    def processing_time(self) -> int:
        if self._engine is not None:
            return self._engine.processing_time
        assert self._data is not None
        return int(self._data["processing_time"])

    def snapshot(self) -> dict[str, Any]:
        if self._engine is not None:
            return self._engine.snapshot()
        return copy.deepcopy(self._data) if self._data is not None else {}

    @classmethod
    def restore(cls, d: dict[str, Any]) -> VectorizedState:
        if d.get("engine") != "vectorized":
            raise EngineError("state: not a vectorized-engine snapshot")
        return cls(data=copy.deepcopy(d))
