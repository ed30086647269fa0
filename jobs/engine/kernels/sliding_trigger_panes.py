"""The panes of the sliding trigger engine (:mod:`.sliding_triggers`) as columns
(:class:`~jobs.engine.vectorized.emission_columns.PaneColumns`), built from the kernels' pane
rows of every key of one engine call at once.

Why: a ``Pane`` object per row cost more than the kernels. Here each field is one column over
all rows: the values per aggregation (:func:`.sliding_trigger_values.value_columns`), a
retraction's source row (the window's previous pane in the same call, else its last pane from
the state, ``KeyArrays.lp``: one lookup per window). The object API is the columns'
``to_panes()``. Only the last pane of each window is written back to the state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels.sliding_trigger_side import member_values
from jobs.engine.kernels.sliding_trigger_values import value_columns
from jobs.engine.vectorized.aggregates import object_array
from jobs.engine.vectorized.emission_columns import PaneColumns
from jobs.engine.vectorized.geometry import WM_NONE
from jobs.engine.vectorized.keys import KeyTable

if TYPE_CHECKING:
    from jobs.engine.kernels.sliding_triggers import KeyArrays, SlidingTriggerEngine

I64 = NDArray[np.int64]
TIMINGS: tuple[str, str, str] = ("EARLY", "ON_TIME", "LATE")
TIMING_CODE = {t: i for i, t in enumerate(TIMINGS)}


class PaneRows:
    """The pane rows of a kernel pass: ``PR`` / ``PW`` / ``PF`` (``n`` rows), the key of
    each (``kas``, one key, or ``kas[pk[i]]`` for row ``i`` of a pass over many keys), the
    side aggregations' outputs (``members``: ``side_outputs``' ``CNT``, ``REFS``) and the
    watermark each pane shows (``wms``, else ``wm`` for all)."""

    __slots__ = ("PF", "PR", "PW", "kas", "members", "pk", "wm", "wms")

    def __init__(self, ka: KeyArrays | list[KeyArrays], PR: I64, PW: I64,
                 PF: NDArray[np.float64], members: tuple[I64, I64] | None, wm: int | None,
                 wms: list[int | None] | None = None, pk: I64 | None = None) -> None:
        self.kas = ka if isinstance(ka, list) else [ka]
        self.pk = pk if pk is not None else np.zeros(len(PR), dtype=np.int64)
        self.PR, self.PW, self.PF = PR, PW, PF
        self.members, self.wm, self.wms = members, wm, wms


def part_keys(parts: Sequence[PaneRows]) -> list[KeyArrays]:
    """The keys of ``parts``, in order (:func:`build_panes` gives each row's index here)."""
    return [ka for p in parts for ka in p.kas]


def build_panes(eng: SlidingTriggerEngine, parts: Sequence[PaneRows]
                ) -> tuple[PaneColumns, I64, I64]:
    """Every pane row of ``parts`` as pane columns, rows in ``parts`` order, each pane preceded
    by its retraction (retracting mode); the windows' last panes are written to their keys'
    ``lp``. Returns the columns, the (concatenated) row of each emission and the key of
    each row (its index in :func:`part_keys`)."""
    counts = np.array([len(p.PR) for p in parts], dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return empty_panes(eng), z, z
    PR = np.concatenate([p.PR for p in parts])
    PW = np.concatenate([p.PW for p in parts])
    PF = np.concatenate([p.PF for p in parts])
    cols = value_columns(eng._names, eng._fns,
                         [(eng.objs, 0, n)],
                         PW, PF)
    if eng._side:
        side: dict[str, list[Any]] = {}
        for p in parts:
            if p.members is None or not len(p.PR):
                continue
            for name, col in member_values(eng, eng.objs, *p.members, len(p.PR)).items():
                side.setdefault(name, []).extend(col)
        cols.update(side)
    cols = {name: cols[name] for name in eng._names}  # definition order
    kas = part_keys(parts)
    base = np.cumsum([0] + [len(p.kas) for p in parts])[:-1]
    part = np.concatenate([p.pk + b for p, b in zip(parts, base.tolist(), strict=True)])
    codes = key_codes(eng._out_keys, kas)
    wm_list: list[int | None] = []
    for p in parts:
        wm_list.extend(p.wms if p.wms is not None else [p.wm] * len(p.PR))
    wms = np.array([WM_NONE if w is None else w for w in wm_list], dtype=np.int64)
    starts = PR[:, K.P_START]
    timing = PR[:, K.P_TIMING]
    index = PR[:, K.P_INDEX]
    first_t, last_t = PW[:, K.W_FIRST], PW[:, K.W_LAST]
    has_ret = np.zeros(n, dtype=np.bool_)
    r_timing = r_index = r_first = r_last = np.zeros(0, dtype=np.int64)
    values = {name: object_array(col) for name, col in cols.items()}
    r_values = {name: np.empty(0, dtype=object) for name in cols}
    if eng._retracting:
        has_ret, r_timing, r_index, r_first, r_last, r_values = _retractions(
            eng, kas, part, PR, PW, values)
    n_ret = int(has_ret.sum())
    total = n + n_ret
    pos = np.arange(n, dtype=np.int64) + np.cumsum(has_ret)
    rpos = pos[has_ret] - 1
    row_of = np.empty(total, dtype=np.int64)
    row_of[pos] = np.arange(n, dtype=np.int64)
    row_of[rpos] = np.flatnonzero(has_ret)
    is_ret = np.zeros(total, dtype=np.bool_)
    is_ret[rpos] = True

    def merged(pane_col: I64, ret_col: I64) -> I64:
        out = np.empty(total, dtype=np.int64)
        out[pos] = pane_col
        out[rpos] = ret_col
        return out

    def merged_values(pane_vals: NDArray[Any], ret_vals: NDArray[Any]) -> NDArray[Any]:
        out = np.empty(total, dtype=object)
        out[pos] = pane_vals
        out[rpos] = ret_vals
        return typed_column(out.tolist())

    em_index = merged(index, r_index)
    em_starts = starts[row_of]
    em_last = np.zeros(total, dtype=np.bool_)
    em_last[pos] = PR[:, K.P_LAST] != 0
    pc = PaneColumns(
        codes[part[row_of]], eng._out_keys, em_starts, em_starts + eng._size,
        merged(timing, r_timing).astype(np.int8), em_index, em_index == 0, em_last, is_ret,
        {name: merged_values(col, r_values[name]) for name, col in values.items()},
        np.full(total, eng.processing_time, dtype=np.int64), wms[row_of],
        merged(first_t, r_first), merged(last_t, r_last))
    return pc, row_of, part


def key_code(table: KeyTable, ka: KeyArrays) -> int:
    """The code of ``ka``'s key in the engine's output key table (given on first use)."""
    if ka.code < 0:
        ka.code = table.code_of(ka.key)
    return ka.code


def key_codes(table: KeyTable, kas: Sequence[KeyArrays]) -> I64:
    """:func:`key_code` of each of ``kas``; the keys without one are coded in bulk."""
    codes = np.array([ka.code for ka in kas], dtype=np.int64)
    new = np.flatnonzero(codes < 0)
    if len(new):
        codes[new] = table.encode([kas[i].key for i in new.tolist()])
        for i, c in zip(new.tolist(), codes[new].tolist(), strict=True):
            kas[i].code = c
    return codes


def typed_column(values: list[Any]) -> NDArray[Any]:
    """An int64 or float64 array when every value is a Python int (within 64 bits) or float,
    else an object array of the values (``PaneColumns.values``)."""
    kinds = set(map(type, values))
    if kinds == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return object_array(values)
    if kinds == {float}:
        return np.array(values, dtype=np.float64)
    return object_array(values)


def empty_panes(eng: SlidingTriggerEngine) -> PaneColumns:
    z = np.zeros(0, dtype=np.int64)
    f = np.zeros(0, dtype=np.bool_)
    return PaneColumns(z, eng._out_keys, z, z, np.zeros(0, dtype=np.int8), z, f, f, f,
                       {name: z for name in eng._names}, z, z, z, z)


def take(pc: PaneColumns, idx: I64) -> PaneColumns:
    """The rows ``idx`` of ``pc``, in that order."""
    def at(col: Any) -> Any:
        return None if col is None else col[idx]

    return PaneColumns(
        pc.key_codes[idx], pc.key_table, at(pc.window_start), at(pc.window_end),
        pc.timing[idx], pc.pane_index[idx], pc.is_first[idx], pc.is_last[idx],
        pc.retraction[idx], {name: col[idx] for name, col in pc.values.items()},
        pc.emitted_at[idx], pc.watermark[idx], at(pc.first_event_time),
        at(pc.last_event_time))


def concat(a: PaneColumns, b: PaneColumns) -> PaneColumns:
    """``a``'s rows, then ``b``'s (both built by :func:`build_panes`)."""
    if not len(b):
        return a
    if not len(a):
        return b

    def cat(x: Any, y: Any) -> Any:
        return np.concatenate([x, y])

    def cat_values(x: NDArray[Any], y: NDArray[Any]) -> NDArray[Any]:
        if x.dtype == y.dtype:
            return np.concatenate([x, y])
        return typed_column(x.tolist() + y.tolist())

    return PaneColumns(
        cat(a.key_codes, b.key_codes), a.key_table, cat(a.window_start, b.window_start),
        cat(a.window_end, b.window_end), cat(a.timing, b.timing),
        cat(a.pane_index, b.pane_index), cat(a.is_first, b.is_first),
        cat(a.is_last, b.is_last), cat(a.retraction, b.retraction),
        {name: cat_values(col, b.values[name]) for name, col in a.values.items()},
        cat(a.emitted_at, b.emitted_at), cat(a.watermark, b.watermark),
        cat(a.first_event_time, b.first_event_time), cat(a.last_event_time, b.last_event_time))


def _retractions(eng: SlidingTriggerEngine, kas: Sequence[KeyArrays], part: I64, PR: I64,
                 PW: I64, values: dict[str, NDArray[Any]]) -> tuple[Any, ...]:
    """Per row whether a retraction precedes it and, for those rows, the withdrawn pane's
    timing, index, first / last event time and values: the window's previous row in this
    call, else its last pane in ``lp`` (none after a row that closed the window). Then
    ``lp`` keeps each window's last row (or forgets a window its last row closed)."""
    n = len(PR)
    starts = PR[:, K.P_START]
    gone = PR[:, K.P_GONE] != 0
    order = np.lexsort((np.arange(n), starts, part))
    same = (part[order][1:] == part[order][:-1]) & (starts[order][1:] == starts[order][:-1])
    prev = np.full(n, -1, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt = np.full(n, -1, dtype=np.int64)
    nxt[order[:-1][same]] = order[1:][same]
    in_call = prev >= 0
    has_ret = in_call.copy()
    has_ret[in_call] = ~gone[prev[in_call]]
    r_timing = np.where(in_call, PR[prev, K.P_TIMING], 0)
    r_index = np.where(in_call, PR[prev, K.P_INDEX], 0)
    r_first = np.where(in_call, PW[prev, K.W_FIRST], 0)
    r_last = np.where(in_call, PW[prev, K.W_LAST], 0)
    r_values = {name: np.empty(n, dtype=object) for name in values}
    for name, col in values.items():
        r_values[name][in_call] = col[prev[in_call]]
    first_rows = np.flatnonzero(~in_call)
    for i, p, s in zip(first_rows.tolist(), part[first_rows].tolist(),
                       starts[first_rows].tolist(), strict=True):  # one per window
        old = kas[p].lp.get(s)
        if old is not None:
            has_ret[i] = True
            r_timing[i] = TIMING_CODE[old["timing"]]
            r_index[i] = old["pane_index"]
            r_first[i] = old["first_t"]
            r_last[i] = old["last_t"]
            for name, col in r_values.items():
                col[i] = old["values"][name]
    size = eng._size
    last_rows = np.flatnonzero(nxt < 0)
    for i, p, s, g, tm, ix, ft, lt in zip(
            last_rows.tolist(), part[last_rows].tolist(), starts[last_rows].tolist(),
            gone[last_rows].tolist(), PR[last_rows, K.P_TIMING].tolist(),
            PR[last_rows, K.P_INDEX].tolist(), PW[last_rows, K.W_FIRST].tolist(),
            PW[last_rows, K.W_LAST].tolist(), strict=True):  # one per window
        lp = kas[p].lp
        if g:
            lp.pop(s, None)
        else:
            lp[s] = {"start": s, "end": s + size, "timing": TIMINGS[tm], "pane_index": ix,
                     "values": {name: col[i] for name, col in values.items()},
                     "first_t": ft, "last_t": lt}
    return (has_ret, r_timing[has_ret], r_index[has_ret], r_first[has_ret], r_last[has_ret],
            {name: col[has_ret] for name, col in r_values.items()})


def in_order(pc: PaneColumns, row_of: I64, row_order: I64) -> tuple[PaneColumns, I64]:
    """``pc`` (from :func:`build_panes`) with its rows in ``row_order`` (a row's retraction
    stays right before its pane), and the row of each emission in the new order."""
    if not len(pc):
        return pc, row_of
    rank = np.empty(len(row_order), dtype=np.int64)
    rank[row_order] = np.arange(len(row_order), dtype=np.int64)
    idx = np.argsort(rank[row_of], kind="stable")
    return take(pc, idx), row_of[idx]


def key_ranks(parts: Sequence[PaneRows]) -> I64:
    """The rank of each key's JSON among the parts' keys (:func:`part_keys`; panes that fire
    together are ordered by it)."""
    kas = part_keys(parts)
    kjs = np.empty(len(kas), dtype=object)
    kjs[:] = [ka.kj for ka in kas]
    rank = np.empty(len(kas), dtype=np.int64)
    rank[np.argsort(kjs, kind="stable")] = np.arange(len(kas), dtype=np.int64)
    return rank
