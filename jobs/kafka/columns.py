"""The Kafka metadata columns a kafka source adds beside the value's own columns.

They are ordinary columns for ``key``, ``event_time`` and aggregation expressions (the
definition's allow-list checks expressions against the value schema plus these), and they
appear in every dead letter's and late record's ``record``, so a bad record can be found again
by topic, partition and offset.
"""

from __future__ import annotations

METADATA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kafka_key", "STRING"),
    ("kafka_topic", "STRING"),
    ("kafka_partition", "INT"),
    ("kafka_offset", "BIGINT"),
    ("kafka_timestamp", "TIMESTAMP"),
    ("kafka_headers", "MAP<STRING, STRING>"),
)
"""(name, Spark type): the message key as UTF-8 text, where it came from, the broker's (or
producer's) timestamp, and the message's headers (see :data:`HEADERS`)."""

METADATA_NAMES = tuple(name for name, _ in METADATA_COLUMNS)
METADATA_DDL = ", ".join(f"{name} {dtype}" for name, dtype in METADATA_COLUMNS)

HEADERS = "kafka_headers"
"""The headers as a map from name to value, read as ``kafka_headers['name']``. A value is its
bytes decoded as UTF-8; a value that is not valid UTF-8, a null value and an absent name are
null. A name that occurs more than once keeps its last value (Kafka's ``lastHeader``). A job
reads headers only when its expressions use the column (``jobs.spark.kafka_source``); in
other jobs the column is not there, nor in their late and dead-letter records."""


def header_text(value: bytes | None) -> str | None:
    """A header value as the column holds it: UTF-8 text, or None (null, not valid UTF-8)."""
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def headers_map(headers: list[tuple[str, bytes | None]] | None) -> dict[str, str | None]:
    """The column's value for a message's headers, in order (the last value of a name wins)."""
    return {name: header_text(value) for name, value in headers or []}
