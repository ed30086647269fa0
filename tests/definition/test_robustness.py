"""The UI calls ``validate_raw`` on every keystroke: whatever is typed, it must answer with
field errors, never crash."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import DefinitionError, ExpressionError, compile_expression, validate_raw
from tests.definition.helpers import base

SQL_ALPHABET = st.sampled_from(
    list("abcxyz019 _.,()'\"`;-+*/%<>=!|[]{}:$\\\n") + [
        "select ", "from ", "reflect", "case ", "when ", "then ", "end", "cast(", " as ",
        "int", "null", "and ", "or ", "not ", "in ", "/*", "*/", "--", "lower(", "rand()",
        "timestamp_millis(", "over (", "interval ",
    ]
)
sql_text = st.lists(SQL_ALPHABET, max_size=25).map("".join)

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8,
)
FIELDS = ["name", "key", "event_time", "window", "window.size", "window.type", "trigger",
          "trigger.early", "trigger.late", "aggregations", "aggregations[0]",
          "aggregations[0].of", "source", "source.schema", "source.options", "watermark",
          "watermark.delay", "allowed_lateness", "sink", "accumulation"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql_text)
def test_any_expression_text_is_either_accepted_or_a_definition_error(sql: str) -> None:
    try:
        fn = compile_expression(sql, "key")
    except DefinitionError as exc:
        assert exc.errors and exc.errors[0][0] == "key"
        return
    assert callable(fn)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FIELDS), json_values)
def test_any_value_in_any_field_gives_field_errors_not_a_crash(field: str, value: Any) -> None:
    doc = base()
    try:
        doc = base(**{field: value})
    except (TypeError, KeyError, AttributeError, IndexError):
        doc[field.split(".")[0].split("[")[0]] = value
    errors = validate_raw(doc)
    assert all(isinstance(f, str) and isinstance(m, str) and m for f, m in errors)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_any_text_document_gives_errors_not_a_crash(text: str) -> None:
    errors = validate_raw(text)
    assert isinstance(errors, list)


# ------------------------------------------------------- evaluating allowed expressions on junk

ROW_VALUES: st.SearchStrategy[Any] = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats() | st.text(max_size=8)
    | st.sampled_from(["2026-01-01T00:00:00Z", "1e400", "NaN", "12", " 7 ", "true", "{\"a\":1}"])
    | st.lists(st.integers(), max_size=2) | st.dictionaries(st.sampled_from(["a", "b"]),
                                                           st.integers(), max_size=2)
)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    leaves = ["a", "b", "a.a", "1", "-2.5", "1e400", "'x'", "null", "true", "'2026-01-01'"]
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    x = draw(expressions(depth + 1))
    y = draw(expressions(depth + 1))
    forms = [
        f"({x} + {y})", f"({x} - {y})", f"({x} * {y})", f"({x} / {y})", f"({x} % {y})",
        f"({x} div {y})", f"-({x})", f"({x} = {y})", f"({x} < {y})", f"({x} <=> {y})",
        f"({x} AND {y})", f"(NOT {x})", f"({x} IN ({y}, 1))", f"({x} BETWEEN {y} AND 3)",
        f"({x} LIKE {y})", f"CASE WHEN {x} THEN {y} ELSE {x} END", f"CASE {x} WHEN {y} THEN 1 END",
        f"cast({x} AS INT)", f"cast({x} AS TIMESTAMP)", f"cast({x} AS BOOLEAN)",
        f"cast({x} AS STRING)", f"cast({x} AS DOUBLE)", f"try_cast({x} AS BIGINT)",
        f"if({x}, {y}, 0)", f"coalesce({x}, {y})", f"nullif({x}, {y})", f"lower({x})",
        f"concat({x}, {y})", f"substring({x}, {y}, 2)", f"trim({x})", f"length({x})",
        f"abs({x})", f"round({x}, 1)", f"floor({x})", f"ceil({x})", f"to_timestamp({x})",
        f"timestamp_millis({x})", f"timestamp_seconds({x})", f"unix_millis({x})",
        f"date_trunc('HOUR', {x})", f"from_unixtime({x})", f"get_json_object({x}, '$.a')",
        f"to_timestamp({x}, 'yyyy-MM-dd')",
    ]
    return draw(st.sampled_from(forms))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), ROW_VALUES, ROW_VALUES, st.booleans())
def test_evaluation_fails_only_with_expression_error(sql: str, a: Any, b: Any,
                                                      ansi: bool) -> None:
    fn = compile_expression(sql, "aggregations[0].of", ansi=ansi)
    try:
        fn({"a": a, "b": b})
    except ExpressionError as exc:
        assert exc.field == "aggregations[0].of"
