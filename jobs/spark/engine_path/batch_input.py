"""One bucket's records, as pandas hands them to the processor, turned into the engine's
``RecordBatch`` (columnar: NumPy arrays where a column has no nulls)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jobs.engine.records import RecordBatch
from jobs.spark.engine_path.config import HostConfig
from jobs.spark.extract import EVENT_TIME, KEY, agg_column

if TYPE_CHECKING:
    import pandas as pd


class LazyRecords(Sequence[dict[str, Any]]):
    """The original records, built only for the few the engine echoes as late output.

    ``frame``: the records' frame, or a function building it (called at most once, on the
    first record asked for: most batches echo none, and their source columns then never
    leave Arrow); ``n``: the number of records, needed with a function."""

    def __init__(self, frame: pd.DataFrame | Callable[[], pd.DataFrame],
                 columns: Sequence[str], n: int | None = None) -> None:
        self._frame = frame
        self._columns = list(columns)
        self._n = len(frame) if n is None else n  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if callable(self._frame):
            self._frame = self._frame()
        row = self._frame.iloc[int(i)]
        return {c: plain(row[c]) for c in self._columns}


def plain(v: Any) -> Any:
    """A pandas / NumPy scalar as a plain Python value (NaN: None, timestamps: epoch ms)."""
    import numpy as np
    import pandas as pd

    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, pd.Timestamp):
        return int(v.value // 1_000_000)
    if isinstance(v, np.generic):
        return v.item()
    return v


def input_column(series: pd.Series, integral: bool) -> Any:
    """An aggregation input column for the engine: a NumPy array when it has no nulls (fast
    path), else a list with None for nulls; integer inputs stay integers."""
    import numpy as np

    values = series.to_numpy()
    if values.dtype.kind in "iub":
        return values.astype(np.int64) if values.dtype.kind != "b" else values
    if values.dtype.kind == "f":
        mask = np.isnan(values)
        if not mask.any():
            return values.astype(np.int64) if integral else values
        if integral:
            return [None if m else int(v) for v, m in zip(values.tolist(), mask.tolist(), strict=True)]
        return [None if m else v for v, m in zip(values.tolist(), mask.tolist(), strict=True)]
    return [plain(v) for v in values.tolist()]


KEY_CACHE_SIZE = 1 << 18
"""At most this many parsed key texts per worker (:func:`parsed_keys`)."""

_KEYS: dict[str, Any] = {}
"""The worker's parsed key texts: key JSON text -> its value, for scalar keys only (a list or
object key is parsed again per batch, so no two batches share a mutable value). Module state:
a Python worker is reused across micro-batches and sees the same keys in every one."""

_SCALARS = (str, int, float, bool, type(None))


def parsed_keys(texts: list[str]) -> list[Any]:
    """``[json.loads(t) for t in texts]``, parsing each distinct text once per worker (scalar
    keys) or once per call (list and object keys): a bucket's keys recur in every micro-batch,
    and parsing them was the input's largest Python cost per record."""
    cache = _KEYS
    fresh: dict[str, Any] = {}
    new = set(texts).difference(cache)
    if len(cache) + len(new) > KEY_CACHE_SIZE:  # full: start over (this call's keys stay)
        cache.clear()
        new = set(texts)
    for t in new:
        v = json.loads(t)
        if type(v) in _SCALARS:
            cache[t] = v
        else:
            fresh[t] = v
    if fresh:
        return [fresh[t] if t in fresh else cache[t] for t in texts]
    return list(map(cache.__getitem__, texts))


def record_batch(frame: pd.DataFrame, cfg: HostConfig, processing_time: int,
                 records: LazyRecords | None = None) -> RecordBatch:
    """The engine's arrival unit for ``frame`` (usable records only, in arrival order): keys
    parsed from their JSON text (``parsed_keys``), only aggregations with an input; the
    original records are ``records``, else ``frame``'s source columns."""
    import numpy as np

    columns: dict[str, Any] = {}
    for i, (name, has) in enumerate(zip(cfg.agg_names, cfg.agg_has_input, strict=True)):
        if has:
            columns[name] = input_column(frame[agg_column(i)], cfg.agg_integral[i])
    return RecordBatch(
        keys=parsed_keys(frame[KEY].tolist()),
        event_times=frame[EVENT_TIME].to_numpy(dtype=np.int64),
        columns=columns,
        records=(records if records is not None  # type: ignore[arg-type]
                 else LazyRecords(frame, cfg.source_columns)),
        processing_time=processing_time,
    )
