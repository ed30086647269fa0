"""Lateness in the vectorized engine: each record of an arrival unit against the watermark
as it stood before the unit, the late lines in arrival order and the per-window late counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import Emission, LateRecord, RecordBatch

if TYPE_CHECKING:
    from jobs.engine.vectorized.engine import VectorizedEngine

I64 = NDArray[np.int64]


def judge(
    eng: VectorizedEngine, codes: I64, t: I64, sl: I64, wm_b: I64 | int, batch: RecordBatch,
    out: list[Emission], owners: list[int] | None = None,
) -> NDArray[np.bool_] | None:
    """Lateness of each record against the watermark before the instant. Appends the late
    outputs (and, to ``owners`` when given, the arrival index of each one's record), counts
    late pairs, and returns the mask of records to fold in (None = all)."""
    wm_arr = np.broadcast_to(np.asarray(wm_b, dtype=np.int64), t.shape)
    suspect = np.flatnonzero(wm_arr > t)  # only these can be late for any window
    if len(suspect) == 0:
        return None
    accept = np.ones(len(t), dtype=bool)
    starts, valid = eng.geo.window_starts(sl[suspect])
    wm_s = wm_arr[suspect][:, None]
    if eng.defn.lateness_basis == "event":
        dropped = valid
        late_ok = np.zeros_like(valid)
        accept[suspect] = False
        reason: Literal["expired", "before_watermark"] = "before_watermark"
    else:
        end = eng.geo.window_end(starts.ravel()).reshape(starts.shape)
        exp = eng.geo.expiry(starts.ravel()).reshape(starts.shape)
        dropped = valid & (wm_s >= exp)
        late_ok = valid & (wm_s >= end) & ~dropped
        accept[suspect] = ~dropped[:, 0]  # the latest window of the record is still open
        reason = "expired"
        if not (dropped.any() or late_ok.any()):
            return None
    # late outputs in arrival order; a record's windows by ascending start. Only records
    # with a late pair are visited, on Python lists (most suspects are merely out of order,
    # and indexing numpy arrays element by element cost more than the rest of the judging)
    hit = np.flatnonzero((dropped | late_ok).any(axis=1))
    drop_l, ok_l, starts_l = dropped[hit].tolist(), late_ok[hit].tolist(), starts[hit].tolist()
    rec_i = suspect[hit].tolist()
    codes_l, t_l = codes[rec_i].tolist(), t[rec_i].tolist()
    width = starts.shape[1]
    for h, r_i in enumerate(rec_i):
        code, drop_h, ok_h, starts_h = codes_l[h], drop_l[h], ok_l[h], starts_l[h]
        for j in range(width - 1, -1, -1):
            if not (drop_h[j] or ok_h[j]):
                continue
            wid = eng._window_id(code, starts_h[j])
            _count_late(eng, code, wid, 1 if drop_h[j] else 0)
            if drop_h[j]:
                rec = batch.records[r_i] if batch.records is not None else None
                out.append(LateRecord(wid[0], t_l[h], wid[1], wid[2], reason, rec))
                if owners is not None:
                    owners.append(r_i)
    return accept


def _count_late(
    eng: VectorizedEngine, code: int, wid: tuple[Any, int | None, int | None], slot: int
) -> None:
    key, start, end = wid
    kj = eng.keys.json_array()[code]  # cached per code (json.dumps per late pair was slow)
    tot = eng.late_totals_by_key.setdefault(kj, [key, 0, 0])
    tot[1 + slot] += 1
    row = eng.late_deltas.setdefault(f"{kj}|{start}|{end}", [key, start, end, 0, 0])
    row[3 + slot] += 1
