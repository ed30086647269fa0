"""Builders of the time functions: ``to_timestamp``, ``from_unixtime``, ``unix_millis`` /
``unix_seconds``, ``date_trunc``, ``timestamp_millis`` / ``timestamp_seconds``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlglot import exp

from jobs.definition.evaluator.compiler import _builds, build
from jobs.definition.evaluator.datepatterns import (
    _format_with_pattern,
    _java_pattern_regex,
    _parse_with_pattern,
)
from jobs.definition.evaluator.functions import _unary
from jobs.definition.evaluator.values import (
    Fn,
    Row,
    _epoch_micros,
    _fail,
    _from_epoch,
    _number,
    _string,
    _timestamp,
)


def _literal_string(node: exp.Expr | None, what: str) -> str:
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise _fail(f"{what} must be a string literal")
    return str(node.this)


def _original_format(node: exp.Expr) -> str | None:
    """The Java pattern as the user wrote it: sqlglot keeps formats in strftime form
    internally but renders them back in Spark's form (``FUNC(arg, 'pattern')``)."""
    rendered = node.sql(dialect="spark")
    m = re.search(r",\s*'((?:[^'\\]|\\.)*)'\s*\)$", rendered)
    return m.group(1).replace("\\'", "'") if m else None


@_builds(exp.StrToTime)
def _str_to_time(node: exp.StrToTime) -> Fn:
    value = build(node.this)
    if not isinstance(node.args.get("format"), exp.Literal):
        raise _fail("to_timestamp: the format must be a string literal")
    pattern = _original_format(node)
    if pattern is None:
        raise _fail("to_timestamp: the format must be a string literal")
    regex = _java_pattern_regex(pattern)

    def run(row: Row) -> datetime | None:
        v = value(row)
        if v is None:
            return None
        if isinstance(v, datetime):
            return _timestamp(v)
        return _parse_with_pattern(_string(v), regex, pattern)

    return run


@_builds(exp.UnixToStr)
def _from_unixtime(node: exp.UnixToStr) -> Fn:
    value = build(node.this)
    fmt = node.args.get("format")
    pattern = "yyyy-MM-dd HH:mm:ss"
    if fmt is not None:
        if not isinstance(fmt, exp.Literal):
            raise _fail("from_unixtime: the format must be a string literal")
        pattern = _original_format(node) or pattern
    _java_pattern_regex(pattern)  # validates the letters

    def run(row: Row) -> str | None:
        v = value(row)
        if v is None:
            return None
        return _format_with_pattern(_from_epoch(_number(v), 1), pattern)

    return run


@_builds(exp.UnixMillis)
def _unix_millis(node: exp.UnixMillis) -> Fn:
    return _unary(node, lambda v: _epoch_micros(_timestamp(v)) // 1000)


@_builds(exp.UnixSeconds)
def _unix_seconds(node: exp.UnixSeconds) -> Fn:
    return _unary(node, lambda v: _epoch_micros(_timestamp(v)) // 1_000_000)


_TRUNC_UNITS = {
    "YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "MONTH": "month",
    "MM": "month", "MON": "month", "WEEK": "week", "DAY": "day", "DD": "day", "HOUR": "hour",
    "MINUTE": "minute", "SECOND": "second", "MILLISECOND": "millisecond",
    "MICROSECOND": "microsecond",
}


def _truncate(ts: datetime, unit: str) -> datetime:
    ts = ts.astimezone(UTC)
    if unit == "year":
        return ts.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "quarter":
        month = 3 * ((ts.month - 1) // 3) + 1
        return ts.replace(month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        return ts.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        day = ts.replace(hour=0, minute=0, second=0, microsecond=0)
        return day - timedelta(days=day.weekday())
    if unit == "day":
        return ts.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "hour":
        return ts.replace(minute=0, second=0, microsecond=0)
    if unit == "minute":
        return ts.replace(second=0, microsecond=0)
    if unit == "second":
        return ts.replace(microsecond=0)
    if unit == "millisecond":
        return ts.replace(microsecond=ts.microsecond // 1000 * 1000)
    return ts


@_builds(exp.TimestampTrunc)
def _date_trunc(node: exp.TimestampTrunc) -> Fn:
    unit_node = node.args.get("unit")
    unit_text = unit_node.name.upper() if unit_node is not None else ""
    unit = _TRUNC_UNITS.get(unit_text)
    if unit is None:
        raise _fail(
            f"date_trunc: unknown unit {unit_text!r} (use YEAR, QUARTER, MONTH, WEEK, DAY, "
            "HOUR, MINUTE, SECOND or MILLISECOND)"
        )
    return _unary(node, lambda v: _truncate(_timestamp(v), unit))


def _timestamp_millis(node: exp.Anonymous) -> Fn:
    return _anon_unary(node, "timestamp_millis", lambda v: _from_epoch(_exact_int(v), 1000))


def _timestamp_seconds(node: exp.Anonymous) -> Fn:
    return _anon_unary(node, "timestamp_seconds", lambda v: _from_epoch(_number(v), 1))


def _exact_int(v: Any) -> int:
    n = _number(v)
    if isinstance(n, float):
        if not n.is_integer():
            raise _fail(f"timestamp_millis needs an integer, got {n}")
        return int(n)
    return n


def _anon_unary(node: exp.Anonymous, name: str, op: Callable[[Any], Any]) -> Fn:
    if len(node.expressions) != 1:
        raise _fail(f"{name} takes exactly one argument")
    inner = build(node.expressions[0])

    def run(row: Row) -> Any:
        v = inner(row)
        return None if v is None else op(v)

    return run
