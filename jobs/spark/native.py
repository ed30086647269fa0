"""Compiling a qualifying definition to Spark's native window aggregation.

Spark differs from docs/semantics.md in three places, each handled here (measured in docs/spark.md):
- late rows: Spark judges them against the previous batch's watermark; the gate judges them
  against the current one (the arrival-instant rule of docs/semantics.md) and drops them first;
- emission: Spark emits a window in append mode when its watermark >= window end; tidemark's
  ``emit: final`` emits when watermark >= end + allowed_lateness. Spark's delay is therefore
  ``delay + allowed_lateness``, and the gate adds the allowed lateness back;
- Spark's watermark starts at 0 and never goes below 0: event times are shifted by a large
  multiple of the step (plan.shift_for), so a positive Spark watermark always means "known".
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from jobs.definition.model import Definition
from jobs.spark.extract import EVENT_TIME, KEY, Projection, agg_column, key_json_column, string_json
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
    watermarked = gated.withColumn("__ts", ts).withWatermark("__ts", f"{delay} milliseconds")
    inputs = [agg_column(i) for i in range(len(aggs))]
    if size == step:
        # tumbling: a record has one window, and the gate keeps a record only when that window
        # has not expired, so the per-window limit below could never drop anything; without
        # it ``__wlim`` is pruned from the plan (no watermark lookup per record for it)
        windowed = watermarked.select(tumbling_window(delay, size, shift, start_offset), KEY,
                                      *inputs)
    else:
        windowed = (
            watermarked.select(window.alias(WINDOW), KEY, WLIM, *inputs)
            .where(F.unix_millis(F.col(f"{WINDOW}.start")) - F.lit(shift) > F.col(WLIM))
        )
    return windowed.groupBy(WINDOW, KEY).agg(*aggs)


DELAY_KEY = "spark.watermarkDelayMs"
"""The column metadata by which Spark's streaming aggregation knows its event-time key (Spark's
``EventTimeWatermark.delayKey``): it evicts a group whose struct key's second field (the
window's end) is at or below the watermark."""


def tumbling_window(delay: int, size: int, shift: int, start_offset: int) -> Column:
    """The tumbling window of the (shifted) event time as ``__w``: the struct Spark's
    ``window()`` builds (start and end timestamps, nullable, marked as the event-time key), from
    the gate's epoch milliseconds in a few expressions. ``window()`` converts ``__ts`` to
    microseconds and back and writes its start twice: 68 expressions in every batch's plan
    for the optimizer, the planner and the code generator to walk, against 32 with this one."""
    from pyspark.sql import functions as F

    t = F.col(EVENT_TIME) + F.lit(shift)
    start = t - F.pmod(t - F.lit(start_offset), F.lit(size))
    return F.struct(F.timestamp_millis(start).alias("start"),
                    F.timestamp_millis(start + F.lit(size)).alias("end")
                    ).alias(WINDOW, metadata={DELAY_KEY: delay})


PLAIN_TYPES = frozenset({"tinyint", "smallint", "int", "bigint", "boolean"})
"""Spark types whose ``CAST(x AS STRING)`` is exactly their JSON text."""


def _key_text(projection: Projection) -> Column:
    from pyspark.sql import functions as F

    k = F.col(KEY)
    if not projection.key_raw:
        return k  # already the JSON text
    if projection.key_type in PLAIN_TYPES:
        return k.cast("string")
    if projection.key_type == "string":
        return string_json(k)
    return key_json_column(k)


def _values_text(defn: Definition, projection: Projection) -> Column:
    """The values object as JSON text. ``to_json`` of a struct runs Jackson for every pane
    (profiled: ~5% of a native-path run with the key's); when every aggregate is an integer
    or boolean, the same text is a concatenation of casts."""
    from pyspark.sql import functions as F

    names = [a.name for a in defn.aggregations]
    plain = all(
        a.fn == "count" or (a.fn in ("sum", "min", "max")
                            and projection.agg_types.get(a.name) in PLAIN_TYPES)
        for a in defn.aggregations)
    if not plain:
        return F.to_json(F.struct(*[F.col(f"`{n}`") for n in names]),
                         {"ignoreNullFields": "false"})
    parts: list[Column] = []
    for i, n in enumerate(names):
        parts.append(F.lit(("{" if i == 0 else ",") + json.dumps(n) + ":"))
        parts.append(F.coalesce(F.col(f"`{n}`").cast("string"), F.lit("null")))
    parts.append(F.lit("}"))
    return F.concat(*parts)


def native_pane_columns(defn: Definition, projection: Projection) -> list[Column]:
    """Pane columns (without identity and batch facts) from a batch of ``build_native``.
    With a raw key (``projection.key_raw``) its JSON text is computed here, once per pane."""
    from pyspark.sql import functions as F

    _size, step = window_step(defn)
    shift = F.lit(shift_for(step))
    return [
        _key_text(projection).alias("key"),
        (F.unix_millis(F.col(f"{WINDOW}.start")) - shift).alias("window_start"),
        (F.unix_millis(F.col(f"{WINDOW}.end")) - shift).alias("window_end"),
        F.lit(None).cast("bigint").alias("first_event_time"),
        F.lit(None).cast("bigint").alias("last_event_time"),
        F.lit("ON_TIME").alias("timing"),
        F.lit(0).alias("pane_index"),
        F.lit(True).alias("is_first"),
        F.lit(True).alias("is_last"),
        F.lit(False).alias("retraction"),
        _values_text(defn, projection).alias("values"),
    ]
