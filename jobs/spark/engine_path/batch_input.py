"""One bucket's records, as pandas hands them to the processor, turned into the engine's
``RecordBatch`` (columnar: NumPy arrays where a column has no nulls)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jobs.engine.records import RecordBatch
from jobs.spark.engine_path.config import HostConfig
from jobs.spark.extract import EVENT_TIME, KEY, agg_column

if TYPE_CHECKING:
    import pandas as pd


class LazyRecords(Sequence[dict[str, Any]]):
    """The original records, built only for the few the engine echoes as late output."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        self._frame = frame
        self._columns = list(columns)

    def __len__(self) -> int:
        return len(self._frame)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
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


def record_batch(frame: pd.DataFrame, cfg: HostConfig, processing_time: int) -> RecordBatch:
    """The engine's arrival unit for ``frame`` (usable records only, in arrival order): keys
    parsed from their JSON text once per distinct key, only aggregations with an input."""
    import numpy as np

    columns: dict[str, Any] = {}
    for i, (name, has) in enumerate(zip(cfg.agg_names, cfg.agg_has_input, strict=True)):
        if has:
            columns[name] = input_column(frame[agg_column(i)], cfg.agg_integral[i])
    key_text = frame[KEY]
    uniques = {k: json.loads(k) for k in key_text.unique().tolist()}
    return RecordBatch(
        keys=[uniques[k] for k in key_text.tolist()],
        event_times=frame[EVENT_TIME].to_numpy(dtype=np.int64),
        columns=columns,
        records=LazyRecords(frame, cfg.source_columns),  # type: ignore[arg-type]
        processing_time=processing_time,
    )
