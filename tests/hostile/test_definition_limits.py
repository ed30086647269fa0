"""Hostile definitions: each is refused with one error naming the field, never a crash, and in
time linear in its size (the cases of a generated-input attack on ``tidemark validate``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from jobs.definition import DefinitionError, load_definition, validate_raw
from jobs.definition.limits import (
    MAX_AGGREGATIONS,
    MAX_DOCUMENT_CHARS,
    MAX_DOCUMENT_DEPTH,
    MAX_EXPRESSION_CHARS,
    MAX_EXPRESSION_DEPTH,
    MAX_EXPRESSION_NESTING,
    MAX_SCHEMA_DEPTH,
)
from tests.definition.helpers import base


def parquet(**changes: Any) -> dict[str, Any]:
    """A definition on a parquet source: no declared schema."""
    doc = base(**changes)
    doc["source"] = {"kind": "files", "path": "landing", "format": "parquet"}
    return doc


def only_error(doc: Any) -> tuple[str, str]:
    errors = validate_raw(doc)
    assert len(errors) == 1, errors
    with pytest.raises(DefinitionError):
        load_definition(doc)
    return errors[0]


@pytest.mark.parametrize("sql", [
    "user", "current_user", "`current_user`", "session_user", "`session_user`",
    "current_timestamp", "`current_timestamp`", "current_date", "`current_date`",
    "current_time", "lower(`user`)", "concat(team, current_time)",
])
def test_a_name_spark_reads_as_a_clock_or_user_function_is_refused_without_a_schema(sql: str) -> None:
    field, message = only_error(parquet(key=sql))
    assert field == "key"
    assert "not" in message and ("declared column" in message or "deterministic" in message)


def test_a_declared_column_named_user_is_a_column() -> None:
    doc = base(key="user")
    doc["source"]["schema"] = "user STRING, team STRING, score INT, et TIMESTAMP"
    assert validate_raw(doc) == []
    assert load_definition(doc).key == "user"


def test_a_plain_column_on_a_parquet_source_is_still_accepted() -> None:
    assert validate_raw(parquet(key="team")) == []


@pytest.mark.parametrize(("sql", "limit"), [
    ("(" * 49 + "team" + ")" * 49, f"{MAX_EXPRESSION_NESTING} deep"),
    ("(" * 500 + "team" + ")" * 500, f"{MAX_EXPRESSION_NESTING} deep"),
    ("lower(" * 300 + "team" + ")" * 300, f"{MAX_EXPRESSION_NESTING} deep"),
    ("CASE WHEN team = 'a' THEN " * 100 + "team" + " END" * 100, f"{MAX_EXPRESSION_NESTING} deep"),
    ("NOT " * 1000 + "team = 'a'", str(MAX_EXPRESSION_DEPTH)),
    ("team" + " || 'x'" * 200, str(MAX_EXPRESSION_DEPTH)),
    ("team = 'a'" + " AND team = 'a'" * 8000, str(MAX_EXPRESSION_CHARS)),
])
def test_deep_or_long_expressions_are_refused_naming_the_field(sql: str, limit: str) -> None:
    field, message = only_error(base(key=sql))
    assert field == "key"
    assert limit in message


def test_a_long_arithmetic_chain_is_refused() -> None:
    field, message = only_error(base(**{"aggregations[0].of": "score" + " + 1" * 25_000}))
    assert field == "aggregations[0].of"
    assert str(MAX_EXPRESSION_CHARS) in message


def test_expressions_at_the_limits_still_work() -> None:
    nested = "(" * (MAX_EXPRESSION_NESTING - 1) + "score" + ")" * (MAX_EXPRESSION_NESTING - 1)
    chain = "score" + " + 1" * 20
    defn = load_definition(base(**{"aggregations[0].of": nested, "aggregations[1]": {
        "name": "c", "fn": "sum", "of": chain}}))
    assert [a.of for a in defn.aggregations] == [nested, chain]


@pytest.mark.parametrize("size", [
    "99999999999999999999999999", "9223372036854775807", "4611686018427387904",
    "99999999999999999999d", "P99999999999999999999D", "PT99999999999999999999S",
    "9" * 5000, "9" * 5000 + "d",
])
def test_a_duration_written_as_text_gets_the_same_range_check_as_a_number(size: str) -> None:
    field, message = only_error(base(**{"window.size": size}))
    assert field == "window.size"
    assert "too large" in message


def test_the_same_number_as_text_and_as_a_yaml_number_gives_the_same_answer() -> None:
    as_number = validate_raw(base(**{"window.size": 99999999999999999999999999}))
    as_text = validate_raw(base(**{"window.size": "99999999999999999999999999"}))
    assert as_number == as_text


def test_a_5000_digit_yaml_number_is_refused_naming_the_field() -> None:
    text = yaml.safe_dump(base()).replace("size: 2m", "size: " + "9" * 5000)
    field, message = only_error(text)
    assert field == "window.size"
    assert "5000" in message


def test_a_struct_schema_nested_1000_deep_is_refused() -> None:
    schema = "a " + "STRUCT<b: " * 1000 + "INT" + ">" * 1000
    field, message = only_error(base(**{"source.schema": schema}))
    assert field == "source.schema"
    assert f"{MAX_SCHEMA_DEPTH} deep" in message


def test_a_yaml_map_nested_500_deep_is_refused_naming_where() -> None:
    text = "name: x\nwindow: " + "{a: " * 500 + "1" + "}" * 500 + "\n"
    field, message = only_error(text)
    assert field.startswith("window.a.a")
    assert f"{MAX_DOCUMENT_DEPTH} deep" in message


def test_json_arrays_nested_50000_deep_are_refused_not_a_segfault() -> None:
    text = '{"name": "x", "window": ' + "[" * 50_000 + "]" * 50_000 + "}"
    field, message = only_error(text)
    assert field.startswith("window[0]")
    assert f"{MAX_DOCUMENT_DEPTH} deep" in message


def test_a_python_mapping_nested_deep_is_refused() -> None:
    doc: dict[str, Any] = base()
    inner: dict[str, Any] = {}
    doc["window"] = inner
    for _ in range(2000):
        inner["a"] = {}
        inner = inner["a"]
    assert "deep" in only_error(doc)[1]


def test_yaml_aliases_count_as_what_they_expand_to() -> None:
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, 8):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("name: x")
    field, message = only_error("\n".join(lines))
    assert "aliases" in message


def test_a_document_over_the_size_limit_is_refused_before_parsing() -> None:
    text = "name: x\ndescription: '" + "x" * MAX_DOCUMENT_CHARS + "'\n"
    field, message = only_error(text)
    assert field == ""
    assert str(MAX_DOCUMENT_CHARS) in message


def test_too_many_aggregations_are_refused() -> None:
    aggs = [{"name": f"a{i}", "fn": "count"} for i in range(MAX_AGGREGATIONS + 1)]
    field, message = only_error(base(aggregations=aggs))
    assert field == "aggregations"
    assert str(MAX_AGGREGATIONS) in message


def test_many_aggregations_sharing_one_name_report_each_duplicate_once() -> None:
    aggs = [{"name": "a", "fn": "count"}] * MAX_AGGREGATIONS
    errors = validate_raw(base(aggregations=aggs))
    assert len(errors) == MAX_AGGREGATIONS - 1
    assert errors[0] == ("aggregations[1].name", "duplicate name 'a' (also aggregations[0])")


def test_a_flood_of_unknown_fields_is_summarised() -> None:
    doc = {**base(), **{f"f{i}": 1 for i in range(20_000)}}
    errors = validate_raw(json.dumps(doc))
    assert errors[0] == ("", "19980 more unknown fields (allowed: name, description, source, "
                             "key, event_time, watermark, window, allowed_lateness, "
                             "lateness_basis, trigger, accumulation, aggregations, sink)")
    assert len(errors) == 21
    assert errors[1][0] == "f0"


@pytest.mark.parametrize("field", ["window.size", "name", "aggregations[0].name", "trigger"])
def test_a_python_integer_of_5000_digits_anywhere_is_refused_naming_the_field(field: str) -> None:
    got_field, message = only_error(base(**{field: 10**5000}))
    assert got_field == field
    assert "too long" in message


@pytest.mark.parametrize("sql", [
    "rand()", "randn()", "uuid()", "current_timestamp()", "current_timestamp", "now()",
    "current_date()", "current_user()", "session_user()", "monotonically_increasing_id()",
    "concat(team, uuid())", "unix_timestamp()",
])
@pytest.mark.parametrize("field", ["key", "event_time", "aggregations[0].of"])
def test_non_deterministic_functions_are_refused_in_every_expression(sql: str, field: str) -> None:
    got_field, message = only_error(base(**{field: sql}))
    assert got_field == field
    assert "not deterministic" in message or "not allowed" in message
