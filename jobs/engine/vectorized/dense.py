"""The dense slice store: one *slot* per live slice, one cell per (slot, key code).

Why: the sparse :class:`~jobs.engine.vectorized.store.SliceStore` has to find the row of every
(key, slice) pair of a batch (a hash grouping over the store and the batch) and, when hopping
windows fire, the rows of every slice of every fired window (a hash lookup). When few slices
are alive at once (a window is a handful of slices and the watermark keeps up), a row's position
can simply be computed: ``cell = slot * cap + key code``. A batch is then folded with no
grouping at all, and a fired window's slices are the cells of a few slots in the key's column.
The aggregates are the same classes over the flat cell arrays (a cell nobody wrote holds the
aggregate's empty values, which every ``combine`` treats exactly like an absent slice), so the
output is bit for bit the one of the sparse store.

Limits: ``n_slots * cap`` cells are held whether the keys are there or not, so the store is
used only while that stays under :data:`DENSE_MAX_CELLS` (the engine converts it to the sparse
store for good otherwise), for a global watermark (per-key watermarks expire slices key by key)
and for windows of at most :data:`DENSE_MAX_SLICES` slices.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.vectorized.aggregates import Agg, CountAgg, RowCounts
from jobs.engine.vectorized.geometry import Geometry
from jobs.engine.vectorized.side_tables import SideTable
from jobs.engine.vectorized.store import SliceStore
from jobs.engine.vectorized.values import Column

I64 = NDArray[np.int64]

DENSE_MAX_CELLS = 1 << 20
"""Most cells (slots x key capacity) the dense store holds (~40 MB with sum + count)."""
DENSE_MAX_SLICES = 16
"""Most slices per window (and windows per slice) for which the dense store is used."""
MIN_CAP = 64
RANGE_TABLE = 1 << 16
"""A batch's slices are mapped to slots through a table over their index range up to this."""


def dense_eligible(geo: Geometry, key_scope: bool) -> bool:
    return not key_scope and (
        geo.is_global
        or (geo.slices_per_window <= DENSE_MAX_SLICES and geo.windows_per_slice <= DENSE_MAX_SLICES)
    )


def _max_cells() -> int:
    return DENSE_MAX_CELLS  # read at call time (tests lower it)


class DenseStore:
    """Slices as slots of a (slots x keys) grid of cells; see the module docstring."""

    def __init__(self, geometry: Geometry, aggs: list[Agg]) -> None:
        self.geo = geometry
        self.aggs = aggs
        self.cap = 0
        """Key capacity: cells per slot (key codes are < cap)."""
        self.slot_start = np.zeros(0, dtype=np.int64)
        """Slice start of each slot (meaningless for free slots)."""
        self.slot_of: dict[int, int] = {}
        """Slice start -> slot, for the live slots."""
        self.free: list[int] = []

    @property
    def n_slots(self) -> int:
        return len(self.slot_start)

    def live_slots(self) -> I64:
        return np.fromiter(self.slot_of.values(), dtype=np.int64, count=len(self.slot_of))

    @property
    def elements(self) -> I64:
        """Records per cell (the hidden count aggregate, always ``aggs[0]``)."""
        count = self.aggs[0]
        assert isinstance(count, CountAgg)
        return count.n

    # ------------------------------------------------------------------ layout

    def _target_cap(self, n_keys: int, n_slots: int) -> int | None:
        """Key capacity for ``n_keys`` keys over ``n_slots`` slots (doubling, to re-lay out
        rarely), None if even an exact fit exceeds the cell budget."""
        if n_keys <= self.cap:
            cap = self.cap
        else:
            cap = max(n_keys, 2 * self.cap, MIN_CAP)
            if cap * n_slots > _max_cells():
                cap = max(n_keys, self.cap)
        return None if cap * n_slots > _max_cells() else cap

    def _set_cap(self, cap: int) -> None:
        if cap == self.cap:
            return
        old_cap = max(self.cap, 1)  # no cells (and no entries) while the capacity is 0

        def moved(r: I64) -> I64:
            return (r // old_cap) * cap + r % old_cap

        for agg in self.aggs:
            if isinstance(agg, SideTable):
                agg.map_rows(moved, self.n_slots * cap)
            for name, fill in agg.PARTS:
                old = getattr(agg, name)
                new = np.full((self.n_slots, cap), fill, dtype=old.dtype)
                new[:, : self.cap] = old.reshape(self.n_slots, self.cap)
                setattr(agg, name, new.ravel())
        self.cap = cap

    def _grow_slots(self, extra: int) -> None:
        n_old = self.n_slots
        self.slot_start = np.concatenate([self.slot_start, np.zeros(extra, dtype=np.int64)])
        for agg in self.aggs:
            agg.extend(extra * self.cap)
        self.free.extend(range(n_old + extra - 1, n_old - 1, -1))  # pop() gives n_old first

    def _slots_for(self, s: I64, n_keys: int) -> I64 | None:
        """Slot of each slice start, allocating slots for new slices; None (nothing changed)
        when the cells would exceed the budget."""
        g = self.geo.slice_width
        align = self.geo.align
        idx = (s - align) // g
        lo, hi = int(idx.min()), int(idx.max())
        if hi - lo < RANGE_TABLE:
            seen = np.zeros(hi - lo + 1, dtype=bool)
            seen[idx - lo] = True
            uniq = np.flatnonzero(seen)
            starts = (align + (uniq + lo) * g).tolist()
            inverse = None
        else:
            u, inv = np.unique(idx, return_inverse=True)
            starts = (align + u * g).tolist()
            inverse = np.asarray(inv, dtype=np.int64).reshape(-1)
        missing = [x for x in starts if x not in self.slot_of]
        cap = self._target_cap(n_keys, self.n_slots + max(0, len(missing) - len(self.free)))
        if cap is None:
            return None
        self._set_cap(cap)
        if len(missing) > len(self.free):
            self._grow_slots(len(missing) - len(self.free))
        for x in missing:
            slot = self.free.pop()
            self.slot_of[x] = slot
            self.slot_start[slot] = x
        slots = np.array([self.slot_of[x] for x in starts], dtype=np.int64)
        if inverse is None:
            table = np.zeros(hi - lo + 1, dtype=np.int64)
            table[uniq] = slots
            return table[idx - lo]
        return slots[inverse]

    def release(self, slots: I64) -> None:
        """Empty the cells of these slots and make them free."""
        cap = self.cap
        for slot in slots.tolist():
            del self.slot_of[int(self.slot_start[slot])]
            self.free.append(slot)
            for agg in self.aggs:
                for name, fill in agg.PARTS:
                    getattr(agg, name)[slot * cap : (slot + 1) * cap] = fill
        for agg in self.aggs:
            if isinstance(agg, SideTable):
                agg.map_rows(lambda r: np.where(np.isin(r // cap, slots), -1, r), agg.n)

    # ------------------------------------------------------------------ store API

    def add(self, k: I64, s: I64, cols: dict[str, Column | None], seq: I64, n_keys: int) -> bool:
        """Fold records into their cells; False (nothing changed) if they do not fit."""
        if len(k) == 0:
            return True
        slots = self._slots_for(s, n_keys)
        if slots is None:
            return False
        cells = slots * self.cap + k
        n_cells = self.n_slots * self.cap
        counts = RowCounts(cells, n_cells)
        for agg in self.aggs:
            agg.apply(cells, cols.get(agg.name), seq, n_cells, counts)
        return True

    def to_sparse(self) -> SliceStore:
        """The same state as a sparse store: a row per non-empty cell, ordered by slice start
        then key code."""
        sp = SliceStore(self.geo, [copy.copy(a) for a in self.aggs])
        if self.cap == 0:
            for agg in sp.aggs:
                agg.take(np.zeros(0, dtype=np.int64))
            return sp
        flat = np.flatnonzero(self.elements > 0)
        key = flat % self.cap
        start = self.slot_start[flat // self.cap]
        order = np.lexsort((key, start))
        flat = flat[order]
        sp.key, sp.start = key[order], start[order]
        for agg in sp.aggs:
            agg.take(flat)  # copies: take() rebinds the arrays, the dense ones stay
        return sp

    @classmethod
    def from_sparse(cls, sp: SliceStore, n_keys: int) -> DenseStore | None:
        """A dense store holding the sparse store's rows; None if it would not fit."""
        d = cls(sp.geo, [copy.copy(a) for a in sp.aggs])
        for agg in d.aggs:
            agg.take(np.zeros(0, dtype=np.int64))
        n_keys = max(n_keys, int(sp.key.max()) + 1 if len(sp) else 0, MIN_CAP)
        d._set_cap(n_keys)
        if len(sp) == 0:
            return d
        slots = d._slots_for(sp.start, n_keys)
        if slots is None:
            return None
        cells = slots * d.cap + sp.key
        for dense_agg, sparse_agg in zip(d.aggs, sp.aggs, strict=True):
            if isinstance(dense_agg, SideTable):
                assert isinstance(sparse_agg, SideTable)
                dense_agg.absorb(sparse_agg, cells)
            for name, _ in dense_agg.PARTS:
                getattr(dense_agg, name)[cells] = getattr(sparse_agg, name)
        return d

    def dump(self) -> dict[str, Any]:
        return self.to_sparse().dump()
