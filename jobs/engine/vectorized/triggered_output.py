"""The triggered kernels' output rows as :class:`EmissionColumns`: the panes and late records
of one engine call as arrays, in emission order, straight from the kernel's output arrays (no
``Pane`` or ``LateRecord`` is built; ``to_emissions()`` builds them for the object API)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import RecordBatch
from jobs.engine.vectorized import trigger_kernels
from jobs.engine.vectorized.aggregates import object_array
from jobs.engine.vectorized.emission_columns import EmissionColumns, LateColumns, PaneColumns
from jobs.engine.vectorized.keys import KeyTable

if TYPE_CHECKING:
    from jobs.engine.vectorized.triggered import TriggeredEngine

I64 = NDArray[np.int64]
K: Any = trigger_kernels
TIMING_NAMES = ("EARLY", "ON_TIME", "LATE")
"""The kernels' timing codes (the same order as ``emission_columns.TIMINGS``)."""


def out_buffers(m: int, a: int) -> tuple[I64, NDArray[np.int8], I64, NDArray[np.float64]]:
    """The kernels' output arrays for up to ``m`` rows of ``a`` aggregations: the integer
    columns, and per aggregation the value kind, int64 and float64 slots (filled by the
    kernel, so never initialised here)."""
    return (np.empty((m, K.N_OUT_COLS), dtype=np.int64), np.empty((m, a), dtype=np.int8),
            np.empty((m, a), dtype=np.int64), np.empty((m, a), dtype=np.float64))


def value_column(kinds: NDArray[np.int8], ci: I64, cf: NDArray[np.float64]) -> NDArray[Any]:
    """One aggregation's output values: int64 / float64 when every value is of that Python
    type, else an object array of the Python values (None for kind 0)."""
    if bool((kinds == 1).all()):
        return ci
    if bool((kinds == 2).all()):
        return cf
    return object_array([x if kk == 1 else (y if kk == 2 else None)
                         for kk, x, y in zip(kinds.tolist(), ci.tolist(), cf.tolist(),
                                             strict=True)])


def no_output(eng: TriggeredEngine) -> EmissionColumns:
    return EmissionColumns(PaneColumns.empty(eng._names, eng.keys), LateColumns.empty(eng.keys),
                           np.zeros(0, dtype=np.int64))


def emission_columns(eng: TriggeredEngine, out_i: I64, ok: NDArray[np.int8], oi: I64,
                     of: NDArray[np.float64], n: int,
                     batch: RecordBatch | None) -> EmissionColumns:
    """The first ``n`` output rows as columns (their dropped late records are counted)."""
    if n == 0:
        return no_output(eng)
    rows = out_i[:n]
    is_pane = rows[:, K.O_KIND] == K.OUT_PANE
    glob = eng._wtype == K.WT_GLOBAL
    p = rows[is_pane] if not bool(is_pane.all()) else rows
    m = len(p)
    starts = None if glob else p[:, K.O_START]
    index = p[:, K.O_INDEX]
    values = {name: value_column(ok[:n][is_pane, j], oi[:n][is_pane, j], of[:n][is_pane, j])
              for j, name in enumerate(eng._names)}
    if eng.side is not None and m:
        # the last arrival folded into each pane: step-fired panes name their record
        bound = (eng.seq - len(batch) + p[:, K.O_REC]) if batch is not None \
            else np.full(m, eng.seq - 1, dtype=np.int64)
        side = eng.side.pane_values(p[:, K.O_KEY], p[:, K.O_START],
                                    p[:, K.O_RETRACTION].astype(np.bool_), bound)
        for j, vals in side.items():
            values[eng._names[j]] = vals
    panes = PaneColumns(
        p[:, K.O_KEY], eng.keys, starts, None if starts is None else starts + eng._size,
        p[:, K.O_TIMING].astype(np.int8), index, index == 0, p[:, K.O_LAST].astype(np.bool_),
        p[:, K.O_RETRACTION].astype(np.bool_), values,
        np.full(m, eng.processing_time, dtype=np.int64), p[:, K.O_WM])
    if m == n:
        return EmissionColumns(panes, LateColumns.empty(eng.keys), np.zeros(0, dtype=np.int64))
    late_at = np.flatnonzero(~is_pane)
    lr = rows[late_at]
    recs = lr[:, K.O_REC]
    codes, lstarts = lr[:, K.O_KEY], lr[:, K.O_START]
    assert batch is not None  # only ingest judges records late
    records = batch.records
    late = LateColumns(
        codes, eng.keys, batch.event_times[recs],
        None if glob else lstarts, None if glob else lstarts + eng._size,
        lr[:, K.O_REASON].astype(np.int8),
        [None] * len(lr) if records is None else [records[r] for r in recs.tolist()])
    uniq, counts = np.unique(np.stack([codes, lstarts], axis=1), axis=0, return_counts=True)
    for (k, s), c in zip(uniq.tolist(), counts.tolist(), strict=True):
        eng._count_late(k, s, 0, c)
    # late row i comes after the panes that precede it in the kernel's output
    before = late_at - np.arange(len(late_at), dtype=np.int64)
    return EmissionColumns(panes, late, before.astype(np.int64))


def _cat(cols: Sequence[Any]) -> Any:
    if cols[0] is None:
        return None
    return np.concatenate(cols)


def _cat_values(cols: Sequence[NDArray[Any]]) -> NDArray[Any]:
    if all(c.dtype == cols[0].dtype for c in cols) and cols[0].dtype != object:
        return np.concatenate(cols)
    return object_array([v for c in cols for v in c.tolist()])


def concat(parts: Sequence[EmissionColumns], names: Sequence[str],
           keys: KeyTable) -> EmissionColumns:
    """Consecutive outputs of one engine (one key table) as one, in order."""
    parts = [x for x in parts if len(x)]
    if not parts:
        return EmissionColumns(PaneColumns.empty(names, keys), LateColumns.empty(keys),
                               np.zeros(0, dtype=np.int64))
    if len(parts) == 1:
        return parts[0]
    ps = [x.panes for x in parts]
    ls = [x.late for x in parts]
    offsets = np.cumsum([0] + [len(x) for x in ps[:-1]])
    panes = PaneColumns(
        _cat([x.key_codes for x in ps]), keys,
        _cat([x.window_start for x in ps if len(x)] or [None]),
        _cat([x.window_end for x in ps if len(x)] or [None]),
        _cat([x.timing for x in ps]), _cat([x.pane_index for x in ps]),
        _cat([x.is_first for x in ps]), _cat([x.is_last for x in ps]),
        _cat([x.retraction for x in ps]),
        {n: _cat_values([x.values[n] for x in ps]) for n in names},
        _cat([x.emitted_at for x in ps]), _cat([x.watermark for x in ps]))
    late = LateColumns(
        _cat([x.key_codes for x in ls]), keys, _cat([x.event_time for x in ls]),
        _cat([x.window_start for x in ls if len(x)] or [None]),
        _cat([x.window_end for x in ls if len(x)] or [None]),
        _cat([x.reason for x in ls]), [r for x in ls for r in x.record])
    before = np.concatenate([x.late_before + off for x, off in zip(parts, offsets.tolist(),
                                                                   strict=True)])
    return EmissionColumns(panes, late, before.astype(np.int64))
