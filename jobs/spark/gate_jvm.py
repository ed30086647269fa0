"""The native path's gate in Spark SQL plus two JVM functions: no Python worker per record.

Same decisions and the same side files as :mod:`jobs.spark.gate` (the Python gate, still used
by the engine path and as the fallback when the JVM functions are unavailable):
- every ordinary record (parsed, key and event time present, event time not behind the
  batch's watermark) is kept by plain SQL, without any function call but the cached watermark
  lookup (``tidemark_ours_<hash>``: tidemark's watermark from the offsets log entry of the
  running batch);
- only a record that is malformed or behind the watermark reaches ``tidemark_gate`` (Java,
  ``jvm/src/tidemark/spark/Gate.java``), which decides whether it goes on and collects the
  dead letters, late records and late counts the Python gate would write, byte for byte;
- ``__wlim`` (the latest window start whose window expired) is computed in SQL, so the
  per-window drop after Spark's window assignment is unchanged (native.py).
A record behind the watermark can only belong to a late window (a window containing t ends
after t), so the condition picks out every record the Python gate would act on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from jobs.engine.extract import EARLIEST_MS, LATEST_MS
from jobs.spark.extract import EVENT_TIME, EVENT_TIME_OUT, KEY, key_json_column
from jobs.spark.gate import LONG_MIN, WLIM, GateConfig, range_reason
from jobs.spark.jvm import register_batch_timestamp, register_our_watermark

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


KEEP = "__keep"
"""The gate's verdict per record (true: the record goes on to the windowing)."""


def gate_config_text(cfg: GateConfig) -> str:
    """The Java gate's configuration: tab-separated, parsed once per JVM."""
    ident = json.dumps({"job": cfg.job, "version": cfg.version, "store": cfg.store})[:-1]
    parts = [cfg.side_root, ident, str(cfg.has_key).lower(), str(cfg.size), str(cfg.step),
             str(cfg.align_to), str(cfg.allowed_lateness), str(cfg.event_basis).lower()]
    if any("\t" in p for p in parts):
        raise ValueError("a tab in the gate configuration")  # paths/names never hold tabs
    return "\t".join(parts)


def our_watermark(spark: SparkSession, cfg: GateConfig) -> Column:
    """The watermark of docs/semantics.md before the running batch (null: none yet): one JVM
    call, the Java twin of ``GateConfig.our_watermark`` (as SQL around the batch watermark it
    was eight expressions, three times in the plan)."""
    from pyspark.sql import functions as F

    return F.call_function(register_our_watermark(
        spark, cfg.checkpoint, cfg.shift, cfg.allowed_lateness))


def batch_facts(spark: SparkSession, cfg: GateConfig) -> tuple[Column, Column]:
    """(``emitted_at``, ``watermark``) of the running batch's panes as SQL expressions, for the
    pane projection inside the native path's streaming query: the values the driver would read
    from the offsets log (``sinks.pane_frame``), but as function calls, so the generated code
    is the same in every batch and nothing is built in Python per batch."""
    from pyspark.sql import functions as F

    emitted_at = F.call_function(register_batch_timestamp(spark, cfg.checkpoint))
    return emitted_at, our_watermark(spark, cfg)


def range_reason_column(ms: Column) -> Column:
    """:func:`jobs.spark.gate.range_reason` of the BIGINT column ``ms`` in SQL (null when
    ``ms`` is): the same words, so both gates write the same dead letter."""
    from pyspark.sql import functions as F

    def words(sample: int) -> Column:
        head, tail = range_reason(sample).split(str(sample), 1)
        return F.concat(F.lit(head), ms.cast("string"), F.lit(tail))

    inside = ms.between(F.lit(EARLIEST_MS), F.lit(LATEST_MS))
    return F.when(inside, words(LATEST_MS)).otherwise(words(LATEST_MS + 1))


def build_jvm_gate(projected: DataFrame, cfg: GateConfig) -> DataFrame:
    """``projected`` gated: columns ``cfg.out_columns`` + ``__wlim`` (as the Python gate)."""
    from pyspark.sql import functions as F

    ours = our_watermark(projected.sparkSession, cfg)
    corrupt, key, et = F.col(cfg.corrupt_column), F.col(KEY), F.col(EVENT_TIME)
    # ``et < ours`` is null before the first watermark: the CASE below reads a null condition
    # as false, so no ``ours`` null check is needed (one watermark expression fewer per plan)
    needs_gate = corrupt.isNotNull() | et.isNull() | (et < ours)
    if cfg.has_key:
        needs_gate = needs_gate | key.isNull()
    record = F.struct(*[F.col(f"`{c}`") for c in cfg.source_columns])
    # a raw key's JSON text is computed only here, for the few records that reach the gate
    key_text = key_json_column(key) if cfg.key_raw else key
    outside = (range_reason_column(F.col(EVENT_TIME_OUT))
               if EVENT_TIME_OUT in projected.columns else F.lit(None).cast("string"))
    verdict = F.call_function("tidemark_gate", F.lit(gate_config_text(cfg)), corrupt, key_text,
                              et, ours, record, outside)
    keep = F.when(needs_gate, verdict).otherwise(F.lit(True))
    if cfg.judge_lateness and not cfg.event_basis:
        wlim = F.coalesce(ours - F.lit(cfg.allowed_lateness + cfg.size), F.lit(LONG_MIN))
    else:
        wlim = F.lit(LONG_MIN)
    # the verdict is a column the filter reads, not the filter's condition: Spark pushes a
    # filter below a projection by inlining the projection's expressions into it (the event
    # time's range check four times, the dead letter's envelope twice: 195 expressions that
    # the optimizer, the planner and the code generator walk every batch), but never through
    # a projection holding a nondeterministic column such as the gate's verdict
    return projected.select("*", keep.alias(KEEP)).where(F.col(KEEP)).select(
        *[F.col(c) for c in cfg.out_columns], wlim.cast("bigint").alias(WLIM))
