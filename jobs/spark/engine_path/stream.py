"""The engine-hosting stateful stream, built from the projected source."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs.definition.model import Definition
from jobs.spark.engine_path.buckets import bucket_column
from jobs.spark.engine_path.config import ARRIVAL, BUCKET, DEAD, HostConfig, TimeMode
from jobs.spark.engine_path.dead_letters import dead_letter_column
from jobs.spark.engine_path.output import OUTPUT_DDL
from jobs.spark.engine_path.packing import PACKED, pack_by_bucket, pack_stream
from jobs.spark.extract import EVENT_TIME, KEY, agg_column
from jobs.spark.plan import SHIFT_FLOOR

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class EngineStreamSpec:
    """What :func:`build_engine_stream` needs besides the input frame (the runner fills it)."""

    defn: Definition
    source_columns: Sequence[str]
    """The source's columns, in order: the record a late record or dead letter echoes."""
    buckets: int
    """Buckets for a new checkpoint (an existing one keeps its layout, ``buckets``)."""
    checkpoint: str
    side_root: str
    """Where the processor's tasks write their side files (late records, dead letters...)."""
    arrival: bool = False
    """Test mode: the input has an ``__arrival`` column, the processing time of its record."""
    dead_kinds: tuple[str, ...] | None = None
    """See :func:`~jobs.spark.engine_path.dead_letters.dead_letter_kinds`: set, the input is
    the projection itself and dead letters are marked in SQL and split off by the processor;
    ``None``, the input is the gate's output."""
    corrupt_column: str = ""
    """The projection's corrupt-record column (read only with ``dead_kinds``)."""
    ident: tuple[str, int, str] = ("", 0, "")
    """(job, version, store) of every side record."""
    time_mode: TimeMode = "EventTime"
    """The checkpoint's time mode (``time_mode.time_mode``, chosen once by the runner)."""
    order: tuple[str, ...] = ()
    """Columns that sort a batch's records back into arrival order after the shuffle."""


def build_engine_stream(gated: DataFrame, spec: EngineStreamSpec) -> DataFrame:
    """The engine-hosting stateful stream over ``gated`` (see :class:`EngineStreamSpec`):
    the output rows of ``output.OUTPUT_DDL``, panes only."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    from jobs.spark.engine_path.processor_shell import ProcessorShell
    from jobs.spark.worker_daemon import engine_preload

    defn = spec.defn
    source_columns = tuple(spec.source_columns)
    dead_kinds = spec.dead_kinds
    integral_types = (ByteType, ShortType, IntegerType, LongType)
    types = {f.name: f.dataType for f in gated.schema.fields}
    # only aggregations with an input cross into Python (a count's column is a constant)
    aggs = [agg_column(i) for i, a in enumerate(defn.aggregations) if a.of is not None]
    cfg = HostConfig(
        defn=defn,
        agg_names=tuple(a.name for a in defn.aggregations),
        agg_has_input=tuple(a.of is not None for a in defn.aggregations),
        agg_integral=tuple(isinstance(types[agg_column(i)], integral_types)
                           for i in range(len(defn.aggregations))),
        source_columns=source_columns,
        input_columns=(BUCKET, KEY, EVENT_TIME,
                       *aggs,
                       *source_columns, *((ARRIVAL,) if spec.arrival else ()),
                       *((DEAD,) if dead_kinds is not None else ()), *spec.order),
        checkpoint=spec.checkpoint,
        side_root=spec.side_root,
        arrival=spec.arrival,
        timezone=str(gated.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"),
        source_kinds=dead_kinds,
        ident=spec.ident,
        time_mode=spec.time_mode,
        order_columns=spec.order,
        shift=SHIFT_FLOOR,
    )
    keep = [KEY, EVENT_TIME, *aggs, *[f"`{c}`" for c in source_columns]]
    if spec.arrival:
        keep.append(ARRIVAL)
    ts = F.timestamp_millis(F.col(EVENT_TIME) + F.lit(SHIFT_FLOOR))
    if dead_kinds is not None:
        # a dead letter must not move the watermark (the gate dropped it before withWatermark)
        gated = gated.withColumn(DEAD, dead_letter_column(
            defn.key is not None, source_columns, spec.corrupt_column))
        ts = F.when(F.col(DEAD).isNull(), ts)
        keep.append(DEAD)
    keep.extend(spec.order)
    stream = (
        gated.withColumn("__ts", ts)
        .withWatermark("__ts", f"{defn.watermark.delay} milliseconds")
        .select(bucket_column(gated.sparkSession, spec.checkpoint, spec.buckets).alias(BUCKET),
                *keep)
    )
    # one row per (bucket, chunk of records) crosses into the operator's worker (``packing``),
    # packed in the JVM. The Python stage is for a JVM without tidemark's jar: Spark gives it
    # a worker daemon of its own (even with equal environments), which imports pyarrow, pandas
    # and pyspark's worker but not the engine kernels the operator's daemon pre-loads
    sc = gated.sparkSession.sparkContext
    packed = pack_stream(stream)
    if packed is None:
        bucket_type = stream.schema[BUCKET].dataType.simpleString()
        with engine_preload(sc, "arrow"):
            packed = stream.mapInArrow(pack_by_bucket,
                                       f"{BUCKET} {bucket_type}, {PACKED} binary")
    with engine_preload(sc, f"engine:{defn.window.type}"):  # only this window's kernels
        return packed.groupBy(BUCKET).transformWithStateInPandas(
            statefulProcessor=ProcessorShell(cfg),
            outputStructType=OUTPUT_DDL,
            outputMode="Append",
            timeMode=spec.time_mode,
        )
