"""The Python evaluator against real Spark: the same expressions over the same rows must give
the same values (and fail where Spark fails), so ``tidemark replay`` and the Spark job agree.

One local[2] Spark session and one query for all the value checks; still ~1-2 minutes on a
busy 2-core machine (JVM start and code generation for ~80 columns), hence heavy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from jobs.definition import ExpressionError, compile_expression

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

SCHEMA = ("team STRING, score INT, neg INT, x DOUBLE, n INT, padded STRING, s STRING, "
          "et TIMESTAMP, ms BIGINT, payload STRING, flag BOOLEAN, iso STRING, "
          "meta STRUCT<region: STRING>, hdr MAP<STRING, STRING>")
ROWS: list[dict[str, Any]] = [
    {"team": "Red", "score": 7, "neg": -7, "x": 2.5, "n": None, "padded": "  hi  ",
     "s": "2026-01-02 03:04:05", "et": datetime(2026, 1, 1, 0, 2, 5, 250000, tzinfo=UTC),
     "ms": 1767225725000, "payload": '{"a": {"b": [10, {"c": "deep"}]}, "f": 1.5}',
     "flag": True, "iso": "2026-03-15T10:20:30Z", "meta": {"region": "eu"},
     "hdr": {"tenant": "a", "Tenant": "B", "w": "12"}},
    {"team": None, "score": None, "neg": 3, "x": -0.5, "n": 1, "padded": None, "s": None,
     "et": None, "ms": None, "payload": "not json", "flag": None, "iso": None, "meta": None,
     "hdr": None},
    {"team": "bLuE", "score": -15, "neg": 0, "x": 12345.678, "n": 2, "padded": "x", "s": "1999-12-31 23:59:59",
     "et": datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), "ms": -1500, "payload": '{"a": 1}',
     "flag": False, "iso": "2026-01-01 12:00:00", "meta": {"region": None},
     "hdr": {"w": None}},
]

VALUE_EXPRESSIONS = [
    "team", "meta.region", "score + 1", "score - neg * 2", "score * x", "score / 2", "x / 4",
    "score div 4", "neg div 2", "score % 4", "neg % 2", "-score", "score + n",
    "coalesce(n, score, 0)", "nullif(score, 7)", "if(score > 0, 'pos', 'neg')",
    "CASE WHEN score > 5 THEN upper(team) WHEN score IS NULL THEN 'none' ELSE lower(team) END",
    "CASE team WHEN 'Red' THEN 1 WHEN 'bLuE' THEN 2 END",
    "score > 5 AND flag", "score > 5 OR flag", "NOT flag", "n IS NULL", "team IS NOT NULL",
    "score IN (7, 8)", "score IN (1, n)", "score BETWEEN -20 AND 7", "team LIKE 'R%'",
    "team ILIKE 'b%'", "score <=> n", "cast(score AS STRING)", "cast(x AS STRING)",
    "cast(flag AS STRING)", "cast(x AS BIGINT)", "cast(neg AS DOUBLE)", "cast(score AS BOOLEAN)",
    "try_cast(team AS INT)", "lower(team)", "upper(team)", "concat(team, '-', score)",
    "team || '!'", "substring(team, 2, 2)", "substring(team, -2)", "substring(team, 0, 1)",
    "trim(padded)", "ltrim(padded)", "rtrim(padded)", "length(team)", "abs(neg)", "abs(x)",
    "round(x)", "round(x, 1)", "round(score, -1)", "floor(x)", "ceil(x)", "floor(score)",
    "unix_millis(et)", "unix_seconds(et)", "unix_millis(to_timestamp(iso))",
    "unix_millis(to_timestamp(s, 'yyyy-MM-dd HH:mm:ss'))", "unix_millis(timestamp_millis(ms))",
    "unix_millis(date_trunc('HOUR', et))", "unix_millis(date_trunc('MONTH', et))",
    "unix_millis(date_trunc('WEEK', et))", "unix_millis(cast(s AS TIMESTAMP))",
    "from_unixtime(unix_seconds(et))", "from_unixtime(unix_seconds(et), 'yyyy/MM/dd HH:mm')",
    "cast(et AS STRING)", "cast(cast(et AS BIGINT) AS STRING)",
    "get_json_object(payload, '$.a.b[0]')", "get_json_object(payload, '$.a.b[1].c')",
    "get_json_object(payload, '$.a.b[1]')", "get_json_object(payload, '$.f')",
    "get_json_object(payload, '$.a')", "cast(x AS FLOAT)", "cast(x * 1000000 AS STRING)",
    "cast(123456789.0D AS STRING)", "'3' + 1", "length(score)", "cast(' 12 ' AS BIGINT)",
    "cast('yes' AS BOOLEAN)", "upper(flag)", "cast(et AS BIGINT)",
    "unix_millis(cast(score AS TIMESTAMP))", "score = '7'", "x > '1'", "nvl(team, 'x')",
    "'10' > '9'", "if(flag, 1, 2)",
    "hdr['tenant']", "hdr['Tenant']", "hdr['missing']", "cast(hdr['w'] AS INT) + 1",
    "upper(hdr['tenant'])",
]

ERROR_EXPRESSIONS = [
    ("cast(team AS INT)", 0), ("score / 0", 0), ("score div 0", 0), ("score % 0", 0),
    ("to_timestamp(team)", 0), ("cast(x * 1e20 AS BIGINT)", 0),
    ("cast('2.7' AS INT)", 0), ("if(n, 1, 2)", 1),
]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    # tidemark's own session builder: the first session of a test process starts the JVM, and
    # only a JVM started with tidemark's jars (gate, Kafka connector) can load them later
    from jobs.config import Settings
    from jobs.spark.session import build_session

    settings = Settings.from_env({**os.environ, "TIDEMARK_SPARK_MASTER": "local[2]"})
    session = build_session(settings, app_name="tidemark-definition-expr", shuffle_partitions=2,
                            extra_conf={"spark.sql.session.timeZone": "UTC"})
    yield session
    session.stop()


def _frame(spark: Any) -> Any:
    rows = [{**r, "et": r["et"].replace(tzinfo=None) if r["et"] else None} for r in ROWS]
    # naive datetimes are read in the session zone (UTC) by createDataFrame
    return spark.createDataFrame(rows, SCHEMA)


def _python(sql: str, row: dict[str, Any], ansi: bool = True) -> Any:
    value = compile_expression(sql, "expr", ansi=ansi)(row)
    if isinstance(value, datetime):
        raise AssertionError(f"{sql} returns a timestamp; compare via unix_millis")
    return value


def _same(spark_value: Any, ours: Any) -> bool:
    if isinstance(spark_value, Decimal) or isinstance(ours, Decimal):
        return spark_value is not None and ours is not None and float(spark_value) == float(ours)
    if isinstance(spark_value, float) and isinstance(ours, float):
        return spark_value == ours or abs(spark_value - ours) <= 1e-9 * max(1, abs(ours))
    return bool(spark_value == ours) and type(spark_value) is type(ours) or (
        isinstance(spark_value, int | float) and isinstance(ours, int | float)
        and not isinstance(spark_value, bool) and not isinstance(ours, bool)
        and spark_value == ours)


@pytest.mark.parametrize("ansi", [True, False], ids=["ansi", "no_ansi"])
def test_values_match_spark(spark: Any, ansi: bool) -> None:
    spark.conf.set("spark.sql.ansi.enabled", str(ansi).lower())
    df = _frame(spark)
    cols = [f"{sql} AS c{i}" for i, sql in enumerate(VALUE_EXPRESSIONS)]
    got = df.selectExpr(*cols).collect()
    mismatches = []
    for row_index, (spark_row, record) in enumerate(zip(got, ROWS, strict=True)):
        for i, sql in enumerate(VALUE_EXPRESSIONS):
            theirs = spark_row[f"c{i}"]
            ours = _python(sql, record, ansi)
            if not _same(theirs, ours):
                mismatches.append(f"row {row_index}: {sql}: spark {theirs!r}, ours {ours!r}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize(("sql", "row_index"), ERROR_EXPRESSIONS)
def test_ansi_errors_where_spark_errors(spark: Any, sql: str, row_index: int) -> None:
    spark.conf.set("spark.sql.ansi.enabled", "true")
    df = _frame(spark).limit(row_index + 1)
    with pytest.raises(Exception):  # noqa: B017 - Spark raises its own exception types
        df.selectExpr(sql).collect()
    with pytest.raises(ExpressionError):
        compile_expression(sql, "expr", ansi=True)(ROWS[row_index])


def test_without_ansi_bad_values_are_what_spark_gives(spark: Any) -> None:
    spark.conf.set("spark.sql.ansi.enabled", "false")
    exprs = [sql for sql, _ in ERROR_EXPRESSIONS if not sql.startswith("if(")] + [
        "cast(3000000000 AS INT)", "cast(x * 1e20 AS INT)", "'3' + 1", "team + 1",
        "coalesce(cast(team AS INT), -1)", "cast(' -2.7 ' AS BIGINT)",
    ]
    got = _frame(spark).selectExpr(*[f"{sql} AS c{i}" for i, sql in enumerate(exprs)]).collect()
    mismatches = []
    for row_index, (spark_row, record) in enumerate(zip(got, ROWS, strict=True)):
        for i, sql in enumerate(exprs):
            theirs, ours = spark_row[f"c{i}"], _python(sql, record, ansi=False)
            if not _same(theirs, ours):
                mismatches.append(f"row {row_index}: {sql}: spark {theirs!r}, ours {ours!r}")
    assert not mismatches, "\n".join(mismatches)
