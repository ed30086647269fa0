"""``scope: key`` arrival units of several records on the arrays.

Within a unit each record is judged against its key's watermark as the key's earlier records
of the unit left it, then moves it, and what the move passes fires before the next record
(docs/semantics.md, "Arrival model"). With final panes on fixed windows that is a per-key
running maximum: record ``j`` meets ``max(key watermark before the unit, candidates of the
key's earlier records)``. Every record accepted into a window arrives before the record whose
move expires it (a later one would meet an expired window and be dropped), so folding the
whole unit in and firing once from the old to the new key watermarks gives each pane its
exact contents; each pane is then attributed to the first record of its key whose watermark
reached the window's expiry, which fixes its place in the output and its ``watermark``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import Emission
from jobs.engine.vectorized.columns import ColumnarOutput, FinalPanes

if TYPE_CHECKING:
    from jobs.engine.vectorized.engine import VectorizedEngine

I64 = NDArray[np.int64]


@dataclasses.dataclass
class KeyUnit:
    """The records of one unit in (key, arrival) order and the key watermarks they meet."""

    order: I64
    """Arrival indices sorted by key code, stably (so arrival order within a key)."""
    seg: I64
    """Per sorted record, the index of its key among the unit's keys."""
    last: I64
    """Sorted positions of each key's last record."""
    after: I64
    """Per sorted record, its key's watermark once the record moved it."""
    before: I64
    """Per record in arrival order, the key watermark it is judged against."""


def plan_unit(eng: VectorizedEngine, codes: I64, t: I64) -> KeyUnit:
    n = len(t)
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sc[1:] != sc[:-1]
    seg = np.cumsum(first) - 1
    cand = t[order] - eng.delay
    # running maximum per key: ranks offset by the key's segment never mix two keys
    uniq, rank = np.unique(cand, return_inverse=True)
    m = len(uniq)
    running = uniq[np.maximum.accumulate(seg * m + rank.ravel()) - seg * m]
    wm0 = eng.key_wm[sc]
    after = np.maximum(wm0, running)
    prev = np.empty_like(after)
    prev[0] = wm0[0]
    prev[1:] = after[:-1]
    before_sorted = np.where(first, wm0, prev)
    before = np.empty(n, dtype=np.int64)
    before[order] = before_sorted
    last = np.flatnonzero(np.append(first[1:], True))
    return KeyUnit(order, seg, last, after, before)


def raise_and_fire(
    eng: VectorizedEngine, unit: KeyUnit, codes: I64, lines: list[Emission],
    owners: list[int], before: list[Emission],
) -> ColumnarOutput:
    """Move each key's watermark to where its last record left it, fire what the moves pass,
    and order the output per record: its late lines, then the panes it fired."""
    from jobs.engine.vectorized.firing import fire

    old = eng.key_wm.copy()
    kc = codes[unit.order[unit.last]]
    eng.key_wm[kc] = np.maximum(old[kc], unit.after[unit.last])
    if eng.idle:  # a candidate ahead of the key's watermark becomes its base
        moved = kc[eng.key_wm[kc] != old[kc]]
        eng.key_idle_base[moved] = eng.key_wm[moved]
        eng.key_idle_pt[moved] = eng.processing_time
    panes = fire(eng, old, eng.key_wm)
    if len(panes) == 0:
        return ColumnarOutput(before + lines, panes)
    panes, fired_by = _attribute(eng, unit, codes, panes)
    if not lines or max(owners) <= int(fired_by.min()):
        return ColumnarOutput(before + lines, panes)
    objs = panes.to_panes()
    tagged = sorted(
        [(o, 0, i) for i, o in enumerate(owners)]
        + [(int(r), 1, i) for i, r in enumerate(fired_by.tolist())]
    )
    merged = [lines[i] if kind == 0 else objs[i] for _, kind, i in tagged]
    return ColumnarOutput.of_emissions(before + merged, eng._agg_names(), eng.geo.size,
                                       eng.processing_time)


def _attribute(
    eng: VectorizedEngine, unit: KeyUnit, codes: I64, panes: FinalPanes
) -> tuple[FinalPanes, I64]:
    """The panes in record order (stable: by end, key, start within a record), each with the
    watermark of the record that fired it; and that record's arrival index per pane."""
    n = len(unit.after)
    k = panes.key_codes
    starts = panes.window_start
    exp = eng.geo.expiry(np.zeros(len(k), dtype=np.int64) if starts is None else starts)
    uniq, inv = np.unique(np.concatenate([unit.after, exp]), return_inverse=True)
    inv = inv.ravel()
    m = len(uniq)
    seg_of = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
    seg_of[codes[unit.order[unit.last]]] = unit.seg[unit.last]
    rec_key = unit.seg * m + inv[:n]  # non-decreasing: by key, then by watermark
    pos = np.searchsorted(rec_key, seg_of[k] * m + inv[n:], side="left")
    fired_by = unit.order[pos]
    perm = np.argsort(fired_by, kind="stable")
    out = dataclasses.replace(
        panes, key_codes=k[perm], window_start=None if starts is None else starts[perm],
        watermark=unit.after[pos][perm],
        values={name: v[perm] for name, v in panes.values.items()},
    )
    return out, fired_by[perm]


def shares_a_fired_slice(eng: VectorizedEngine, unit: KeyUnit, codes: I64, sl: I64) -> bool:
    """Whether a record would be folded into a slice of a window that an earlier record of
    its unit expired (hopping windows: the record is dropped for that window but accepted into
    a later one sharing the slice, and the window fires in this unit). The single firing
    would then count the record in the expired window; the caller hands the unit over."""
    if eng.geo.slices_per_window == 1:
        return False
    starts, valid = eng.geo.window_starts(sl)
    exp = eng.geo.expiry(starts.ravel()).reshape(starts.shape)
    before = unit.before[:, None]
    hit = valid & (exp > eng.key_wm[codes][:, None]) & (exp <= before)
    return bool((hit.any(axis=1) & (exp[:, 0] > unit.before)).any())
