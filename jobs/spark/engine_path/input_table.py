"""A bucket's records as the processor reads them: an Arrow table (``packing.unpack_table``)
sorted into arrival order in Arrow, with only the columns the engine reads converted to pandas.

The source columns (and the files' order columns) are what a late record or a dead letter
echoes; most micro-batches echo none, so their conversion to pandas (Python objects for every
string value) waits until one does (:class:`FrameOnce`). Every column is converted on its own
by pyspark's converter (``packing.table_frame``), so the columns converted early or late hold
exactly what the whole frame held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.spark.engine_path.config import ARRIVAL, DEAD, HostConfig
from jobs.spark.engine_path.packing import table_frame
from jobs.spark.extract import EVENT_TIME, KEY, agg_column

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from numpy.typing import NDArray


def arrival_order(table: pa.Table, cfg: HostConfig) -> pa.Table:
    """``table`` (columns in ``cfg.input_columns`` order) stably sorted on the order columns,
    nulls last: the order pandas' stable ``sort_values`` gave (Arrow's ``sort_indices`` is
    stable; strings compare by code point in both, as UTF-8 bytes in Arrow)."""
    import pyarrow.compute as pc

    names = list(cfg.input_columns)
    # by position (the order columns are the last ones): a source column may share a name
    keys = [(str(len(names) - 1 - names[::-1].index(c)), "ascending", "at_end")
            for c in cfg.order_columns]
    numbered = table.rename_columns([str(i) for i in range(len(names))])
    return table.take(pc.sort_indices(numbered, sort_keys=keys))


def engine_columns(cfg: HostConfig) -> list[str]:
    """The columns the engine and the processor read from every record."""
    aggs = [agg_column(i) for i, has in enumerate(cfg.agg_has_input) if has]
    return [KEY, EVENT_TIME, *aggs, *((ARRIVAL,) if cfg.arrival else ()),
            *((DEAD,) if cfg.source_kinds is not None else ())]


def engine_frame(table: pa.Table, cfg: HostConfig) -> pd.DataFrame:
    """The engine's columns of ``table`` as pandas, named."""
    names = engine_columns(cfg)
    positions = [_position(cfg, c) for c in names]
    frame = table_frame(table.select(positions), cfg.timezone)
    frame.columns = names
    return frame


def _position(cfg: HostConfig, name: str) -> int:
    """Where ``name`` is among the packed columns: the engine's own columns come before the
    source columns (``KEY``...) or after them (``ARRIVAL``, ``DEAD``), so a source column of the
    same name is never taken for them."""
    cols = list(cfg.input_columns)
    if name in (ARRIVAL, DEAD):
        return len(cols) - 1 - cols[::-1].index(name)
    return cols.index(name)


class FrameOnce:
    """The whole frame of a bucket's records (columns named ``cfg.input_columns``), built on
    the first call, optionally without some rows (``without``: the dead letters)."""

    def __init__(self, table: pa.Table, cfg: HostConfig,
                 drop: NDArray[Any] | None = None) -> None:
        self._table = table
        self._cfg = cfg
        self._drop = drop
        self._frame: pd.DataFrame | None = None

    def __call__(self) -> pd.DataFrame:
        if self._frame is None:
            frame = table_frame(self._table, self._cfg.timezone)
            frame.columns = list(self._cfg.input_columns)
            if self._drop is not None:
                frame = frame[~self._drop].reset_index(drop=True)
            self._frame = frame
        return self._frame

    def without(self, drop: NDArray[Any]) -> FrameOnce:
        """The same records without the rows where ``drop`` is true (positions of this
        frame's rows; the whole frame built already is reused)."""
        rest = FrameOnce(self._table, self._cfg, drop)
        if self._frame is not None:
            rest._frame = self._frame[~drop].reset_index(drop=True)
        return rest
