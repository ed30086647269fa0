"""The ``Pane`` objects of the sliding trigger engine (:mod:`.sliding_triggers`), built from the
kernels' pane rows of every key of one engine call at once.

Why: building panes row by row (a values dict read field by field, a retraction looked up per
pane) cost more than the kernels. Here each field is one column over all rows: the values
per aggregation (:func:`.sliding_trigger_values.value_columns`), a retraction's source row
(the window's previous pane in the same call, else its last pane from the state, ``KeyArrays.lp``:
one lookup per window) and the objects are filled slot by slot over whole columns
(``emission_columns._bulk``). Only the last pane of each window is written back to the state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels.sliding_trigger_side import member_values
from jobs.engine.kernels.sliding_trigger_values import value_columns
from jobs.engine.records import Emission, Pane
from jobs.engine.vectorized.columns import _value_dicts
from jobs.engine.vectorized.emission_columns import _PANE_SETTERS, _bulk

if TYPE_CHECKING:
    from jobs.engine.kernels.sliding_triggers import KeyArrays, SlidingTriggerEngine

I64 = NDArray[np.int64]
TIMINGS: tuple[str, str, str] = ("EARLY", "ON_TIME", "LATE")
TIMING_CODE = {t: i for i, t in enumerate(TIMINGS)}


class PaneRows:
    """One key's pane rows of a kernel pass: ``PR`` / ``PW`` / ``PF`` (``n`` rows), the side
    aggregations' outputs (``members``: ``side_outputs``' ``CNT``, ``REFS``) and the watermark
    each pane shows (``wms``, else ``wm`` for all)."""

    __slots__ = ("PF", "PR", "PW", "ka", "members", "wm", "wms")

    def __init__(self, ka: KeyArrays, PR: I64, PW: I64, PF: NDArray[np.float64],
                 members: tuple[I64, I64] | None, wm: int | None,
                 wms: list[int | None] | None = None) -> None:
        self.ka, self.PR, self.PW, self.PF = ka, PR, PW, PF
        self.members, self.wm, self.wms = members, wm, wms


def build_panes(eng: SlidingTriggerEngine, parts: Sequence[PaneRows]
                ) -> tuple[list[Emission], I64, I64]:
    """Every pane row of ``parts`` as emissions, rows in ``parts`` order, each pane preceded
    by its retraction (retracting mode); the windows' last panes are written to their keys'
    ``lp``. Returns the emissions, the (concatenated) row of each emission and the part of
    each row."""
    counts = np.array([len(p.PR) for p in parts], dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return [], z, z
    PR = np.concatenate([p.PR for p in parts])
    PW = np.concatenate([p.PW for p in parts])
    PF = np.concatenate([p.PF for p in parts])
    ends = np.cumsum(counts).tolist()
    los = [e - int(c) for e, c in zip(ends, counts.tolist(), strict=True)]
    cols = value_columns(eng._names, eng._fns,
                         [(p.ka.objs, lo, hi) for p, lo, hi in zip(parts, los, ends, strict=True)],
                         PW, PF)
    if eng._side:
        side: dict[str, list[Any]] = {}
        for p in parts:
            if p.members is None or not len(p.PR):
                continue
            for name, col in member_values(eng, p.ka.objs, *p.members, len(p.PR)).items():
                side.setdefault(name, []).extend(col)
        cols.update(side)
    values = np.empty(n, dtype=object)
    values[:] = _value_dicts(list(cols), list(cols.values())) if cols else [{} for _ in range(n)]
    part = np.repeat(np.arange(len(parts), dtype=np.int64), counts)
    keys = np.empty(len(parts), dtype=object)
    keys[:] = [p.ka.key for p in parts]
    wm_list: list[int | None] = []
    for p in parts:
        wm_list.extend(p.wms if p.wms is not None else [p.wm] * len(p.PR))
    wms = np.empty(n, dtype=object)
    wms[:] = wm_list
    starts = PR[:, K.P_START]
    timing = PR[:, K.P_TIMING]
    index = PR[:, K.P_INDEX]
    first_t, last_t = PW[:, K.W_FIRST], PW[:, K.W_LAST]
    has_ret = np.zeros(n, dtype=np.bool_)
    r_timing = r_index = r_first = r_last = np.zeros(0, dtype=np.int64)
    r_values = np.empty(0, dtype=object)
    if eng._retracting:
        has_ret, r_timing, r_index, r_first, r_last, r_values = _retractions(
            eng, parts, part, PR, PW, values)
    n_ret = int(has_ret.sum())
    total = n + n_ret
    pos = np.arange(n, dtype=np.int64) + np.cumsum(has_ret)
    rpos = pos[has_ret] - 1
    row_of = np.empty(total, dtype=np.int64)
    row_of[pos] = np.arange(n, dtype=np.int64)
    row_of[rpos] = np.flatnonzero(has_ret)
    is_ret = np.zeros(total, dtype=np.bool_)
    is_ret[rpos] = True

    def merged(pane_col: NDArray[Any], ret_col: NDArray[Any]) -> list[Any]:
        out = np.empty(total, dtype=pane_col.dtype if pane_col.dtype == ret_col.dtype
                       else object)
        out[pos] = pane_col
        out[rpos] = ret_col
        return out.tolist()

    em_index = np.empty(total, dtype=np.int64)
    em_index[pos] = index
    em_index[rpos] = r_index
    em_timing = np.empty(total, dtype=np.int64)
    em_timing[pos] = timing
    em_timing[rpos] = r_timing
    em_last = np.zeros(total, dtype=np.bool_)
    em_last[pos] = PR[:, K.P_LAST] != 0
    em_starts = starts[row_of]
    columns: dict[str, Any] = {
        "key": keys[part[row_of]].tolist(),
        "window_start": em_starts.tolist(),
        "window_end": (em_starts + eng._size).tolist(),
        "timing": np.array(TIMINGS, dtype=object)[em_timing].tolist(),
        "pane_index": em_index.tolist(),
        "is_first": (em_index == 0).tolist(),
        "is_last": em_last.tolist(),
        "retraction": is_ret.tolist(),
        "values": merged(values, r_values),
        "emitted_at": [eng.processing_time] * total,
        "watermark": wms[row_of].tolist(),
        "first_event_time": merged(first_t, r_first),
        "last_event_time": merged(last_t, r_last),
        "type": ["pane"] * total,
    }
    return _bulk(Pane, _PANE_SETTERS, columns, total), row_of, part


def _retractions(eng: SlidingTriggerEngine, parts: Sequence[PaneRows], part: I64, PR: I64,
                 PW: I64, values: NDArray[Any]) -> tuple[Any, ...]:
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
    r_values = np.empty(n, dtype=object)
    r_values[in_call] = values[prev[in_call]]
    first_rows = np.flatnonzero(~in_call)
    for i, p, s in zip(first_rows.tolist(), part[first_rows].tolist(),
                       starts[first_rows].tolist(), strict=True):  # one per window
        old = parts[p].ka.lp.get(s)
        if old is not None:
            has_ret[i] = True
            r_timing[i] = TIMING_CODE[old["timing"]]
            r_index[i] = old["pane_index"]
            r_first[i] = old["first_t"]
            r_last[i] = old["last_t"]
            r_values[i] = old["values"]
    size = eng._size
    last_rows = np.flatnonzero(nxt < 0)
    for i, p, s, g, tm, ix, ft, lt in zip(
            last_rows.tolist(), part[last_rows].tolist(), starts[last_rows].tolist(),
            gone[last_rows].tolist(), PR[last_rows, K.P_TIMING].tolist(),
            PR[last_rows, K.P_INDEX].tolist(), PW[last_rows, K.W_FIRST].tolist(),
            PW[last_rows, K.W_LAST].tolist(), strict=True):  # one per window
        lp = parts[p].ka.lp
        if g:
            lp.pop(s, None)
        else:
            lp[s] = {"start": s, "end": s + size, "timing": TIMINGS[tm], "pane_index": ix,
                     "values": dict(values[i]), "first_t": ft, "last_t": lt}
    return (has_ret, r_timing[has_ret], r_index[has_ret], r_first[has_ret], r_last[has_ret],
            r_values[has_ret])


def in_order(ems: list[Emission], row_of: I64, row_order: I64) -> list[Emission]:
    """``ems`` (from :func:`build_panes`) with their rows in ``row_order`` (a row's
    retraction stays right before its pane)."""
    if not ems:
        return ems
    rank = np.empty(len(row_order), dtype=np.int64)
    rank[row_order] = np.arange(len(row_order), dtype=np.int64)
    arr = np.empty(len(ems), dtype=object)
    arr[:] = ems
    out: list[Emission] = arr[np.argsort(rank[row_of], kind="stable")].tolist()
    return out


def key_ranks(parts: Sequence[PaneRows]) -> I64:
    """The rank of each part's key JSON among the parts' (panes that fire together are
    ordered by it)."""
    kjs = np.empty(len(parts), dtype=object)
    kjs[:] = [p.ka.kj for p in parts]
    rank = np.empty(len(parts), dtype=np.int64)
    rank[np.argsort(kjs, kind="stable")] = np.arange(len(parts), dtype=np.int64)
    return rank
