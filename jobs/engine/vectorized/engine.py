"""VectorizedEngine: the general engine's API and output, on columnar numpy state.

Only definitions accepted by :func:`jobs.engine.vectorized.qualify.qualifies` are run here:
fixed (tumbling / hopping) or global windows, ``emit: final``, a bounded watermark (global
or per key, with or without idle advance), a source's watermark (moved only by
``advance_watermark``) or the processing clock. For those, a window emits exactly one pane, at its expiry, holding every
record accepted into it, which is what makes the columnar shortcut exact: no per-window timers,
no pane history, nothing to retract.

Per ingest call (one arrival instant, docs/architecture.md): records are judged against the
watermark as it stood before the call, accepted records are folded into their slices, the
watermark advances, and every window whose expiry the advance crosses is emitted; slices no
window needs any more are dropped. Under ``scope: key`` each record meets its key's watermark as the
unit's earlier records of the key moved it (``key_units``).

Output: ``ingest_columns`` / ``advance_watermark_columns`` / ``end_of_input_columns`` return the
fired windows as columns (:class:`~jobs.engine.vectorized.columns.FinalPanes`, late records as
objects before them); ``ingest`` / ``advance_watermark`` / ``end_of_input`` are those calls with
the columns materialized as ``Pane`` objects (``to_panes()``), the general engine's API. The
columns are the engine's product: building the objects costs more than computing them.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.late_rows import drain_window_rows, key_total_rows
from jobs.engine.records import Emission, RecordBatch, key_json
from jobs.engine.state import EngineState
from jobs.engine.vectorized.columns import ColumnarOutput, FinalPanes
from jobs.engine.vectorized.dense import DenseStore, dense_eligible
from jobs.engine.vectorized.firing import fire
from jobs.engine.vectorized.geometry import WM_INF, WM_NONE, Geometry
from jobs.engine.vectorized.judge import judge
from jobs.engine.vectorized.key_units import (
    KeyUnit,
    plan_unit,
    raise_and_fire,
    shares_a_fired_slice,
)
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.qualify import OBJECT_FNS, qualification_problems
from jobs.engine.vectorized.snapshot import VectorizedState, load_snapshot, snapshot_data
from jobs.engine.vectorized.store import SliceStore, first_occurrences, group_pairs, make_aggs
from jobs.engine.vectorized.values import (
    Column,
    Unsupported,
    null_mask,
    numeric_column,
    value_column,
)

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]


def _subset(col: Column | None, mask: NDArray[np.bool_]) -> Column | None:
    if col is None:
        return None
    if col.obj is not None:  # values as objects with their event times
        assert col.t is not None
        return Column(col.valid[mask], col.f, col.i, col.is_float, False, False, 0,
                      col.obj[mask], col.t[mask])
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
        self.source = defn.watermark.strategy == "source"
        """``watermark.strategy: source``: records never move the watermark, only
        ``advance_watermark`` does (the source's marks); no per-key watermark, no idle
        advance (as the general engine)."""
        self.geo = Geometry.of(defn)
        self.clock = defn.uses_processing_time
        """``event_time: processing``: every record's event time is the unit's processing
        time and (internal mode) the watermark is the processing clock; no bounded watermark,
        so no per-key watermark and no idle advance (as the general engine)."""
        self.key_scope = (defn.watermark.scope == "key" and watermark == "internal"
                          and not self.clock and not self.source)
        self.delay = defn.watermark.delay
        self.keys = KeyTable()
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.key_wm = np.zeros(0, dtype=np.int64)
        self.max_t: int | None = None
        self.wm = WM_NONE
        self.seq = 0
        self.processing_time = 0
        self.idle = defn.watermark.idle_advance and not self.clock and not self.source
        self.idle_base: int | None = None
        """``watermark.idle_advance``: the watermark is ``idle_base + (now - idle_base_pt)``."""
        self.idle_base_pt: int | None = None
        self.key_idle_base = np.zeros(0, dtype=np.int64)
        """``scope: key`` with idle advance: each key's base (``WM_NONE``: none yet); the
        key's watermark is ``base + (now - key_idle_pt)``."""
        self.key_idle_pt = np.zeros(0, dtype=np.int64)
        self.ended = False
        self.store: SliceStore | DenseStore = (
            DenseStore(self.geo, make_aggs(defn))
            if dense_eligible(self.geo, self.key_scope)
            else SliceStore(self.geo, make_aggs(defn))
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
        """Move processing time (never back); with ``watermark.idle_advance`` the watermark
        moves with it (``base + (now - base_pt)``) and fires what it passes."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        return self._tick(now_ms)

    def _tick(self, now_ms: int) -> list[Emission]:
        """Processing time to ``now_ms``; the panes idle advance fires, as objects (they come
        before anything else of the call: docs/semantics.md, "Arrival model")."""
        if self.ended or now_ms <= self.processing_time:
            return []
        self.processing_time = now_ms
        if self.clock:  # the processing clock is the watermark (internal mode)
            if self.mode != "internal" or (self.wm != WM_NONE and now_ms <= self.wm):
                return []
            old = self.wm
            self.wm = now_ms
            return [*fire(self, old, self.wm).to_panes()]
        if self.key_scope:
            has = self.key_idle_base != WM_NONE
            if not has.any():
                return []
            old_k = self.key_wm.copy()
            self.key_wm = np.where(has, self.key_idle_base + (now_ms - self.key_idle_pt),
                                   self.key_wm)
            return [*fire(self, old_k, self.key_wm).to_panes()]
        if self.idle_base is None or self.idle_base_pt is None:
            return []
        old = self.wm
        self.wm = self.idle_base + (now_ms - self.idle_base_pt)
        return [*fire(self, old, self.wm).to_panes()]

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
        out: list[Emission] = []
        if batch.processing_time is not None:
            out = self._tick(batch.processing_time)
        n = len(batch)
        if n == 0:
            return ColumnarOutput(out, self._no_panes())
        try:
            cols = self._columns(batch, n)  # checked before any state changes
        except Unsupported as exc:
            return self._columnar(out + self._hand_over(batch, str(exc)))
        codes = self.keys.encode(batch.keys)
        self._grow_keys()
        t = np.full(n, self.processing_time, dtype=np.int64) if self.clock else batch.event_times
        sl = self.geo.slice_of(t)
        unit: KeyUnit | None = None
        if self.key_scope and n > 1:
            # each record meets its key's watermark as the key's earlier records of the
            # unit moved it (docs/semantics.md, "Arrival model"): a per-key running maximum
            unit = plan_unit(self, codes, t)
            if shares_a_fired_slice(self, unit, codes, sl):
                return self._columnar(out + self._hand_over(
                    batch, "watermark.scope: key: a record shares a hopping slice with a "
                    "window an earlier record of its unit expired"))
            wm_b: I64 | int = unit.before
        elif self.key_scope:
            wm_b = self.key_wm[codes]
        else:
            wm_b = self.wm
        lines: list[Emission] = []
        owners: list[int] = []
        accept = judge(self, codes, t, sl, wm_b, batch, lines if unit is not None else out,
                       owners if unit is not None else None)
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
        if self.mode == "external" or self.clock or self.source:
            # the host's or the source's watermark, or the clock's: records never move it
            return ColumnarOutput(out, self._no_panes())
        if unit is not None:
            return raise_and_fire(self, unit, codes, lines, owners, out)
        if self.key_scope:
            old = self.key_wm.copy()
            if self.wm != WM_INF:
                self.key_wm = np.maximum(self.key_wm, self.key_max_t - self.delay)
                if self.idle:  # a candidate ahead of the key's watermark becomes its base
                    moved = self.key_wm != old
                    self.key_idle_base[moved] = self.key_wm[moved]
                    self.key_idle_pt[moved] = self.processing_time
            return ColumnarOutput(out, fire(self, old, self.key_wm))
        old_wm = self.wm
        candidate = self.max_t - self.delay
        if self.wm != WM_INF and candidate > self.wm:
            self.wm = candidate
            if self.idle:  # a candidate ahead of the watermark becomes the idle base
                self.idle_base, self.idle_base_pt = candidate, self.processing_time
        return ColumnarOutput(out, fire(self, old_wm, self.wm))

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark (never back) when the host drives it (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        return self.advance_watermark_columns(wm_ms).to_emissions()

    def advance_watermark_columns(self, wm_ms: int) -> ColumnarOutput:
        """:meth:`advance_watermark` with the fired windows as columns."""
        if self.general is not None:
            return self._columnar(self.general.advance_watermark(wm_ms))
        if self.mode != "external" and not self.source:
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use watermark='external' to drive it)"
            )
        if self.ended or (self.wm != WM_NONE and wm_ms <= self.wm):
            return ColumnarOutput([], self._no_panes())
        if self.idle:  # the host's watermark is a candidate base
            self.idle_base, self.idle_base_pt = int(wm_ms), self.processing_time
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
            return fire(self, old_k, self.key_wm)
        return fire(self, old, self.wm)

    def _grow_keys(self) -> None:
        extra = len(self.keys) - len(self.key_wm)
        if extra > 0:
            start_wm = WM_INF if self.wm == WM_INF else WM_NONE
            self.key_wm = np.concatenate([self.key_wm, np.full(extra, start_wm, dtype=np.int64)])
            self.key_max_t = np.concatenate(
                [self.key_max_t, np.full(extra, WM_NONE, dtype=np.int64)]
            )
            self.key_idle_base = np.concatenate(
                [self.key_idle_base, np.full(extra, WM_NONE, dtype=np.int64)]
            )
            self.key_idle_pt = np.concatenate(
                [self.key_idle_pt, np.zeros(extra, dtype=np.int64)]
            )

    def _columns(self, batch: RecordBatch, n: int) -> dict[str, Column | None]:
        cols: dict[str, Column | None] = {}
        objects: dict[int, Column] = {}
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
            elif a.fn in OBJECT_FNS:
                # one object column per input column, shared by the aggregations reading it
                same = objects.get(id(raw))
                if same is None:
                    try:
                        same = objects[id(raw)] = value_column(raw, n, batch.event_times)
                    except Unsupported as exc:
                        raise Unsupported(f"column {a.name!r}: {exc}") from None
                cols[a.name] = same
            else:
                cols[a.name] = numeric_column(a.name, raw, n)
        for agg in self.store.aggs[1:]:
            agg.precheck(cols[agg.name])
        return cols

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

    # ------------------------------------------------------------------ snapshot

    def snapshot(self) -> dict[str, Any]:
        """JSON data of the whole state (its own format, tagged ``engine: vectorized``; the
        general engine's format after a hand-over)."""
        if self.general is not None:
            return self.general.state.snapshot()
        return snapshot_data(self)

    def _load(self, d: dict[str, Any]) -> None:
        load_snapshot(self, d)
        if dense_eligible(self.geo, self.key_scope):
            assert isinstance(self.store, SliceStore)
            self.store = DenseStore.from_sparse(self.store, len(self.keys)) or self.store
