"""JSON parsed by tidemark's plain-case parser first, Spark's own parser second.

Spark's ``from_json`` builds a Jackson parser and a reader for every record: on a small event
(three fields) that is several times the CPU of reading the value at all
(``benchmarks/json_parse.py``). ``jvm/src/tidemark/spark/FastJson.java`` parses a flat object of printable-ASCII names
and strings, integers, booleans and nulls straight from the UTF-8 bytes, and answers null for
anything else (escapes, non-ASCII text, fractions, nested values, a repeated name, trailing
text, a value of the wrong kind for its column). ``coalesce(fast, from_json)`` then gives
every record exactly the row ``from_json`` gives it (PERMISSIVE, corrupt-record column
included): the plain case agrees with ``from_json`` on what it covers
(``tests/spark/test_fast_json.py`` compares the two on random values), and Spark parses the
rest.

A ``files`` source of JSON lines gets the same through ``FastJsonFileFormat.java``: Spark's
JSON source, whose parser answers a plain line itself and hands every other line to Spark's
parsing, so modes, corrupt-record texts and error rows stay Spark's. Multi-line JSON, a
declared encoding and columns the plain case does not cover are read by Spark's source as is.
``TIDEMARK_JSON_PARSER=spark`` leaves all parsing to Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.types import StructType

FAST_JSON_CLASS = "tidemark.spark.FastJson"
FAST_JSON_FILE_FORMAT = "tidemark.spark.FastJsonFileFormat"
"""Spark's JSON Lines file source with the plain-case parser in front of Spark's parser."""


def enabled() -> bool:
    """False when ``TIDEMARK_JSON_PARSER`` (``json_parser`` in the settings file) is
    ``spark``."""
    return Settings.from_env().value("TIDEMARK_JSON_PARSER") != "spark"


def json_file_format(spark: SparkSession) -> str:
    """The format a ``files`` source of JSON lines is read with: :data:`FAST_JSON_FILE_FORMAT`
    where the session's JVM has tidemark's classes, else Spark's ``json``."""
    from py4j.java_gateway import JavaClass

    jvm: Any = spark._jvm
    cls = None if jvm is None or not enabled() else getattr(jvm, FAST_JSON_FILE_FORMAT)
    return FAST_JSON_FILE_FORMAT if isinstance(cls, JavaClass) else "json"


def parse_json(spark: SparkSession, text: Column, schema: StructType, corrupt: str,
               options: dict[str, str]) -> Column:
    """``from_json(text, schema + corrupt, options)``, through the plain-case parser where the
    session's JVM has tidemark's classes and every column of ``schema`` is of a type it
    covers (string, int, bigint, boolean, double)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    full = StructType([*schema.fields, StructField(corrupt, StringType(), True)])
    spark_parse = F.from_json(text, full, options)
    fast = _fast_column(spark, text, schema, corrupt) if enabled() else None
    return spark_parse if fast is None else F.coalesce(fast, spark_parse)


def _fast_column(spark: SparkSession, text: Column, schema: StructType,
                 corrupt: str) -> Column | None:
    from py4j.java_gateway import JavaClass
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm: Any = spark._jvm
    cls = None if jvm is None else getattr(jvm, FAST_JSON_CLASS)
    if not isinstance(cls, JavaClass):
        return None  # no tidemark jar on the session's class path
    jschema = jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
    if not cls.covers(jschema):
        return None
    return ClassicColumn(cls.column(text._jc, jschema, corrupt))
