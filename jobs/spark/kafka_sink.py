"""The ``kafka`` sink: every pane of a batch as one message (jobs/kafka/contract.py).

The batch's panes are first written to the Parquet results as the ``parquet`` sink writes them
(the UI, snapshots and migrations read those), then read back and sent, so the messages are
exactly the Parquet rows. A re-run batch rewrites the same Parquet rows and re-sends the same
bytes with the same keys (hence to the same partitions): a consumer that keeps the latest
message per (key, pane_index, retraction) sees every pane once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from jobs.kafka.contract import message_headers, message_key, message_value, side_messages
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.secrets import resolve_options
from jobs.spark.errors import SparkRuntimeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from jobs.spark.context import JobContext

HEADER_NAMES = ("version", "store", "timing", "pane_index", "retraction")
MESSAGE_DDL = "key BINARY, value BINARY, " + ", ".join(f"h_{h} BINARY" for h in HEADER_NAMES)


def _messages(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    names = ["key", "value", *[f"h_{h}" for h in HEADER_NAMES]]
    for rb in batches:
        cols: list[list[bytes]] = [[] for _ in names]
        for row in rb.to_pylist():
            cols[0].append(message_key(row))
            cols[1].append(message_value(row))
            for i, (_, value) in enumerate(message_headers(row), start=2):
                cols[i].append(value)
        yield pa.RecordBatch.from_arrays([pa.array(c, type=pa.binary()) for c in cols],
                                         names=names)


def message_frame(panes: DataFrame) -> DataFrame:
    """Pane rows (the results schema) as Kafka writer rows: key, value, headers."""
    from pyspark.sql import functions as F

    msgs = panes.mapInArrow(_messages, MESSAGE_DDL)
    headers = F.array(*[
        F.struct(F.lit(f"tidemark.{h}").alias("key"), F.col(f"h_{h}").alias("value"))
        for h in HEADER_NAMES
    ])
    return msgs.select("key", "value", headers.alias("headers"))


def _write(ctx: JobContext, frame: DataFrame, topic: str | None) -> None:
    try:
        options = resolve_options(dict(ctx.defn.sink.options), "sink.options")
    except KafkaSetupError as exc:
        raise SparkRuntimeError(exc.message, exc.field) from exc
    writer = frame.write.format("kafka").option("topic", topic)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save()


def send_panes(ctx: JobContext, panes: DataFrame) -> None:
    """Send ``panes`` (rows in the results schema) to the sink's topic."""
    _write(ctx, message_frame(panes), ctx.defn.sink.topic)


def send_side(ctx: JobContext, spark: SparkSession, batch_id: int) -> None:
    """Send the batch's late records and dead letters (the side files the batch wrote) to the
    sink's ``late_topic`` / ``dead_letter_topic``, where set."""
    from jobs.spark.sinks import read_side

    sink = ctx.defn.sink
    for kind, topic in (("late", sink.late_topic), ("dead_letters", sink.dead_letter_topic)):
        if topic is None:
            continue
        lines = read_side(ctx.output_root, kind, batch_id)
        if lines:
            msgs = side_messages(ctx.store, batch_id, lines)
            _write(ctx, spark.createDataFrame(msgs, "key BINARY, value BINARY"), topic)
