"""The ``kafka`` source: Spark's own Kafka connector, values parsed by the declared schema.

The connector (``spark-sql-kafka-0-10``, the ``spark-kafka`` JVM bundle) keeps the offsets of
every micro-batch in the checkpoint's offsets log, so a restarted query re-reads exactly the
batch it had not committed: exactly once from Kafka rests on that and on the idempotent sinks.

The value is parsed with ``from_json`` (through tidemark's plain-case parser first,
jobs/spark/fast_json.py) / ``from_csv`` in PERMISSIVE mode with a corrupt-record
column, as the files source does: a value that is not JSON or has a wrong type becomes a dead
letter whose ``record`` is ``{"kafka_topic", "kafka_partition", "kafka_offset", "kafka_value"}``
(the raw text), and never stops the job. The metadata columns of :mod:`jobs.kafka.columns` sit
beside the value's columns, so a null key or event time gives a dead letter that also carries
topic, partition and offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.definition.model import Definition
from jobs.definition.sql import referenced_columns
from jobs.kafka.columns import HEADERS, METADATA_NAMES
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.secrets import resolve_options
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.fast_json import parse_json
from jobs.spark.schema import CORRUPT_COLUMN, parse_ddl

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

DEFAULTS = {"startingOffsets": "earliest", "failOnDataLoss": "true", "includeHeaders": "false"}
"""A new store reads the topic from its earliest retained offsets; a gap in the offsets (data
deleted before the job read it) fails the query loudly rather than skipping records."""


def uses_headers(defn: Definition) -> bool:
    """Whether an expression of ``defn`` reads ``kafka_headers``: only then does the job ask
    the connector for headers (``includeHeaders``) and build the map for every record."""
    texts = [defn.key, defn.event_time, *(a.of for a in defn.aggregations)]
    return any(HEADERS in {c.lower() for c in referenced_columns(t)} for t in texts if t)


def headers_column(headers: Column) -> Column:
    """The connector's ``headers`` (an array of (key, binary value) in message order) as
    ``kafka_headers``: name -> value as UTF-8 text, null where the bytes are not valid UTF-8;
    a name given twice keeps its last value; no headers is an empty map
    (``jobs.kafka.columns.headers_map`` is its Python twin)."""
    from pyspark.sql import functions as F

    last = F.filter(headers, lambda h, i: ~F.exists(
        F.slice(headers, i + 2, F.size(headers) + 1), lambda g: g["key"] == h["key"]))
    entries = F.transform(last, lambda h: F.struct(
        h["key"].alias("key"), F.try_validate_utf8(h["value"].cast("string")).alias("value")))
    empty = F.create_map().cast("map<string,string>")
    return F.when(headers.isNull(), empty).otherwise(F.map_from_entries(entries))


def read_kafka(spark: SparkSession, defn: Definition, overrides: dict[str, str]) -> DataFrame:
    """The topic as a streaming DataFrame: value columns, metadata columns, corrupt text."""
    from pyspark.sql import functions as F

    src = defn.source
    headers = uses_headers(defn)
    forced = {"includeHeaders": "true"} if headers else {}
    try:
        options = resolve_options({**DEFAULTS, **dict(src.options), **overrides, **forced},
                                  "source.options")
    except KafkaSetupError as exc:
        raise SparkRuntimeError(exc.message, exc.field) from exc
    if src.schema is None:
        raise SparkRuntimeError("required for a kafka source in a job", "source.schema")
    schema = parse_ddl(spark, src.schema)
    clash = sorted(set(schema.fieldNames()) & {*METADATA_NAMES, CORRUPT_COLUMN})
    if clash:
        raise SparkRuntimeError(f"the column names {clash} are reserved", "source.schema")
    reader = spark.readStream.format("kafka")
    for name, value in options.items():
        reader = reader.option(name, value)
    raw = reader.load()
    parse_opts = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}
    text = F.col("value").cast("string")
    if (src.format or "json") == "csv":
        parsed = F.from_csv(text, f"{src.schema}, {CORRUPT_COLUMN} STRING", parse_opts)
    else:
        parsed = parse_json(spark, text, schema, CORRUPT_COLUMN, parse_opts)
    # the parse sits in a projection of its own, below the gate's: the gate's filter reads a
    # verdict that projection computes with a nondeterministic function, and Spark pushes no
    # filter through such a projection, so the value is parsed once per record (a filter over
    # the parse would be pushed below it with ``from_json`` inlined into its condition)
    staged = raw.select(
        parsed.alias("__v"),
        text.alias("__text"),
        F.col("key").cast("string").alias("kafka_key"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").cast("int").alias("kafka_partition"),
        F.col("offset").cast("bigint").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        *([headers_column(F.col("headers")).alias(HEADERS)] if headers else []),
    )
    value_cols = [F.col(f"__v.`{f.name}`").alias(f.name) for f in schema.fields]
    # built inside the branch: only malformed values pay for serialising the dead letter
    envelope = F.to_json(F.struct(
        F.col("kafka_topic"), F.col("kafka_partition"), F.col("kafka_offset"),
        F.col("__text").alias("kafka_value")))
    corrupt = F.when(F.col("__v").isNull() | F.col(f"__v.{CORRUPT_COLUMN}").isNotNull(),
                     envelope)
    meta = [n for n in METADATA_NAMES if headers or n != HEADERS]
    return staged.select(*value_cols, *[F.col(n) for n in meta],
                         corrupt.alias(CORRUPT_COLUMN))

