"""Every crash the fuzzers found, replayed through its target (targets.py) for good: the input
that crashed, and what the user now gets instead."""

from __future__ import annotations

import pytest

from jobs.definition import validate_raw
from tests.definition.helpers import base
from tests.fuzz import targets

FOUND: list[tuple[str, bytes]] = [
    ("expression", b"0e"),  # sqlglot reads `0e` as a number literal: ValueError in the evaluator
    ("expression", b"team || 1e"),
    # `2f` is a FLOAT literal, so `2f(m)` reads as CAST(2 AS FLOAT(m)): sqlglot's Spark
    # generator raised ValueError while the refusal's message was being written
    ("expression", b"2f(m)"),
    ("expression", b"\x9d.1f(\x00\x00\x00\x00\x00\x00\x00)"),
    # sqlglot's DATE_TRUNC builder raised ValueError on an empty unit while parsing
    ("expression", b"date_trunc("),
]


@pytest.mark.parametrize(("target", "data"), FOUND)
def test_a_found_crash_stays_fixed(target: str, data: bytes) -> None:
    targets.TARGETS[target](data)


def test_a_cast_to_a_malformed_type_is_a_field_error() -> None:
    [(field, message)] = validate_raw(base(key="2f(m)"))
    assert field == "key"
    assert message.startswith("CAST to FLOAT(") and "is not supported" in message, message


def test_a_function_sqlglot_cannot_build_is_a_field_error() -> None:
    [(field, message)] = validate_raw(base(key="date_trunc("))
    assert field == "key"
    assert message.startswith("not a valid SQL expression: "), message


def test_a_number_nothing_can_read_is_a_field_error() -> None:
    assert validate_raw(base(key="0e")) == [("key", "cannot read '0e' as a number")]
