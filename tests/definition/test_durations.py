"""Duration forms of docs/definition.md, read to milliseconds and written back."""

from __future__ import annotations

import pytest

from jobs.definition import INFINITE, DefinitionError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("250ms", 250), ("10s", 10_000), ("2m", 120_000), ("1h", 3_600_000),
        ("1d", 86_400_000), ("1w", 604_800_000), ("1.5s", 1_500), ("1h30m", 5_400_000),
        ("1m 30s", 90_000), ("PT2M", 120_000), ("P1D", 86_400_000), ("PT0.5S", 500),
        ("P1DT2H", 93_600_000), ("pt10s", 10_000), (120000, 120_000), ("120000", 120_000),
        (0, 0), ("0s", 0), (120000.0, 120_000), ("  2m ", 120_000),
    ],
)
def test_accepted_forms(text: object, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("-1s", "must not be negative"), (-5, "must not be negative"),
        ("0.5ms", "not a whole number of milliseconds"), (1.5, "not a whole number"),
        ("PT0.0001S", "not a whole number"), (True, "boolean true"), (False, "boolean false"),
        (None, "null"), ("", "empty string"), ("soon", "cannot read 'soon'"),
        ("P1M", "months and years"), ("P1Y", "months and years"), ("PT", "cannot read"),
        ("2 minutes", "cannot read"), ([1], "a list"), ("infinite", "not allowed here"),
        (float("nan"), "expected a duration"), (2**62, "too large"),
    ],
)
def test_rejected_forms_name_the_field(value: object, words: str) -> None:
    with pytest.raises(DefinitionError) as info:
        parse_duration(value, "window.size")
    assert info.value.field == "window.size"
    assert words in info.value.message


def test_infinite_only_when_allowed() -> None:
    assert parse_duration("infinite", allow_infinite=True) == INFINITE
    assert parse_duration("INFINITE", allow_infinite=True) == INFINITE


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0s"), (250, "250ms"), (1_500, "1s500ms"), (120_000, "2m"), (600_000, "10m"),
     (5_400_000, "1h30m"), (86_400_000, "1d"), (INFINITE, "infinite")],
)
def test_format_is_short_and_reads_back(ms: int, text: str) -> None:
    assert format_duration(ms) == text
    assert parse_duration(text, allow_infinite=True) == ms
