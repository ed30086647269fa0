"""The Python evaluator gives what Spark gives for the same expression and record (UTC session
time zone), in ANSI mode (Spark 4's default) and without it (the platform's Spark sessions).
Expected values are worked out by hand from Spark's documented semantics (and cross-checked
against real Spark in test_expr_vs_spark.py), not copied from the implementation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobs.definition import DefinitionError, ExpressionError, compile_expression

ROW: dict[str, Any] = {
    "team": "Red", "score": 7, "neg": -7, "x": 2.5, "n": None, "flag": True, "empty": "",
    "padded": "  hi  ", "et": "2026-01-01T00:02:05Z", "ms": 1767225725000,
    "meta": {"region": "eu", "geo": {"lat": 1.5}}, "Mixed": "case",
    "payload": '{"a": {"b": [10, {"c": "deep"}]}, "s": "str", "f": 1.5, "t": true, "z": null}',
    "s": "2026-01-02 03:04:05",
}


def ev(sql: str, row: dict[str, Any] | None = None, *, ansi: bool = True) -> Any:
    return compile_expression(sql, "key", ansi=ansi)(ROW if row is None else row)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # columns and field access
        ("team", "Red"), ("missing", None), ("meta.region", "eu"), ("meta.geo.lat", 1.5),
        ("meta.nope", None), ("n.x", None), ("mixed", "case"), ("MIXED", "case"),
        # arithmetic: / is always double, div truncates toward zero, % has the dividend's sign
        ("score + 1", 8), ("score - 10", -3), ("score * x", 17.5), ("score / 2", 3.5),
        ("score / 7", 1.0), ("score div 2", 3), ("neg div 2", -3), ("neg % 3", -1),
        ("score % -3", 1), ("-7.5 % 2", -1.5), ("-score", -7), ("'3' + 1", 4),
        # null in, null out
        ("score + n", None), ("n * 2", None), ("upper(n)", None), ("concat(team, n)", None),
        ("n = 1", None), ("n > 1", None), ("abs(n)", None), ("substring(n, 1, 2)", None),
        ("cast(n AS INT)", None), ("date_trunc('DAY', n)", None), ("length(n)", None),
        ("n IN (1, 2)", None), ("score IN (1, n)", None), ("score IN (7, n)", True),
        # three-valued logic
        ("n AND false", False), ("n AND true", None), ("n OR true", True), ("n OR false", None),
        ("NOT n", None), ("NOT flag", False), ("n IS NULL", True), ("team IS NOT NULL", True),
        ("n <=> n", True), ("score <=> n", False), ("score <=> 7", True),
        # comparisons
        ("score > 5", True), ("score = 7.0", True), ("team = 'Red'", True), ("team < 'S'", True),
        ("score BETWEEN 1 AND 7", True), ("score BETWEEN 8 AND n", False),
        ("team LIKE 'R_d'", True), ("team LIKE 'r%'", False), ("team ILIKE 'r%'", True),
        ("'50%' LIKE '50\\%'", True),
        # conditionals (a null condition is not true)
        ("CASE WHEN n THEN 1 ELSE 2 END", 2), ("CASE WHEN score > 5 THEN 'hi' END", "hi"),
        ("CASE WHEN score > 50 THEN 'hi' END", None), ("CASE team WHEN 'Red' THEN 1 END", 1),
        ("CASE n WHEN n THEN 1 ELSE 0 END", 0), ("if(n, 1, 2)", 2), ("if(flag, 1, 2)", 1),
        ("coalesce(n, n, 3)", 3), ("nullif(score, 7)", None), ("nullif(score, 8)", 7),
        ("nvl(n, 'd')", "d"),
        ("CASE WHEN score > 5 THEN upper(concat(team, '-', coalesce(n, 'x'))) END", "RED-X"),
        # casts (ANSI: invalid input raises, try_cast gives null)
        ("cast(score AS STRING)", "7"), ("cast(x AS STRING)", "2.5"),
        ("cast(flag AS STRING)", "true"), ("cast(1e20 AS STRING)", "1.0E20"),
        # Java Double.toString: plain between 1e-3 and 1e7, scientific outside
        ("cast(1e7 AS STRING)", "1.0E7"), ("cast(123456789.5 AS STRING)", "1.234567895E8"),
        ("cast(9999999.0 AS STRING)", "9999999.0"), ("cast(0.0001 AS STRING)", "1.0E-4"),
        ("cast(x AS FLOAT)", 2.5), ("cast(0.1 AS FLOAT)", 0.10000000149011612),
        ("cast('12' AS INT)", 12), ("cast(' 12 ' AS BIGINT)", 12), ("cast(2.9 AS INT)", 2),
        ("cast(-2.9 AS INT)", -2), ("cast(flag AS INT)", 1), ("cast('2.5' AS DOUBLE)", 2.5),
        ("cast('true' AS BOOLEAN)", True), ("cast(0 AS BOOLEAN)", False),
        ("try_cast('abc' AS INT)", None), ("score::double", 7.0),
        ("cast(et AS TIMESTAMP)", datetime(2026, 1, 1, 0, 2, 5, tzinfo=UTC)),
        ("cast(60 AS TIMESTAMP)", datetime(1970, 1, 1, 0, 1, tzinfo=UTC)),  # seconds, as Spark
        ("cast(cast(et AS TIMESTAMP) AS BIGINT)", 1767225725),
        ("cast(to_timestamp(et) AS STRING)", "2026-01-01 00:02:05"),
        # strings (substring is 1-based; 0 acts as 1; negative counts from the end)
        ("lower(team)", "red"), ("upper(team)", "RED"), ("concat(team, '-', score)", "Red-7"),
        ("team || score", "Red7"), ("substring('hello', 2, 3)", "ell"),
        ("substring('hello', 0, 2)", "he"), ("substring('hello', -3)", "llo"),
        ("substring('hello', -3, 2)", "ll"), ("substring('hello', 10)", ""),
        ("substring('hello', 2, -1)", ""), ("trim(padded)", "hi"), ("ltrim(padded)", "hi  "),
        ("rtrim(padded)", "  hi"), ("trim(BOTH 'x' FROM 'xxaxx')", "a"), ("length(team)", 3),
        ("length(empty)", 0), ("length(score)", 1),
        # math (round is HALF_UP; floor/ceil of a double give an integer)
        ("abs(neg)", 7), ("abs(-2.5)", 2.5), ("round(2.5)", 3.0), ("round(-2.5)", -3.0),
        ("round(1.2345, 2)", 1.23), ("round(1.235, 2)", 1.24), ("round(15, -1)", 20),
        ("round(score)", 7), ("floor(x)", 2), ("floor(-2.5)", -3), ("ceil(x)", 3),
        ("ceil(-2.5)", -2), ("floor(score)", 7),
        # time: record fields may be ISO text or epoch ms; results are UTC datetimes
        ("to_timestamp(et)", datetime(2026, 1, 1, 0, 2, 5, tzinfo=UTC)),
        ("to_timestamp(s, 'yyyy-MM-dd HH:mm:ss')", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("to_timestamp('02/01/2026 03:04', 'dd/MM/yyyy HH:mm')",
         datetime(2026, 1, 2, 3, 4, tzinfo=UTC)),
        ("to_timestamp('2026-01-02T03:04:05.250+01:00', \"yyyy-MM-dd'T'HH:mm:ss.SSSXXX\")",
         datetime(2026, 1, 2, 2, 4, 5, 250000, tzinfo=UTC)),
        ("unix_millis(to_timestamp(et))", 1767225725000), ("unix_millis(et)", 1767225725000),
        ("unix_millis(ms)", 1767225725000), ("unix_seconds(et)", 1767225725),
        ("timestamp_millis(ms)", datetime(2026, 1, 1, 0, 2, 5, tzinfo=UTC)),
        ("timestamp_seconds(1.5)", datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=UTC)),
        ("date_trunc('HOUR', et)", datetime(2026, 1, 1, 0, 0, tzinfo=UTC)),
        ("date_trunc('minute', '2026-03-15T10:20:30Z')", datetime(2026, 3, 15, 10, 20,
                                                                   tzinfo=UTC)),
        ("date_trunc('WEEK', '2026-03-15T10:20:30Z')", datetime(2026, 3, 9, tzinfo=UTC)),
        ("date_trunc('QUARTER', '2026-03-15T10:20:30Z')", datetime(2026, 1, 1, tzinfo=UTC)),
        ("from_unixtime(86400)", "1970-01-02 00:00:00"),
        ("from_unixtime(86400, 'yyyy/MM/dd HH')", "1970/01/02 00"),
        ("unix_millis(timestamp_millis(ms)) = ms", True),
        # JSON: text results, objects rendered compactly, null for missing or bad JSON
        ("get_json_object(payload, '$.s')", "str"), ("get_json_object(payload, '$.f')", "1.5"),
        ("get_json_object(payload, '$.t')", "true"), ("get_json_object(payload, '$.z')", None),
        ("get_json_object(payload, '$.a.b[0]')", "10"),
        ("get_json_object(payload, '$.a.b[1].c')", "deep"),
        ("get_json_object(payload, '$.a.b[1]')", '{"c":"deep"}'),
        ("get_json_object(payload, '$.nope')", None), ("get_json_object('{bad', '$.a')", None),
        # literals
        ("1.5", 1.5), ("'x'", "x"), ("null", None), ("true", True),
    ],
)
def test_evaluates_like_spark(sql: str, expected: Any) -> None:
    result = ev(sql)
    assert result == expected
    assert type(result) is type(expected)
    if sql not in ANSI_ONLY:  # valid input: the same value with ANSI mode off
        legacy = ev(sql, ansi=False)
        assert legacy == expected and type(legacy) is type(expected)


ANSI_ONLY = {"'3' + 1"}  # without ANSI, text in arithmetic is a double: 4.0


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # Spark with spark.sql.ansi.enabled=false (the platform's sessions): bad input is null
        ("cast('abc' AS INT)", None), ("cast('2.7' AS INT)", 2), ("cast(' -2.7 ' AS BIGINT)", -2),
        ("cast('99999999999' AS INT)", None), ("cast(3000000000 AS INT)", -1294967296),
        ("cast(1e20 AS BIGINT)", 9223372036854775807), ("cast(-1e20 AS INT)", -2147483648),
        ("score / 0", None), ("score div 0", None), ("score % 0", None),
        ("team + 1", None), ("'3' + 1", 4.0), ("coalesce(cast(team AS INT), -1)", -1),
        ("to_timestamp(team)", None), ("cast('maybe' AS BOOLEAN)", None),
        ("concat(team, cast(team AS INT))", None), ("9223372036854775807 + 1",
                                                     -9223372036854775808),
    ],
)
def test_without_ansi_bad_values_are_null(sql: str, expected: Any) -> None:
    result = ev(sql, ansi=False)
    assert result == expected and type(result) is type(expected)


def test_platform_default_is_the_spark_session_mode() -> None:
    from jobs.definition.expr import SPARK_ANSI
    from jobs.spark.session import BASE_CONF  # the settings every Spark session gets

    assert BASE_CONF["spark.sql.ansi.enabled"] == str(SPARK_ANSI).lower()
    assert compile_expression("cast(x AS INT)", "key")({"x": "bad"}) is None


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("cast('abc' AS INT)", "cannot cast 'abc' to INT"),
        ("cast(3000000000 AS INT)", "overflows INT"),
        ("score / 0", "division by zero"), ("score div 0", "division by zero"),
        ("score % 0", "division by zero"), ("team + 1", "cannot read 'Red' as a number"),
        ("cast('maybe' AS BOOLEAN)", "cannot read 'maybe' as a boolean"),
        ("to_timestamp(team)", "cannot read 'Red' as a timestamp"),
        ("to_timestamp(s, 'dd.MM.yyyy')", "does not match the pattern"),
        ("unix_millis(flag)", "boolean"),
        ("cast('2.7' AS INT)", "cannot cast '2.7' to INT"),  # ANSI: not an integer
        ("if(score, 1, 2)", "a condition must be a boolean, got 7"),
        ("score AND flag", "a condition must be a boolean"),
    ],
)
def test_ansi_invalid_data_raises_expression_error_naming_field_and_expression(
    sql: str, words: str
) -> None:
    with pytest.raises(ExpressionError) as info:
        ev(sql, ansi=True)
    assert info.value.field == "key"
    assert words in str(info.value)
    assert f"(in {sql})" in str(info.value)
    assert isinstance(info.value, DefinitionError)  # one error type for the package


def test_bare_column_fast_path_is_a_plain_lookup() -> None:
    fn = compile_expression("team", "key")
    assert fn({"team": "a"}) == "a"
    assert fn({}) is None
    assert fn({"TEAM": "b"}) == "b"  # Spark column names are case-insensitive


def test_compiled_function_is_reusable_over_many_rows() -> None:
    fn = compile_expression("CASE WHEN score >= 10 THEN 'big' ELSE lower(team) END", "key")
    rows = [{"team": "A", "score": s} for s in (1, 10, None)]
    assert [fn(r) for r in rows] == ["a", "big", "a"]
