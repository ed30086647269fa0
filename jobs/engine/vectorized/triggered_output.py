"""The triggered kernels' output rows as the general engine's ``Pane`` / ``LateRecord``
objects: every field goes through numpy to a Python list first, so the one Python loop left is
per emitted pane or late record, never per input record."""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import Emission, LateRecord, RecordBatch, make_pane
from jobs.engine.vectorized import trigger_kernels
from jobs.engine.vectorized.columns import _no_gc, _value_dicts

if TYPE_CHECKING:
    from jobs.engine.vectorized.triggered import TriggeredEngine

I64 = NDArray[np.int64]
K: Any = trigger_kernels
TIMING_NAMES = ("EARLY", "ON_TIME", "LATE")
_TIMINGS = np.array(TIMING_NAMES, dtype=object)
REASONS = ("expired", "before_watermark")


def output_values(
    names: list[str], ok: NDArray[np.int8], oi: I64, of: NDArray[np.float64]
) -> list[list[Any]]:
    """Per aggregation, the Python values of the output rows (null / int / float)."""
    cols: list[list[Any]] = []
    for j in range(len(names)):
        kinds = ok[:, j]
        if bool((kinds == 1).all()):
            cols.append(oi[:, j].tolist())
        elif bool((kinds == 2).all()):
            cols.append(of[:, j].tolist())
        else:
            ci, cf = oi[:, j].tolist(), of[:, j].tolist()
            cols.append([x if kk == 1 else (y if kk == 2 else None)
                         for kk, x, y in zip(kinds.tolist(), ci, cf, strict=True)])
    return cols


def emissions(eng: TriggeredEngine, out_i: I64, ok: NDArray[np.int8], oi: I64,
              of: NDArray[np.float64], n: int, batch: RecordBatch | None) -> list[Emission]:
    """The output rows as ``Pane`` / ``LateRecord`` objects (dropped pairs are counted).
    Every field is turned into a Python list by numpy first; the one loop left builds
    the objects (per pane and late record, not per input record)."""
    if n == 0:
        return []
    rows = out_i[:n]
    codes = rows[:, K.O_KEY]
    keys = eng.keys.object_array()[codes].tolist()
    if eng._wtype == K.WT_GLOBAL:
        ws: list[Any] = [None] * n
        we: list[Any] = ws
    else:
        ws = rows[:, K.O_START].tolist()
        we = (rows[:, K.O_START] + eng._size).tolist()
    index = rows[:, K.O_INDEX]
    wm = rows[:, K.O_WM]
    wm_obj = wm.astype(object)
    wm_obj[(wm == K.INT64_MIN) | (wm == K.INT64_MAX)] = None
    cols = output_values(eng._names, ok[:n], oi[:n], of[:n])
    values = _value_dicts(eng._names, cols) if cols else [{} for _ in range(n)]
    now = eng.processing_time
    is_pane = rows[:, K.O_KIND] == K.OUT_PANE
    tcodes = np.where(is_pane, rows[:, K.O_TIMING], 0)  # late rows leave it unset
    with _no_gc():
        if bool(is_pane.all()):
            return list(map(
                make_pane, keys, ws, we, _TIMINGS[tcodes].tolist(),
                index.tolist(), (index == 0).tolist(), rows[:, K.O_LAST].astype(bool).tolist(),
                rows[:, K.O_RETRACTION].astype(bool).tolist(), values, repeat(now, n),
                wm_obj.tolist()))
        out: list[Emission] = []
        timing = _TIMINGS[tcodes].tolist()
        idx = index.tolist()
        last = rows[:, K.O_LAST].astype(bool).tolist()
        retr = rows[:, K.O_RETRACTION].astype(bool).tolist()
        wms = wm_obj.tolist()
        kinds = is_pane.tolist()
        recs = rows[:, K.O_REC].tolist()
        reasons = rows[:, K.O_REASON].tolist()
        code_l = codes.tolist()
        starts = rows[:, K.O_START].tolist()
        times = batch.event_times.tolist() if batch is not None else []
        records = batch.records if batch is not None else None
        for j in range(n):
            if not kinds[j]:
                r = recs[j]
                out.append(LateRecord(
                    keys[j], times[r], ws[j], we[j], REASONS[reasons[j]],  # type: ignore[arg-type]
                    records[r] if records is not None else None))
                eng._count_late(code_l[j], starts[j], 0, 1)
                continue
            out.append(make_pane(keys[j], ws[j], we[j], timing[j], idx[j], idx[j] == 0,
                                 last[j], retr[j], values[j], now, wms[j]))
        return out
