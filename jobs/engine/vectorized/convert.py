"""Vectorized state -> the general engine's :class:`~jobs.engine.state.EngineState`.

Why: the fast path refuses input it cannot aggregate exactly (min/max over strings, booleans,
NaN, integers beyond what float64/int64 hold). Rather than fail a job the general engine would
run, the vectorized engine converts its state and hands over, once and for good. The
conversion builds one ``WindowState`` per open window (combining slices for hopping windows),
with the accumulators ``jobs.engine.aggregates`` uses. Fields that never influence the output
of a final-emission fixed window (``first_t``/``last_t``, ``born_late``) are filled with what
is known (``None`` / ``False``): a converted state is observably equivalent to a native one,
not byte-identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from jobs.engine.records import key_json
from jobs.engine.state import EngineState, KeyState, WindowState, window_id
from jobs.engine.vectorized.aggregates import CountAgg, ExtremeAgg, SumAgg
from jobs.engine.vectorized.geometry import WM_INF, WM_NONE
from jobs.engine.vectorized.ordered import OrderedAgg
from jobs.engine.vectorized.side_tables import SideTable
from jobs.engine.vectorized.store import first_occurrences, group_pairs

if TYPE_CHECKING:
    from jobs.engine.vectorized.engine import VectorizedEngine

GLOBAL_CLOSE = 2**63 - 1
"""The general engine's ``close`` of the global window (only end of input reaches it); the
hand-over differential test fails if the two ever disagree."""


def _wm(v: int) -> int | None:
    return None if v in (WM_NONE, WM_INF) else int(v)


def to_engine_state(eng: VectorizedEngine) -> EngineState:
    store = eng._sparse_store()
    st = EngineState(
        processing_time=eng.processing_time,
        watermark=None if eng.key_scope else _wm(eng.wm),
        ended=eng.ended,
        max_event_time=eng.max_t,
        seq=eng.seq,
        idle_base=None if eng.key_scope else eng.idle_base,
        idle_base_pt=None if eng.key_scope else eng.idle_base_pt,
        late_deltas={k: list(v) for k, v in eng.late_deltas.items()},
    )
    keys = eng.keys.values

    def key_state(code: int) -> KeyState:
        kj = key_json(keys[code])
        ks = st.keys.get(kj)
        if ks is None:
            ks = st.keys[kj] = KeyState(key=keys[code])
            kmax = int(eng.key_max_t[code]) if code < len(eng.key_max_t) else WM_NONE
            ks.max_event_time = None if kmax == WM_NONE else kmax
            if eng.key_scope:
                ks.watermark = _wm(int(eng.key_wm[code]))
                if code < len(eng.key_idle_base) and eng.key_idle_base[code] != WM_NONE:
                    ks.idle_base = int(eng.key_idle_base[code])
                    ks.idle_base_pt = int(eng.key_idle_pt[code])
            tot = eng.late_totals_by_key.get(kj)
            if tot is not None:
                ks.late_accepted, ks.late_dropped = int(tot[1]), int(tot[2])
        return ks

    if eng.key_scope:
        for code in range(len(keys)):
            key_state(code)
    for tot in eng.late_totals_by_key.values():
        key_state(eng.keys.code_of(tot[0]))
    if len(store) == 0 or eng.ended:
        return st
    starts, valid = eng.geo.window_starts(store.start)
    rows = np.repeat(np.arange(len(store)), valid.shape[1])[valid.ravel()]
    ws = starts[valid]
    wm = eng.key_wm[store.key[rows]] if eng.key_scope else np.full(len(rows), eng.wm)
    alive = eng.geo.expiry(ws) > wm
    rows, ws = rows[alive], ws[alive]
    if len(rows) == 0:
        return st
    gid = group_pairs(store.key[rows], ws)
    first = first_occurrences(gid)
    k, s = store.key[rows[first]], ws[first]
    idx = eng._slices_of(k, s, store)
    accs = [_accs(agg, idx) for agg in store.aggs]
    elements = accs[0]
    wm_k = eng.key_wm[k] if eng.key_scope else np.full(len(k), eng.wm)
    for i, (code, start) in enumerate(zip(k.tolist(), s.tolist(), strict=True)):
        ks = key_state(code)
        if eng.geo.is_global:
            w_start: int | None = None
            w_end: int | None = None
            close = GLOBAL_CLOSE
        else:
            w_start, w_end = start, start + eng.geo.size
            close = start + eng.geo.size
        n = int(elements[i])
        ks.windows[window_id(w_start)] = WindowState(
            start=w_start, end=w_end, close=close, accs=[a[i] for a in accs[1:]],
            elements=n, pending=n, passed=bool(wm_k[i] >= close),
        )
    return st


def _accs(agg: Any, idx: np.ndarray[Any, Any]) -> list[Any]:
    """Per window, the accumulator ``jobs.engine.aggregates`` would hold."""
    if isinstance(agg, (OrderedAgg, SideTable)):
        return agg.engine_accs(idx)
    if isinstance(agg, CountAgg):
        return agg.combine(idx)
    if isinstance(agg, SumAgg):
        if not agg.mean:
            return agg.combine(idx)
        present = idx >= 0
        safe = np.where(present, idx, 0)
        nn = np.where(present, agg.nn[safe], 0).sum(axis=1).tolist()
        sums = SumAgg(agg.name, mean=False)
        sums.isum, sums.fsum, sums.has_float, sums.nn = agg.isum, agg.fsum, agg.has_float, agg.nn
        return [[t, c] for t, c in zip(sums.combine(idx), nn, strict=True)]
    assert isinstance(agg, ExtremeAgg)
    return agg.combine(idx)
