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
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.records import Emission, LateRecord, Pane, RecordBatch, key_json
from jobs.engine.vectorized.aggregates import Agg, CountAgg, ExtremeAgg, SumAgg
from jobs.engine.vectorized.geometry import WM_INF, WM_NONE, Geometry
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.qualify import qualification_problems
from jobs.engine.vectorized.store import SliceStore, group_pairs
from jobs.engine.vectorized.values import Column, Unsupported, null_mask, numeric_column

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]


def _make_aggs(defn: Definition) -> list[Agg]:
    out: list[Agg] = []
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
            raise Unsupported("; ".join(problems))
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
        self.processing_time: int | None = None
        self.store = SliceStore(self.geo, _make_aggs(defn))
        self.late_by_key: dict[int, list[int]] = {}
        self.late_by_window: dict[tuple[int, int | None], list[int]] = {}
        if state is not None:
            self._load(state if isinstance(state, dict) else state.snapshot())

    # ------------------------------------------------------------------ public API

    @property
    def max_event_time(self) -> int | None:
        return self.max_t

    @property
    def watermark(self) -> int | None:
        """The (global) watermark; None before any record (minus infinity) or after the end."""
        return None if self.wm in (WM_NONE, WM_INF) else self.wm

    def open_windows(self) -> list[tuple[Any, int | None, int | None]]:
        """(key, start, end) of every window holding state, in emission order."""
        starts, valid = self.geo.window_starts(self.store.start)
        rows = np.repeat(np.arange(len(self.store)), valid.shape[1])[valid.ravel()]
        ws = starts[valid]
        expiry = self.geo.expiry(ws)
        wm = self.key_wm[self.store.key[rows]] if self.key_scope else np.full(len(rows), self.wm)
        alive = expiry > wm
        rows, ws = rows[alive], ws[alive]
        gid = group_pairs(self.store.key[rows], ws)
        first = np.unique(gid, return_index=True)[1]
        k, s = self.store.key[rows[first]], ws[first]
        order = self._order(k, s)
        return [self._window_id(int(k[i]), int(s[i])) for i in order]

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """No processing-time timers or idle advance exist for qualifying definitions."""
        self.processing_time = now_ms
        return []

    def ingest(self, batch: RecordBatch) -> list[Emission]:
        if batch.processing_time is not None:
            self.processing_time = batch.processing_time
        n = len(batch)
        if n == 0:
            return []
        cols = self._columns(batch, n)  # may raise Unsupported before any state changes
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
        if accept is None:
            self.store.add(codes, sl, cols, seq)
        else:
            sub = {name: _subset(c, accept) for name, c in cols.items()}
            self.store.add(codes[accept], sl[accept], sub, seq[accept])
        tmax = int(t.max())
        self.max_t = tmax if self.max_t is None else max(self.max_t, tmax)
        if self.mode == "external":
            return out
        if self.key_scope:
            np.maximum.at(self.key_max_t, codes, t)
            old = self.key_wm.copy()
            if self.wm != WM_INF:
                self.key_wm = np.maximum(self.key_wm, self.key_max_t - self.delay)
            out.extend(self._fire(old, self.key_wm))
        else:
            old_wm = self.wm
            if self.wm != WM_INF:
                self.wm = max(self.wm, self.max_t - self.delay)
            out.extend(self._fire(old_wm, self.wm))
        return out

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        old = self.wm
        self.wm = max(self.wm, int(wm_ms))
        if self.key_scope:
            old_k = self.key_wm.copy()
            self.key_wm = np.maximum(self.key_wm, self.wm)
            return list(self._fire(old_k, self.key_wm))
        return list(self._fire(old, self.wm))

    def end_of_input(self) -> list[Emission]:
        return self.advance_watermark(WM_INF)

    # ------------------------------------------------------------------ internals

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
        # late outputs in arrival order; a record's windows by ascending start
        for r_i, j_row in zip(
            suspect.tolist(), range(len(suspect)), strict=True
        ):
            code = int(codes[r_i])
            for j in range(starts.shape[1] - 1, -1, -1):
                if not (dropped[j_row, j] or late_ok[j_row, j]):
                    continue
                s = int(starts[j_row, j])
                wid = self._window_id(code, s)
                slot = 1 if dropped[j_row, j] else 0
                self.late_by_key.setdefault(code, [0, 0])[slot] += 1
                self.late_by_window.setdefault((code, wid[1]), [0, 0])[slot] += 1
                if dropped[j_row, j]:
                    rec = batch.records[r_i] if batch.records is not None else None
                    out.append(
                        LateRecord(wid[0], int(t[r_i]), wid[1], wid[2], reason, rec)
                    )
        return accept

    def _window_id(self, code: int, start: int) -> tuple[Any, int | None, int | None]:
        key = self.keys.values[code]
        if self.geo.is_global:
            return (key, None, None)
        return (key, start, start + self.geo.size)

    def _order(self, k: I64, s: I64) -> I64:
        """Emission order of windows: by end, then start, then key (canonical JSON)."""
        kj = np.array([key_json(self.keys.values[c]) for c in k.tolist()], dtype=object)
        key_rank = np.argsort(np.argsort(kj, kind="stable"), kind="stable") if len(kj) else kj
        return np.lexsort((key_rank, s))

    def _fire(self, old: I64 | int, new: I64 | int) -> list[Emission]:
        """Emit every window whose expiry lies in (old, new]; drop slices no longer needed."""
        store = self.store
        if len(store) == 0:
            return []
        if self.key_scope:
            assert isinstance(old, np.ndarray) and isinstance(new, np.ndarray)
            o_rows, n_rows = old[store.key], new[store.key]
        else:
            if new == old:
                return []
            o_rows = np.full(len(store), old, dtype=np.int64)
            n_rows = np.full(len(store), new, dtype=np.int64)
        starts, valid = self.geo.window_starts(store.start)
        exp = self.geo.expiry(starts.ravel()).reshape(starts.shape)
        fire = valid & (exp > o_rows[:, None]) & (exp <= n_rows[:, None])
        emitted: list[Emission] = []
        if fire.any():
            rows = np.repeat(np.arange(len(store)), starts.shape[1])[fire.ravel()]
            ws = starts[fire]
            if self.geo.slices_per_window == 1:
                k, s = store.key[rows], ws
                values = [agg.values(rows) for agg in store.aggs]
            else:
                gid = group_pairs(store.key[rows], ws)
                first = np.unique(gid, return_index=True)[1]
                k, s = store.key[rows[first]], ws[first]
                g = self.geo.slice_width
                offs = np.arange(self.geo.slices_per_window, dtype=np.int64) * g
                qs = (s[:, None] + offs[None, :]).ravel()
                qk = np.repeat(k, len(offs))
                idx = store.lookup(qk, qs).reshape(len(k), len(offs))
                values = [agg.combine(idx) for agg in store.aggs]
            order = self._order(k, s)
            names = [a.name for a in store.aggs]
            wm_out = n_rows if self.key_scope else None
            emitted_at = self.processing_time if self.processing_time is not None else 0
            kl, sl = k.tolist(), s.tolist()
            for i in order.tolist():
                code = kl[i]
                key, ws_i, we_i = self._window_id(code, sl[i])
                wm_i = int(self.key_wm[code]) if wm_out is not None else int(self.wm)
                emitted.append(
                    Pane(
                        key=key, window_start=ws_i, window_end=we_i, timing="ON_TIME",
                        pane_index=0, is_first=True, is_last=True, retraction=False,
                        values={nm: vals[i] for nm, vals in zip(names, values, strict=True)},
                        emitted_at=emitted_at,
                        watermark=None if wm_i in (WM_INF, WM_NONE) else wm_i,
                    )
                )
        last_exp = exp[:, 0]
        store.keep(last_exp > n_rows)
        return emitted

    # ------------------------------------------------------------------ snapshot

    def snapshot(self) -> dict[str, Any]:
        return {
            "engine": "vectorized",
            "keys": list(self.keys.values),
            "key_max_t": self.key_max_t.tolist(),
            "key_wm": self.key_wm.tolist(),
            "max_t": self.max_t,
            "wm": self.wm,
            "seq": self.seq,
            "processing_time": self.processing_time,
            "store": self.store.dump(),
            "late_by_key": [[c, a, d] for c, (a, d) in self.late_by_key.items()],
            "late_by_window": [[c, s, a, d] for (c, s), (a, d) in self.late_by_window.items()],
        }

    def _load(self, d: dict[str, Any]) -> None:
        self.keys = KeyTable(d["keys"])
        self.key_max_t = np.asarray(d["key_max_t"], dtype=np.int64)
        self.key_wm = np.asarray(d["key_wm"], dtype=np.int64)
        self.max_t = d["max_t"]
        self.wm = int(d["wm"])
        self.seq = int(d["seq"])
        self.processing_time = d["processing_time"]
        self.store.load(d["store"])
        self.late_by_key = {int(c): [int(a), int(b)] for c, a, b in d["late_by_key"]}
        self.late_by_window = {(int(c), s): [int(a), int(b)] for c, s, a, b in d["late_by_window"]}
