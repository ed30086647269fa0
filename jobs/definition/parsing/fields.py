"""The field readers every section of the parser uses, and the collector of their errors.

Each reader takes the :class:`Collector`, a field path and the raw value, records a problem
naming the field instead of raising, and returns ``None`` for a value it could not read, so
the parser finds every problem of a document in one pass.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any, TypeVar

from jobs.definition.durations import parse_duration
from jobs.definition.errors import DefinitionError, FieldError
from jobs.timeutil import TimeParseError, parse_instant

T = TypeVar("T")


class Collector:
    """Every ``(field, message)`` problem found, each once, in the order found."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self._seen: set[FieldError] = set()

    def add(self, field: str, message: str) -> None:
        if (field, message) not in self._seen:
            self._seen.add((field, message))
            self.errors.append((field, message))

    def take(self, fn: Callable[[], T]) -> T | None:
        """Run a parser that raises DefinitionError; record its errors and return None."""
        try:
            return fn()
        except DefinitionError as exc:
            for error in exc.errors:
                self.add(*error)
            return None


def kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value!r}"
    return f"{type(value).__name__} {value!r}"


MAX_UNKNOWN_REPORTED = 20
"""Unknown fields of one section reported one by one (with a did-you-mean hint); the rest are
counted in one more error, so a flood of fields costs linear time and a readable report."""


def check_keys(c: Collector, raw: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    unknown = [key for key in raw if key not in allowed]
    if len(unknown) > MAX_UNKNOWN_REPORTED:
        more = len(unknown) - MAX_UNKNOWN_REPORTED
        c.add(prefix, f"{more} more unknown fields (allowed: {', '.join(allowed)})")
    for key in unknown[:MAX_UNKNOWN_REPORTED]:
        field = f"{prefix}.{key}" if prefix else str(key)
        close = difflib.get_close_matches(str(key), allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
        c.add(field, f"unknown field{hint}")


def section_of(c: Collector, raw: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        c.add(key, f"must be a mapping of fields, got {kind_of(value)}")
        return None
    return value


def enum_field(c: Collector, field: str, value: Any, options: tuple[str, ...], default: str | None) -> Any:
    if value is None:
        if default is None:
            c.add(field, f"is required (one of {', '.join(options)})")
        return default
    if isinstance(value, str) and value in options:
        return value
    close = difflib.get_close_matches(str(value), options, n=1) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    c.add(field, f"must be one of {', '.join(options)}, got {kind_of(value)}{hint}")
    return None


def bool_field(c: Collector, field: str, value: Any, default: bool) -> bool | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    c.add(field, f"must be true or false, got {kind_of(value)}")
    return None


def text_field(c: Collector, field: str, value: Any, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            c.add(field, "is required")
        return None
    if not isinstance(value, str):
        c.add(field, f"must be text, got {kind_of(value)}")
        return None
    if not value.strip():
        c.add(field, "must not be empty")
        return None
    return value


def duration_field(
    c: Collector, field: str, value: Any, *, default: int | None, positive: bool = False,
    allow_infinite: bool = False,
) -> int | None:
    if value is None:
        if default is None:
            c.add(field, "is required")
        return default
    ms = c.take(lambda: parse_duration(value, field, allow_infinite=allow_infinite))
    if ms is not None and positive and ms <= 0:
        c.add(field, "must be greater than 0")
        return None
    return ms


def instant_field(c: Collector, field: str, value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, date) and not isinstance(value, datetime):  # YAML `2026-01-01`
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, bool) or not isinstance(value, str | int | float | datetime):  # noqa: SIM114
        c.add(field, f"must be an ISO-8601 UTC time or epoch milliseconds, got {kind_of(value)}")
        return None
    if isinstance(value, float) and not value.is_integer():
        c.add(field, f"{value!r} is not a whole number of milliseconds")
        return None
    try:
        return parse_instant(value)
    except TimeParseError:
        c.add(field, f"must be an ISO-8601 UTC time or epoch milliseconds, got {kind_of(value)}")
        return None


def positive_int_field(c: Collector, field: str, value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and value >= 1:
            return int(value)
        c.add(field, f"must be a whole number of at least 1, got {kind_of(value)}")
        return None
    if value < 1:
        c.add(field, f"must be at least 1, got {value}")
        return None
    return value

