"""An expression that is nothing but a source column is read from the source's schema (no SQL
parse, no analysis of its own): what a user checks is that it resolves exactly as Spark resolves
the same text, names matched case-insensitively, and that anything else still goes to Spark."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

from jobs.spark.errors import SparkRuntimeError
from jobs.spark.extract import _analyse, source_column

pytestmark = pytest.mark.spark


def test_a_plain_column_resolves_as_sparks_own_parse(spark: Any) -> None:
    df = spark.createDataFrame(
        [("a", 1, 1000, ("x", 2)), ("b", None, 2000, None)],
        "Team string, score int, `odd name` bigint, meta struct<region:string,n:int>")
    for text in ("team", "TEAM", "Team", "score", "`odd name`", "meta", "meta.region",
                 "score + 1", "upper(team)"):
        ours = df.select(source_column(df, text).alias("x"))
        sparks = df.select(F.expr(text).alias("x"))
        assert ours.schema == sparks.schema, text
        assert ours.collect() == sparks.collect(), text
        assert _analyse(df, text, "key") == sparks.schema.fields[0].dataType, text


def test_a_name_two_fields_share_is_left_to_spark(spark: Any) -> None:
    df = spark.createDataFrame([(1, 2)], "a int, A bigint")
    with pytest.raises(SparkRuntimeError, match="key"):
        _analyse(df, "a", "key")


def test_an_unknown_column_is_refused_naming_the_field(spark: Any) -> None:
    df = spark.createDataFrame([(1,)], "a int")
    with pytest.raises(SparkRuntimeError, match="'b' is not a column") as err:
        _analyse(df, "b", "event_time")
    assert err.value.field == "event_time"
