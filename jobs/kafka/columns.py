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
)
"""(name, Spark type): the message key as UTF-8 text, where it came from, and the broker's (or
producer's) timestamp."""

METADATA_NAMES = tuple(name for name, _ in METADATA_COLUMNS)
METADATA_DDL = ", ".join(f"{name} {dtype}" for name, dtype in METADATA_COLUMNS)
