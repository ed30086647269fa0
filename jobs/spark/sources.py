"""Streaming readers for a definition's source.

- ``files``: a directory that new files land in, JSON / CSV / Parquet. The schema comes from the
  definition (streaming file sources cannot infer it safely: a schema inferred from the first
  files would silently change when later files differ). JSON and CSV are read PERMISSIVE with a
  corrupt-record column so that an unparsable line becomes a dead letter instead of stopping the
  job. JSON lines are read by Spark's JSON source with tidemark's plain-case parser in front
  of Spark's (jobs/spark/fast_json.py): the same rows, faster. ``maxFilesPerTrigger`` bounds a
  micro-batch (default 1: one landed file = one arrival instant, which is what makes a Spark
  run comparable pane for pane with replay). Spark orders files by modification time, not
  name.
- ``kafka``: Spark's Kafka connector (jobs/spark/kafka_source.py); one micro-batch reaches the
  engine in topic, partition, offset order.
- ``rate``: Spark's load-test source (columns ``timestamp``, ``value``); options pass through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.definition.model import Definition
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.fast_json import json_file_format
from jobs.spark.schema import CORRUPT_COLUMN, parse_ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MAX_FILES_PER_TRIGGER = "1"
RATE_SCHEMA_DDL = "timestamp TIMESTAMP, value BIGINT"


def read_stream(
    spark: SparkSession, defn: Definition, overrides: dict[str, str] | None = None
) -> DataFrame:
    """The definition's source as a streaming DataFrame.

    Columns are the declared schema, plus :data:`CORRUPT_COLUMN` (string, null for good lines)
    for JSON and CSV, so every source looks the same to :mod:`jobs.spark.extract`.
    ``overrides`` win over the definition's ``source.options`` (the CLI and tests use it).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    src = defn.source
    options = dict(src.options)
    options.update(overrides or {})
    if src.kind == "rate":
        reader = spark.readStream.format("rate")
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load().withColumn(CORRUPT_COLUMN, F.lit(None).cast("string"))
    if src.kind == "kafka":
        from jobs.spark.kafka_source import read_kafka

        return read_kafka(spark, defn, options)
    if src.kind != "files":
        raise SparkRuntimeError(
            f"the {src.kind!r} source is not available in this Spark installation "
            "(no connector jar); use files or rate",
            "source.kind",
        )
    if not src.path:
        raise SparkRuntimeError("a files source needs a directory", "source.path")
    fmt = src.format or "json"
    if src.schema is None:
        if fmt != "parquet":
            raise SparkRuntimeError(f"required for {fmt} sources in a job", "source.schema")
        schema = spark.read.parquet(src.path).schema  # Parquet files carry their schema
    else:
        schema = parse_ddl(spark, src.schema)
    if CORRUPT_COLUMN in schema.fieldNames():
        raise SparkRuntimeError(f"the column name {CORRUPT_COLUMN} is reserved", "source.schema")
    options.setdefault("maxFilesPerTrigger", DEFAULT_MAX_FILES_PER_TRIGGER)
    reader = spark.readStream
    if fmt in ("json", "csv"):
        schema = StructType([*schema.fields, StructField(CORRUPT_COLUMN, StringType(), True)])
        options.setdefault("mode", "PERMISSIVE")
        options.setdefault("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        if fmt == "csv":
            options.setdefault("header", "true")
    for name, value in options.items():
        reader = reader.option(name, value)
    reader_format = json_file_format(spark) if fmt == "json" else fmt
    df = reader.schema(schema).format(reader_format).load(src.path)
    if fmt == "parquet":
        df = df.withColumn(CORRUPT_COLUMN, F.lit(None).cast("string"))
    return df


FILE_ORDER_COLUMNS = ("__o_mtime", "__o_file", "__o_block")
"""A record's file in a micro-batch's arrival order (modification time, path, split start;
docs/semantics.md, "Spark"), taken from the file source's metadata before the shuffle so the
engine path can restore the order after it."""

KAFKA_ORDER_COLUMNS = ("__o_topic", "__o_partition", "__o_offset")
"""A Kafka record's place in a micro-batch's arrival order: topic, partition, then offset
(docs/semantics.md, "Spark"). The batch's offset ranges are in the checkpoint's offsets log, so
a re-run batch reads the same records and sorts them the same way."""

ORDER_COLUMNS = (*FILE_ORDER_COLUMNS, *KAFKA_ORDER_COLUMNS)
"""Every arrival-order column a source may carry; a source carries only its own."""


def arrival_order_columns(src: DataFrame, defn: Definition) -> list[Any]:
    """The order columns of a ``files`` (:data:`FILE_ORDER_COLUMNS`) or ``kafka``
    (:data:`KAFKA_ORDER_COLUMNS`) source; empty for other sources. A stable sort on them puts a
    batch's records in arrival order. For files, the lines of one split keep their order
    because Spark's shuffle and the operator's sort by bucket are stable for one map task's
    rows (Spark offers no row position for a streaming JSON or CSV file:
    ``monotonically_increasing_id`` is refused in a streaming query); a Kafka record's offset
    is its position."""
    from pyspark.sql import functions as F

    if defn.source.kind == "kafka":
        return [
            F.col("kafka_topic").alias(KAFKA_ORDER_COLUMNS[0]),
            F.col("kafka_partition").cast("int").alias(KAFKA_ORDER_COLUMNS[1]),
            F.col("kafka_offset").cast("bigint").alias(KAFKA_ORDER_COLUMNS[2]),
        ]
    if defn.source.kind != "files":
        return []
    meta = F.col("_metadata")
    return [
        F.unix_millis(meta["file_modification_time"]).alias(FILE_ORDER_COLUMNS[0]),
        meta["file_path"].alias(FILE_ORDER_COLUMNS[1]),
        meta["file_block_start"].alias(FILE_ORDER_COLUMNS[2]),
    ]


def source_columns(df: DataFrame) -> list[str]:
    """The record's own columns (what a dead letter or late record shows as ``record``)."""
    return [c for c in df.columns if c != CORRUPT_COLUMN]
