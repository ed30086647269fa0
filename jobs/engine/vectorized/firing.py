"""Firing in the vectorized engine: every window whose expiry a watermark move crosses, as
:class:`~jobs.engine.vectorized.columns.FinalPanes` columns in the general engine's emission
order (window end, key JSON, window start), and the slices no window needs any more dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.vectorized.columns import FinalPanes
from jobs.engine.vectorized.dense import DenseStore
from jobs.engine.vectorized.store import first_occurrences, group_pairs

if TYPE_CHECKING:
    from jobs.engine.vectorized.engine import VectorizedEngine

I64 = NDArray[np.int64]


def _order(eng: VectorizedEngine, k: I64, s: I64) -> I64:
    """Emission order of windows firing together, as the general engine: by window end,
    then key JSON, then window start."""
    if len(k) <= 1:
        return np.arange(len(k))
    return np.lexsort((s, eng.keys.json_rank()[k], eng.geo.window_end(s)))


def fire(eng: VectorizedEngine, old: I64 | int, new: I64 | int) -> FinalPanes:
    """Emit every window whose expiry lies in (old, new]; drop slices no longer needed."""
    store = eng.store
    if isinstance(store, DenseStore):
        assert not isinstance(old, np.ndarray) and not isinstance(new, np.ndarray)
        return _fire_dense(eng, store, int(old), int(new))
    if len(store) == 0:
        return eng._no_panes()
    if eng.key_scope:
        assert isinstance(old, np.ndarray) and isinstance(new, np.ndarray)
        o_rows, n_rows = old[store.key], new[store.key]
    else:
        if new == old:
            return eng._no_panes()
        o_rows = np.full(len(store), old, dtype=np.int64)
        n_rows = np.full(len(store), new, dtype=np.int64)
    starts, valid = eng.geo.window_starts(store.start)
    exp = eng.geo.expiry(starts.ravel()).reshape(starts.shape)
    fire = valid & (exp > o_rows[:, None]) & (exp <= n_rows[:, None])
    emitted = eng._no_panes()
    if fire.any():
        rows = np.repeat(np.arange(len(store)), starts.shape[1])[fire.ravel()]
        ws = starts[fire]
        if eng.geo.slices_per_window == 1:
            k, s = store.key[rows], ws
            order = _order(eng, k, s)
            rows, k, s = rows[order], k[order], s[order]
            values = [agg.values_array(rows) for agg in store.aggs[1:]]
        else:
            gid = group_pairs(store.key[rows], ws)
            first = first_occurrences(gid)
            k, s = store.key[rows[first]], ws[first]
            order = _order(eng, k, s)
            k, s = k[order], s[order]
            idx = eng._slices_of(k, s, store)
            values = [agg.combine_array(idx) for agg in store.aggs[1:]]
        emitted = _final(eng, k, s, values)
    last_exp = exp[:, 0]
    store.keep(last_exp > n_rows)
    return emitted


def _codes_by_rank(eng: VectorizedEngine) -> I64:
    """Key codes in key-JSON order (the inverse of ``json_rank``), cached per key count."""
    n = len(eng.keys)
    if len(eng._by_rank) != n:
        by_rank = np.empty(n, dtype=np.int64)
        by_rank[eng.keys.json_rank()] = np.arange(n, dtype=np.int64)
        eng._by_rank = by_rank
    return eng._by_rank


def _fire_dense(eng: VectorizedEngine, store: DenseStore, old: int, new: int) -> FinalPanes:
    """``fire`` on the dense store (global watermark): the fired window starts are found
    from the few live slots; each fired window's keys are the non-empty cells of its slots,
    taken in key-JSON order, so no sort or lookup is needed."""
    if new == old or not store.slot_of:
        return eng._no_panes()
    geo = eng.geo
    live = store.live_slots()
    ss = store.slot_start[live]
    starts, valid = geo.window_starts(ss)
    exp = geo.expiry(starts.ravel()).reshape(starts.shape)
    fire = valid & (exp > old) & (exp <= new)
    emitted = eng._no_panes()
    if fire.any():
        cap = store.cap
        spw = geo.slices_per_window
        elements = store.elements.reshape(store.n_slots, cap)
        by_rank = _codes_by_rank(eng)
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
        emitted = _final(eng, k, s, values)
    last_exp = exp[:, 0]
    dead = live[last_exp <= new]
    if len(dead):
        store.release(dead)
    return emitted


def _final(eng: VectorizedEngine, k: I64, s: I64, values: list[NDArray[Any]]) -> FinalPanes:
    """The fired windows (k, s), already in emission order, as columns: no per-window
    Python work at all (objects are built only if the caller asks, ``to_panes``)."""
    wm = eng.key_wm[k] if eng.key_scope else np.full(len(k), eng.wm, dtype=np.int64)
    names = eng._agg_names()
    return FinalPanes(
        key_codes=k, key_table=eng.keys, window_start=None if eng.geo.is_global else s,
        window_size=eng.geo.size, watermark=wm,
        values=dict(zip(names, values, strict=True)), emitted_at=eng.processing_time,
    )

# ------------------------------------------------------------------ snapshot
