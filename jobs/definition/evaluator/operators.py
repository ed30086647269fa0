"""Builders of the operators: arithmetic, comparison, logic, ``IN``, ``BETWEEN``, ``LIKE``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlglot import exp

from jobs.definition.evaluator.compiler import _builds, build
from jobs.definition.evaluator.values import (
    Fn,
    Row,
    _boolean,
    _check_int,
    _fail,
    _number,
    _string,
    _timestamp,
)


def _binary(node: exp.Binary, op: Callable[[Any, Any], Any]) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> Any:
        a = left(row)
        if a is None:
            return None
        b = right(row)
        if b is None:
            return None
        return op(a, b)

    return run


def _int_result(v: int | float) -> int | float:
    if isinstance(v, int):
        return _check_int(v)
    return v


@_builds(exp.Add)
def _add(node: exp.Add) -> Fn:
    return _binary(node, lambda a, b: _int_result(_number(a) + _number(b)))


@_builds(exp.Sub)
def _sub(node: exp.Sub) -> Fn:
    return _binary(node, lambda a, b: _int_result(_number(a) - _number(b)))


@_builds(exp.Mul)
def _mul(node: exp.Mul) -> Fn:
    return _binary(node, lambda a, b: _int_result(_number(a) * _number(b)))


def _divide(a: Any, b: Any) -> float:
    x, y = _number(a), _number(b)
    if y == 0:
        raise _fail("division by zero")
    return float(x) / float(y)


@_builds(exp.Div)
def _div(node: exp.Div) -> Fn:
    return _binary(node, _divide)


def _int_divide(a: Any, b: Any) -> int:
    x, y = _number(a), _number(b)
    if y == 0:
        raise _fail("division by zero")
    if isinstance(x, int) and isinstance(y, int):
        q = abs(x) // abs(y)
        return _check_int(q if (x >= 0) == (y >= 0) else -q)
    fx, fy = float(x), float(y)
    if not (math.isfinite(fx) and math.isfinite(fy)):
        raise _fail(f"cannot divide {fx} by {fy} to an integer")
    return _check_int(int(Decimal(repr(fx)) / Decimal(repr(fy))))


@_builds(exp.IntDiv)
def _intdiv(node: exp.IntDiv) -> Fn:
    return _binary(node, _int_divide)


def _remainder(a: Any, b: Any) -> int | float:
    x, y = _number(a), _number(b)
    if y == 0:
        raise _fail("division by zero")
    if isinstance(x, int) and isinstance(y, int):
        r = abs(x) % abs(y)
        return r if x >= 0 else -r
    if not math.isfinite(x) or math.isnan(y):
        return math.nan  # Java: Infinity % y and x % NaN are NaN
    return math.fmod(x, y)


@_builds(exp.Mod)
def _mod(node: exp.Mod) -> Fn:
    return _binary(node, _remainder)


@_builds(exp.Neg)
def _neg(node: exp.Neg) -> Fn:
    inner = build(node.this)

    def run(row: Row) -> Any:
        v = inner(row)
        return None if v is None else _int_result(-_number(v))

    return run


def _comparable(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, datetime) or isinstance(b, datetime):
        return _timestamp(a), _timestamp(b)
    if isinstance(a, bool) and isinstance(b, bool):
        return a, b
    if isinstance(a, bool) or isinstance(b, bool):
        return _boolean(a), _boolean(b)
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    if isinstance(a, int | float | str) and isinstance(b, int | float | str):
        return _number(a), _number(b)
    if type(a) is type(b):
        return a, b
    raise _fail(f"cannot compare a {type(a).__name__} with a {type(b).__name__}")


def _compare(node: exp.Binary, test: Callable[[Any, Any], bool]) -> Fn:
    def op(a: Any, b: Any) -> bool:
        x, y = _comparable(a, b)
        try:
            return test(x, y)
        except TypeError:
            raise _fail(f"cannot compare {a!r} with {b!r}") from None

    return _binary(node, op)


@_builds(exp.EQ)
def _eq(node: exp.EQ) -> Fn:
    return _compare(node, lambda a, b: bool(a == b))


@_builds(exp.NEQ)
def _neq(node: exp.NEQ) -> Fn:
    return _compare(node, lambda a, b: bool(a != b))


@_builds(exp.GT)
def _gt(node: exp.GT) -> Fn:
    return _compare(node, lambda a, b: bool(a > b))


@_builds(exp.GTE)
def _gte(node: exp.GTE) -> Fn:
    return _compare(node, lambda a, b: bool(a >= b))


@_builds(exp.LT)
def _lt(node: exp.LT) -> Fn:
    return _compare(node, lambda a, b: bool(a < b))


@_builds(exp.LTE)
def _lte(node: exp.LTE) -> Fn:
    return _compare(node, lambda a, b: bool(a <= b))


@_builds(exp.NullSafeEQ)
def _null_safe_eq(node: exp.NullSafeEQ) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> bool:
        a, b = left(row), right(row)
        if a is None or b is None:
            return a is None and b is None
        x, y = _comparable(a, b)
        return bool(x == y)

    return run


def _truth(v: Any) -> bool | None:
    """A condition: Spark accepts only booleans (and text it can cast), never numbers."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return _boolean(v)
    raise _fail(f"a condition must be a boolean, got {v!r}")


@_builds(exp.And)
def _and(node: exp.And) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> bool | None:
        a = _truth(left(row))
        if a is False:
            return False
        b = _truth(right(row))
        if b is False:
            return False
        return None if a is None or b is None else True

    return run


@_builds(exp.Or)
def _or(node: exp.Or) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> bool | None:
        a = _truth(left(row))
        if a is True:
            return True
        b = _truth(right(row))
        if b is True:
            return True
        return None if a is None or b is None else False

    return run


@_builds(exp.Not)
def _not(node: exp.Not) -> Fn:
    inner = build(node.this)

    def run(row: Row) -> bool | None:
        v = _truth(inner(row))
        return None if v is None else not v

    return run


@_builds(exp.Is)
def _is(node: exp.Is) -> Fn:
    inner = build(node.this)
    target = node.expression
    if isinstance(target, exp.Null):
        return lambda row: inner(row) is None
    if isinstance(target, exp.Boolean):
        wanted = bool(target.this)
        return lambda row: _truth(inner(row)) is wanted
    raise _fail("IS must be followed by NULL, TRUE or FALSE")


@_builds(exp.In)
def _in(node: exp.In) -> Fn:
    if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
        raise _fail("IN takes a list of values")
    value = build(node.this)
    options = [build(e) for e in node.expressions]

    def run(row: Row) -> bool | None:
        v = value(row)
        if v is None:
            return None
        saw_null = False
        for option in options:
            o = option(row)
            if o is None:
                saw_null = True
                continue
            x, y = _comparable(v, o)
            if x == y:
                return True
        return None if saw_null else False

    return run


@_builds(exp.Between)
def _between(node: exp.Between) -> Fn:
    value, low, high = build(node.this), build(node.args["low"]), build(node.args["high"])

    def run(row: Row) -> bool | None:
        v, lo, hi = value(row), low(row), high(row)
        above = None if v is None or lo is None else bool(_ge(v, lo))
        below = None if v is None or hi is None else bool(_ge(hi, v))
        if above is False or below is False:
            return False
        return None if above is None or below is None else True

    return run


def _ge(a: Any, b: Any) -> bool:
    x, y = _comparable(a, b)
    try:
        return bool(x >= y)
    except TypeError:
        raise _fail(f"cannot compare {a!r} with {b!r}") from None


def _like_regex(pattern: str, escape: str = "\\") -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


@_builds(exp.Like, exp.ILike)
def _like(node: exp.Like | exp.ILike) -> Fn:
    insensitive = isinstance(node, exp.ILike)
    value, pattern = build(node.this), node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        compiled = _like_regex(pattern.this)
        flags = re.IGNORECASE if insensitive else 0
        fixed = re.compile(compiled.pattern, compiled.flags | flags)

        def run_fixed(row: Row) -> bool | None:
            v = value(row)
            return None if v is None else fixed.fullmatch(_string(v)) is not None

        return run_fixed
    dynamic = build(pattern)

    def run(row: Row) -> bool | None:
        v, p = value(row), dynamic(row)
        if v is None or p is None:
            return None
        rx = _like_regex(_string(p))
        flags = re.IGNORECASE if insensitive else 0
        return re.fullmatch(rx.pattern, _string(v), flags | re.DOTALL) is not None

    return run
