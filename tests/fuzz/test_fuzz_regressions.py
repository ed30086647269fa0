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
]


@pytest.mark.parametrize(("target", "data"), FOUND)
def test_a_found_crash_stays_fixed(target: str, data: bytes) -> None:
    targets.TARGETS[target](data)


def test_a_number_nothing_can_read_is_a_field_error() -> None:
    assert validate_raw(base(key="0e")) == [("key", "cannot read '0e' as a number")]
