"""The Spark job writes a key as the same JSON text as the engine and the catalog
(``jobs.engine.records.key_json``): non-ASCII kept, control characters as Jackson escapes them
(short escapes, else upper-case ``\\u00XX``)."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.engine.records import key_json as engine_key_json

KEYS: list[Any] = ["a", "", "é", "日本", "\U0001f600", 'say "hi"', "back\\slash", "line\nbreak",
                   "tab\t", "\x00", "\x1f", "\x7f", "\u2028", "/", "\b\f\r", 0, -7,
                   2**53, True, False, 1.5, -0.25]


@pytest.mark.spark
def test_spark_writes_the_same_text(spark: Any) -> None:
    from pyspark.sql import functions as F

    from jobs.spark.extract import key_json_column as spark_key_json

    strings = [k for k in KEYS if isinstance(k, str)]
    df = spark.createDataFrame([(k,) for k in strings], "k STRING")
    got = [r["t"] for r in df.select(spark_key_json(F.col("k")).alias("t")).collect()]
    assert got == [engine_key_json(k) for k in strings]
    ints = [k for k in KEYS if type(k) is int]
    df = spark.createDataFrame([(k,) for k in ints], "k BIGINT")
    got = [r["t"] for r in df.select(spark_key_json(F.col("k")).alias("t")).collect()]
    assert got == [engine_key_json(k) for k in ints]
