"""tidemark's plain-case JSON parser (``FastJson.java`` through ``jobs.spark.fast_json``) gives
every value exactly the row Spark's ``from_json`` gives it: PERMISSIVE, the corrupt-record
column holding the text of a value that is not a valid record. Random values mix the plain
case with everything it must leave to Spark (escapes, non-ASCII and invalid UTF-8, fractions,
big numbers, nested values, repeated names, trailing text, wrong kinds)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spark.json_values import CORRUPT, OPTIONS, SCHEMA, one_change_texts, values


def _rows(df: Any) -> list[str]:
    return [repr(r["v"]) for r in df.collect()]


def _plain(i: int) -> bytes:
    return (f'{{"s":"k{i}", "i":{i}, "l":{-i * 10**12}, "b":{str(i % 2 == 0).lower()},'
            f' "d":{i}, "x":null}}').encode()


@pytest.mark.spark
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.lists(values(), min_size=1, max_size=300))
def test_the_same_rows_as_from_json(spark: Any, batch: list[bytes | None]) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from jobs.spark.fast_json import parse_json

    df = spark.createDataFrame([(v,) for v in batch], "value BINARY")
    text = F.col("value").cast("string")
    ours = df.select(parse_json(spark, text, StructType.fromDDL(SCHEMA), CORRUPT, OPTIONS)
                     .alias("v"))
    theirs = df.select(F.from_json(text, f"{SCHEMA}, {CORRUPT} STRING", OPTIONS).alias("v"))
    assert _rows(ours) == _rows(theirs)


@pytest.mark.spark
def test_one_change_to_a_plain_record(spark: Any) -> None:
    """Every column of a plain record, and a repeated or unknown name, set to each edge
    value in turn: the same rows as ``from_json``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from jobs.spark.fast_json import parse_json

    texts = one_change_texts()
    df = spark.createDataFrame([(t.encode(),) for t in texts], "value BINARY")
    text = F.col("value").cast("string")
    ours = df.select(parse_json(spark, text, StructType.fromDDL(SCHEMA), CORRUPT, OPTIONS)
                     .alias("v"))
    theirs = df.select(F.from_json(text, f"{SCHEMA}, {CORRUPT} STRING", OPTIONS).alias("v"))
    assert list(zip(texts, _rows(ours), strict=True)) == list(
        zip(texts, _rows(theirs), strict=True))


@pytest.mark.spark
def test_plain_records_are_parsed_by_tidemark(spark: Any) -> None:
    """The plain case answers by itself (no fallback) and agrees with ``from_json``; a value
    outside it (an escape) is left to Spark."""
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import Column as ClassicColumn
    from pyspark.sql.types import StructType

    from jobs.spark.fast_json import FAST_JSON_CLASS

    schema = StructType.fromDDL(SCHEMA)
    jvm = spark._jvm
    jschema = jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
    cls = getattr(jvm, FAST_JSON_CLASS)
    plain = [_plain(i) for i in range(-3, 40)]
    df = spark.createDataFrame([(v,) for v in [*plain, b'{"s":"a\\"b"}']], "value BINARY")
    text = F.col("value").cast("string")
    fast = df.select(ClassicColumn(cls.column(text._jc, jschema, CORRUPT)).alias("v"))
    got = _rows(fast)
    theirs = _rows(df.select(F.from_json(text, f"{SCHEMA}, {CORRUPT} STRING", OPTIONS)
                             .alias("v")))
    assert got[:-1] == theirs[:-1]
    assert "None" not in got[:-1] and got[-1] == "None"
    first = fast.collect()[3]["v"]
    assert (first["s"], first["i"], first["l"], first["b"], first["d"]) == ("k0", 0, 0, True, 0.0)


@pytest.mark.spark
def test_a_schema_it_does_not_cover_is_parsed_by_spark(spark: Any) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from jobs.spark.fast_json import parse_json

    ddl = "s STRING, t TIMESTAMP, a ARRAY<INT>"
    df = spark.createDataFrame([(b'{"s":"x","t":"2026-01-01T00:00:00Z","a":[1]}',), (b"{",)],
                               "value BINARY")
    text = F.col("value").cast("string")
    ours = df.select(parse_json(spark, text, StructType.fromDDL(ddl), CORRUPT, OPTIONS)
                     .alias("v"))
    theirs = df.select(F.from_json(text, f"{ddl}, {CORRUPT} STRING", OPTIONS).alias("v"))
    assert _rows(ours) == _rows(theirs)
    assert "coalesce" not in ours._jdf.queryExecution().analyzed().toString().lower()
