"""Compiling a qualifying definition to Spark's native window aggregation.

Spark differs from the spec in three places, each handled here (measured in docs/spark.md):
- late rows: Spark judges them against the previous batch's watermark; the gate judges them
  against the current one (the spec's arrival-instant rule) and drops them first;
- emission: Spark emits a window in append mode when its watermark >= window end; the spec's
  ``emit: final`` emits when watermark >= end + allowed_lateness. Spark's delay is therefore
  ``delay + allowed_lateness``, and the gate adds the allowed lateness back;
- Spark's watermark starts at 0 and never goes below 0: event times are shifted by a large
  multiple of the step (plan.shift_for), so a positive Spark watermark always means "known".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.definition.model import Definition
from jobs.spark.extract import EVENT_TIME, KEY, agg_column, key_json
from jobs.spark.gate import WLIM
from jobs.spark.plan import shift_for, window_step

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

WINDOW = "__w"


def build_native(gated: DataFrame, defn: Definition) -> DataFrame:
    """The streaming aggregation over the gate's output: one row per (window, key) group,
    emitted once, when the window expires. Columns: ``__w`` (shifted window struct), ``__key``
    and one column per aggregation, named as the aggregation."""
    from pyspark.sql import functions as F

    size, step = window_step(defn)
    shift = shift_for(step)
    delay = defn.watermark.delay + defn.allowed_lateness
    ts = F.timestamp_millis(F.col(EVENT_TIME) + F.lit(shift))
    start_offset = (defn.window.align_to % step + step) % step
    window = F.window(
        "__ts", f"{size} milliseconds", f"{step} milliseconds", f"{start_offset} milliseconds"
    )
    aggs: list[Column] = []
    for i, agg in enumerate(defn.aggregations):
        col = F.col(agg_column(i))
        fn = {"count": F.count, "sum": F.sum, "min": F.min, "max": F.max, "mean": F.avg}[agg.fn]
        out = fn(col)
        if agg.fn == "mean":
            out = out.cast("double")
        aggs.append(out.alias(agg.name))
    windowed = (
        gated.withColumn("__ts", ts)
        .withWatermark("__ts", f"{delay} milliseconds")
        .select(window.alias(WINDOW), KEY, WLIM, *[agg_column(i) for i in range(len(aggs))])
        .where(F.unix_millis(F.col(f"{WINDOW}.start")) - F.lit(shift) > F.col(WLIM))
    )
    return windowed.groupBy(WINDOW, KEY).agg(*aggs)


def native_pane_columns(defn: Definition, key_raw: bool = False) -> list[Column]:
    """Pane columns (without identity and batch facts) from a batch of ``build_native``
    (``key_raw``: ``__key`` is the raw key value; its JSON text is computed once per pane)."""
    from pyspark.sql import functions as F

    _size, step = window_step(defn)
    shift = F.lit(shift_for(step))
    names = [a.name for a in defn.aggregations]
    return [
        (key_json(F.col(KEY)) if key_raw else F.col(KEY)).alias("key"),
        (F.unix_millis(F.col(f"{WINDOW}.start")) - shift).alias("window_start"),
        (F.unix_millis(F.col(f"{WINDOW}.end")) - shift).alias("window_end"),
        F.lit(None).cast("bigint").alias("first_event_time"),
        F.lit(None).cast("bigint").alias("last_event_time"),
        F.lit("ON_TIME").alias("timing"),
        F.lit(0).alias("pane_index"),
        F.lit(True).alias("is_first"),
        F.lit(True).alias("is_last"),
        F.lit(False).alias("retraction"),
        F.to_json(F.struct(*[F.col(f"`{n}`") for n in names]), {"ignoreNullFields": "false"}).alias("values"),
    ]
