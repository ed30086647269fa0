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

from jobs.kafka.contract import message_headers, message_key, message_value
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.secrets import resolve_options
from jobs.spark.errors import SparkRuntimeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

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


def send_panes(ctx: JobContext, panes: DataFrame) -> None:
    """Send ``panes`` (rows in the results schema) to the sink's topic."""
    sink = ctx.defn.sink
    try:
        options = resolve_options(dict(sink.options), "sink.options")
    except KafkaSetupError as exc:
        raise SparkRuntimeError(exc.message, exc.field) from exc
    writer = message_frame(panes).write.format("kafka").option("topic", sink.topic)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.save()
