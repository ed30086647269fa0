"""What the engine path's stateful processor is configured with, and the columns it reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from jobs.storage.manifest import TimeMode

if TYPE_CHECKING:  # not at run time: ``processor_shell`` imports this module on the driver
    from jobs.definition.model import Definition

__all__ = ["ARRIVAL", "BUCKET", "DEAD", "STATE_NAME", "HostConfig", "TimeMode", "engine_mode"]

BUCKET = "__bucket"
"""The grouping column: the key's bucket, as the checkpoint's grouping value for it."""
ARRIVAL = "__arrival"
"""Test mode: the record's arrival mark (its batch's processing time, for replay parity)."""
DEAD = "__dead"
"""Dead-letter column (see :func:`~jobs.spark.engine_path.dead_letters.dead_letter_column`):
null for a usable record."""
STATE_NAME = "engine"
"""The ValueState holding a bucket's state blob (``tidemark state`` reads it by this name)."""


def engine_mode(defn: Definition) -> Literal["internal", "external"]:
    """``external`` (Spark's global watermark drives the engine) for an event-time clock with
    a global watermark; ``internal`` for per-key watermarks and the processing clock (whose
    watermark is "now": every bucket computes it alone)."""
    if defn.uses_processing_time:
        return "internal"
    return "external" if defn.watermark.scope == "global" else "internal"


@dataclass(frozen=True)
class HostConfig:
    """Everything a processor needs, fixed when the query is built (pickled to the workers)."""

    defn: Definition
    agg_names: tuple[str, ...]
    agg_has_input: tuple[bool, ...]
    agg_integral: tuple[bool, ...]
    """Whether aggregation i's input is an integer type (pandas turns nullable ints into
    floats; they must reach the engine as ints, or a sum of ints would print as 5.0)."""
    source_columns: tuple[str, ...]
    input_columns: tuple[str, ...]
    """Names of the packed records' columns, in order (bucket first; ``packing``)."""
    checkpoint: str
    side_root: str
    arrival: bool
    """Test mode: processing time = max of the ``__arrival`` column (replay parity)."""
    timezone: str = "UTC"
    """Spark's session time zone (pandas gets TIMESTAMP values as wall times in it)."""
    ident: tuple[str, int, str] = ("", 0, "")
    """(job, version, store): the identity every side record carries."""
    source_kinds: tuple[str, ...] | None = None
    """How to rebuild each source column's value for a dead letter
    (:func:`~jobs.spark.engine_path.dead_letters.dead_letter_kinds`); ``None``: the gate split
    dead letters off before the operator (no ``__dead`` column)."""
    time_mode: TimeMode = "EventTime"
    """``ProcessingTime``: every bucket is woken at every micro-batch, data or not (see
    :func:`~jobs.definition.execution.needs_clock`); ``EventTime``: by records and watermark
    advances only."""
    order_columns: tuple[str, ...] = ()
    """Columns that sort a batch's records into arrival order (``sources.ORDER_COLUMNS``)."""
    shift: int = 0
    """What Spark's watermark is ahead of the engine's (``plan.SHIFT_FLOOR``: Spark's
    watermark column is the event time shifted so that it is never negative)."""
