"""Row schemas of everything the Spark runtime writes, and the definition's source schema.

Results carry the definition's identity (job, version, store) on every row so that consumers can
tell versions apart after a migration (the migration guarantee, docs/spark.md). ``key`` and
``values`` are stored as canonical JSON text: one results schema fits every definition, and a
row reads exactly like the replay output object (``key_json`` of the engine, aggregation names
as JSON fields), which is what the parity tests compare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.spark.errors import SparkRuntimeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

PANE_DDL = (
    "job STRING, version INT, store STRING, key STRING, window_start BIGINT, window_end BIGINT, "
    "first_event_time BIGINT, last_event_time BIGINT, timing STRING, pane_index INT, "
    "is_first BOOLEAN, is_last BOOLEAN, retraction BOOLEAN, `values` STRING, emitted_at BIGINT, "
    "watermark BIGINT"
)
"""One emitted pane. Instants are epoch ms; ``window_*`` are null for the global window and
``*_event_time`` are null except for session and sliding windows (as in replay output)."""

LATE_DDL = (
    "job STRING, version INT, store STRING, key STRING, event_time BIGINT, window_start BIGINT, "
    "window_end BIGINT, reason STRING, record STRING"
)
"""One dropped (record, window) pair; ``record`` is the source record as JSON text."""

DEAD_LETTER_DDL = "job STRING, version INT, store STRING, reason STRING, record STRING"
"""One malformed record and why it could not be used."""

CORRUPT_COLUMN = "_tidemark_corrupt"
"""Where the JSON/CSV readers put the raw text of a line they could not parse."""


def parse_ddl(spark: SparkSession, ddl: str, field: str = "source.schema") -> StructType:
    """The StructType of a Spark DDL string, with an error that names the definition field.
    ``spark`` must be running: the parser is Spark's own, in its JVM."""
    from pyspark.sql.types import StructType

    # StructType.fromDDL: Spark's own parser, without createDataFrame's ~0.5 s first call
    try:
        parsed = StructType.fromDDL(ddl)
    except Exception as exc:  # pyspark raises ParseException / AnalysisException subclasses
        raise SparkRuntimeError(f"not a valid Spark schema ({_first_line(exc)})", field) from exc
    if not isinstance(parsed, StructType) or not parsed.fields:
        raise SparkRuntimeError("must declare at least one column", field)
    return parsed


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
