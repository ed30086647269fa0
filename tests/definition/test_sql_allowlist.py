"""Which SQL a definition may hold: the allow-list, and the tricks it must stop."""

from __future__ import annotations

import pytest

from jobs.definition import DefinitionError, compile_expression, referenced_columns, spark_sql
from jobs.definition.expr import SUPPORTED_FUNCTIONS
from jobs.definition.schema import parse_schema
from jobs.definition.sql import check_expression, plain_column

ACCEPTED = [
    "team", "`odd name`", "meta.region", "a.b.c.d", "score + 1", "score * 2 - 1 / 3",
    "score % 7", "score div 2", "-score", "score >= 10 AND NOT flag OR team = 'x'",
    "score BETWEEN 1 AND 10", "team IN ('a', 'b')", "team NOT IN ('a')", "team LIKE 'a%'",
    "team IS NULL", "team IS NOT NULL", "score <=> 3", "score <> 3", "score != 3",
    "CASE WHEN score > 10 THEN 'hi' WHEN score > 5 THEN lower(team) ELSE 'lo' END",
    "CASE team WHEN 'a' THEN 1 ELSE 0 END", "CAST(score AS BIGINT)", "try_cast(team AS INT)",
    "score::double", "if(score > 1, 'a', 'b')", "coalesce(score, 0)", "nullif(team, '')",
    "lower(team)", "upper(team)", "concat(team, '-', score)", "team || '!'",
    "substring(team, 1, 3)", "substr(team, 2)", "trim(team)", "ltrim(team)", "length(team)",
    "abs(score)", "round(score, 2)", "floor(score)", "ceil(score)", "to_timestamp(ts)",
    "to_timestamp(ts, 'yyyy-MM-dd HH:mm:ss')", "timestamp_millis(ms)", "timestamp_seconds(ms)",
    "unix_millis(ts)", "date_trunc('HOUR', ts)", "from_unixtime(ms)",
    "get_json_object(payload, '$.a.b[0]')", "true", "null", "1.5", "'text'",
    "CASE WHEN upper(trim(status)) IN ('A', 'B') THEN coalesce(score, abs(-1)) END",
]

# (sql, words in the message)
REJECTED = [
    ("reflect('java.lang.Runtime', 'getRuntime')", "function reflect is not allowed"),
    ("java_method('java.lang.System', 'exit', 0)", "function java_method is not allowed"),
    ("upper(reflect('java.lang.Runtime', 'getRuntime'))", "function reflect"),
    ("(select 1)", "subqueries are not allowed"),
    ("score IN (SELECT x FROM t)", "subqueries are not allowed"),
    ("exists(select 1)", "subqueries are not allowed"),
    ("rand()", "function rand is not allowed (it is not deterministic)"),
    ("uuid()", "not deterministic"), ("current_timestamp()", "not deterministic"),
    ("current_timestamp", "not deterministic"), ("now()", "not deterministic"),
    ("unix_timestamp()", "not deterministic"),
    ("input_file_name()", "function input_file_name is not allowed"),
    ("x; drop table y", "';' is not allowed"), ("x;", "';' is not allowed"),
    ("drop table y", "DROP statements are not allowed"),
    ("select * from t", "not allowed"),
    ("sum(score)", "aggregate function sum is not allowed"),
    ("count(*)", "not allowed"),
    ("row_number() over (order by x)", "window function row_number is not allowed"),
    ("*", "'*' is not allowed"), ("t.*", "'*' is not allowed"),
    ("my_udf(score)", "function my_udf is not allowed"),
    ("lpad(team, 5)", "function lpad is not allowed"),
    ("x -- comment", "comments are not allowed"),
    ("x /* ; drop table y */", "comments are not allowed"),
    ("score AS total", "aliases (AS) are not allowed"),
    ("CASE WHEN score > 1 THEN rand() END", "function rand"),
    ("CASE WHEN x THEN upper(java_method('a', 'b')) ELSE 1 END", "function java_method"),
    ("interval 1 day", "INTERVAL is not allowed"),
    ("a[0]", "a subscript [] must be a map column's key as a string literal"),
    ("CAST(score AS DECIMAL(10, 2))", "CAST to DECIMAL(10, 2) is not supported"),
    ("date_trunc('fortnight', ts)", "unknown unit 'FORTNIGHT'"),
    ("to_timestamp(ts, fmt)", "format must be a string literal"),
    ("round(score, digits)", "scale must be an integer literal"),
    ("upper(team", "not a valid SQL expression"), ("", "must not be empty"),
    ("   ", "must not be empty"),
]


@pytest.mark.parametrize("sql", ACCEPTED)
def test_accepted(sql: str) -> None:
    assert check_expression(sql, "key") == []
    compile_expression(sql, "key")  # and it compiles to an evaluator


@pytest.mark.parametrize(("sql", "words"), REJECTED)
def test_rejected_with_named_reason(sql: str, words: str) -> None:
    errors = check_expression(sql, "aggregations[0].of")
    assert len(errors) == 1, errors
    field, message = errors[0]
    assert field == "aggregations[0].of"
    assert words in message, message
    with pytest.raises(DefinitionError):
        compile_expression(sql, "aggregations[0].of")


def test_string_literal_escape_cannot_smuggle_a_call() -> None:
    # the backslash escapes the quote in Spark as in sqlglot: this is ONE string literal
    sql = r"'a\' || reflect(1) || '"
    assert check_expression(sql, "key") == []
    assert compile_expression(sql, "key")({}) == "a' || reflect(1) || "


def test_every_listed_function_is_really_supported() -> None:
    calls = {
        "abs": "abs(-1)", "ceil": "ceil(1.2)", "ceiling": "ceiling(1.2)",
        "char_length": "char_length('ab')", "character_length": "character_length('ab')",
        "coalesce": "coalesce(null, 1)", "concat": "concat('a', 'b')",
        "date_trunc": "date_trunc('DAY', '2026-01-01T10:00:00Z')", "floor": "floor(1.7)",
        "from_unixtime": "from_unixtime(0)", "get_json_object": "get_json_object('{}', '$.a')",
        "if": "if(true, 1, 2)", "ifnull": "ifnull(null, 1)", "lcase": "lcase('A')",
        "length": "length('ab')", "lower": "lower('A')", "ltrim": "ltrim(' a')",
        "mod": "mod(5, 3)", "nullif": "nullif(1, 2)", "nvl": "nvl(null, 1)",
        "round": "round(1.25, 1)", "rtrim": "rtrim('a ')", "substr": "substr('abc', 2)",
        "substring": "substring('abc', 2, 1)", "timestamp_millis": "timestamp_millis(0)",
        "timestamp_seconds": "timestamp_seconds(0)", "to_timestamp": "to_timestamp('2026-01-01')",
        "trim": "trim(' a ')", "try_cast": "try_cast('x' AS INT)", "ucase": "ucase('a')",
        "unix_millis": "unix_millis('1970-01-01T00:00:01Z')",
        "unix_seconds": "unix_seconds('1970-01-01T00:00:01Z')", "upper": "upper('a')",
    }
    assert set(calls) == set(SUPPORTED_FUNCTIONS)
    for sql in calls.values():
        assert check_expression(sql, "key") == [], sql
        compile_expression(sql, "key")({})


def test_columns_checked_against_schema() -> None:
    schema = parse_schema("team STRING, meta STRUCT<region: STRING>, attrs MAP<STRING, INT>")
    assert check_expression("upper(Team)", "key", schema) == []
    assert check_expression("meta.region", "key", schema) == []
    assert check_expression("attrs.anything", "key", schema) == []
    assert check_expression("concat(team, score)", "key", schema) == [
        ("key", "unknown column 'score' (source.schema has team, meta, attrs)")]
    assert check_expression("meta.city", "key", schema) == [
        ("key", "column 'meta' has no field 'city'")]


def test_referenced_columns_are_top_level_names() -> None:
    assert referenced_columns("concat(team, meta.region, '-', `odd name`)") == {
        "team", "meta", "odd name"}
    assert referenced_columns("1 + 2") == set()


def test_plain_column_is_one_top_level_name_only() -> None:
    assert plain_column("team") == "team"
    assert plain_column("`odd name`") == "odd name"
    assert plain_column("`a``b`") == "a`b"
    for other in ("meta.region", "(team)", "team + 1", "lower(team)", "'team'", "1"):
        assert plain_column(other) is None, other
    with pytest.raises(DefinitionError):
        plain_column("reflect('a', 'b')")


def test_spark_sql_renders_the_checked_tree() -> None:
    assert spark_sql("lower( team )") == "LOWER(team)"
    assert spark_sql("cast(x as bigint)") == "CAST(x AS BIGINT)"
    with pytest.raises(DefinitionError):
        spark_sql("reflect('a', 'b')")
