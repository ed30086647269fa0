"""Builders of the functions: conditionals (``CASE``, ``if``, ``coalesce``, ``nullif``), casts,
strings, math and ``get_json_object``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from jobs.definition.evaluator.compiler import _builds, build
from jobs.definition.evaluator.operators import _comparable, _int_result, _truth
from jobs.definition.evaluator.values import (
    _CAST_TYPES,
    ExpressionError,
    Fn,
    Row,
    _cast,
    _check_int,
    _fail,
    _number,
    _string,
)


@_builds(exp.Case)
def _case(node: exp.Case) -> Fn:
    operand = build(node.this) if node.this is not None else None
    branches = [(build(i.this), build(i.args["true"])) for i in node.args.get("ifs") or []]
    default = build(node.args["default"]) if node.args.get("default") is not None else None

    def run(row: Row) -> Any:
        if operand is not None:
            v = operand(row)
            for when, then in branches:
                w = when(row)
                if v is not None and w is not None:
                    x, y = _comparable(v, w)
                    if x == y:
                        return then(row)
        else:
            for when, then in branches:
                if _truth(when(row)) is True:
                    return then(row)
        return default(row) if default is not None else None

    return run


@_builds(exp.If)
def _if(node: exp.If) -> Fn:
    cond, then = build(node.this), build(node.args["true"])
    other = build(node.args["false"]) if node.args.get("false") is not None else None

    def run(row: Row) -> Any:
        if _truth(cond(row)) is True:
            return then(row)
        return other(row) if other is not None else None

    return run


@_builds(exp.Coalesce)
def _coalesce(node: exp.Coalesce) -> Fn:
    parts = [build(node.this)] + [build(e) for e in node.expressions]

    def run(row: Row) -> Any:
        for part in parts:
            v = part(row)
            if v is not None:
                return v
        return None

    return run


@_builds(exp.Nullif)
def _nullif(node: exp.Nullif) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> Any:
        a = left(row)
        if a is None:
            return None
        b = right(row)
        if b is None:
            return a
        x, y = _comparable(a, b)
        return None if x == y else a

    return run


def _type_text(to: exp.DataType) -> str:
    """A CAST's target type as Spark SQL text for a message. sqlglot's Spark generator raises
    on some types its parser accepts (``2f(m)`` reads as ``CAST(2 AS FLOAT(m))``, whose size
    is not a number); the message then names the type as written."""
    try:
        return to.sql(dialect="spark")
    except (ValueError, TypeError, SqlglotError):
        return to.sql()


@_builds(exp.Cast, exp.TryCast)
def _cast_node(node: exp.Cast) -> Fn:
    to = node.args.get("to")
    if not isinstance(to, exp.DataType):
        raise _fail("CAST needs a target type")
    type_name = to.this.name if hasattr(to.this, "name") else str(to.this)
    target = _CAST_TYPES.get(str(type_name).upper())
    if target is None or to.expressions:
        raise _fail(
            f"CAST to {_type_text(to)} is not supported (use STRING, TINYINT, SMALLINT, "
            "INT, BIGINT, FLOAT, DOUBLE, BOOLEAN or TIMESTAMP)"
        )
    if node.args.get("format"):
        raise _fail("CAST ... FORMAT is not supported")
    inner = build(node.this)
    safe = isinstance(node, exp.TryCast) and bool(node.args.get("safe"))

    if safe:
        def run_safe(row: Row) -> Any:
            try:
                return _cast(inner(row), target)
            except ExpressionError:
                return None

        return run_safe
    return lambda row: _cast(inner(row), target)


def _unary(node: exp.Func, op: Callable[[Any], Any]) -> Fn:
    inner = build(node.this)

    def run(row: Row) -> Any:
        v = inner(row)
        return None if v is None else op(v)

    return run


@_builds(exp.Lower)
def _lower(node: exp.Lower) -> Fn:
    return _unary(node, lambda v: _string(v).lower())


@_builds(exp.Upper)
def _upper(node: exp.Upper) -> Fn:
    return _unary(node, lambda v: _string(v).upper())


@_builds(exp.Length)
def _length(node: exp.Length) -> Fn:
    return _unary(node, lambda v: len(_string(v)))


@_builds(exp.Concat, exp.DPipe)
def _concat(node: exp.Expr) -> Fn:
    if isinstance(node, exp.DPipe):
        parts = [build(node.this), build(node.expression)]
    else:
        parts = [build(e) for e in node.expressions]

    def run(row: Row) -> str | None:
        out: list[str] = []
        for part in parts:
            v = part(row)
            if v is None:
                return None
            out.append(_string(v))
        return "".join(out)

    return run


def _substring_sql(text: str, pos: int, length: int | None) -> str:
    """Spark's ``UTF8String.substringSQL``: 1-based, 0 acts as 1, negative counts from the end."""
    n = len(text)
    start = pos - 1 if pos > 0 else (n + pos if pos < 0 else 0)
    end = n if length is None else start + length
    start = max(start, 0)
    if start >= end:
        return ""
    return text[start:end]


def _whole(v: Any) -> int:
    """An integer argument (positions, lengths); Spark truncates doubles toward zero."""
    n = _number(v)
    if isinstance(n, float):
        if not math.isfinite(n):
            raise _fail(f"{n} is not a valid position or length")
        return int(n)
    return n


@_builds(exp.Substring)
def _substring(node: exp.Substring) -> Fn:
    value = build(node.this)
    start = build(node.args["start"]) if node.args.get("start") is not None else (lambda row: 1)
    length = build(node.args["length"]) if node.args.get("length") is not None else None

    def run(row: Row) -> str | None:
        v, p = value(row), start(row)
        n = length(row) if length is not None else None
        if v is None or p is None or (length is not None and n is None):
            return None
        return _substring_sql(_string(v), _whole(p), None if n is None else _whole(n))

    return run


@_builds(exp.Trim)
def _trim(node: exp.Trim) -> Fn:
    value = build(node.this)
    chars = build(node.expression) if node.args.get("expression") is not None else None
    position = str(node.args.get("position") or "BOTH").upper()
    if node.args.get("collation"):
        raise _fail("TRIM ... COLLATE is not supported")

    def run(row: Row) -> str | None:
        v = value(row)
        if v is None:
            return None
        c = " "
        if chars is not None:
            cv = chars(row)
            if cv is None:
                return None
            c = _string(cv)
        text = _string(v)
        if position == "LEADING":
            return text.lstrip(c)
        if position == "TRAILING":
            return text.rstrip(c)
        return text.strip(c)

    return run


@_builds(exp.Abs)
def _abs(node: exp.Abs) -> Fn:
    return _unary(node, lambda v: _int_result(abs(_number(v))))


def _floor_ceil(node: exp.Func, op: Callable[[float], int]) -> Fn:
    if node.args.get("decimals") is not None or node.args.get("to") is not None:
        raise _fail(f"{node.sql_name().lower()} with a scale is not supported")

    def run(v: Any) -> int:
        x = _number(v)
        if isinstance(x, int):
            return x
        if not math.isfinite(x):
            raise _fail(f"cannot round {x} to an integer")
        return _check_int(op(x))

    return _unary(node, run)


@_builds(exp.Floor)
def _floor(node: exp.Floor) -> Fn:
    return _floor_ceil(node, math.floor)


@_builds(exp.Ceil)
def _ceil(node: exp.Ceil) -> Fn:
    return _floor_ceil(node, math.ceil)


def _round_half_up(x: int | float, scale: int) -> int | float:
    if isinstance(x, int):
        if scale >= 0:
            return x
        q = Decimal(x).scaleb(scale).quantize(Decimal(1), rounding=ROUND_HALF_UP).scaleb(-scale)
        return int(q)
    if not math.isfinite(x):
        return x
    quantum = Decimal(1).scaleb(-scale)
    return float(Decimal(repr(x)).quantize(quantum, rounding=ROUND_HALF_UP))


@_builds(exp.Round)
def _round(node: exp.Round) -> Fn:
    scale_node = node.args.get("decimals")
    scale = 0
    if scale_node is not None:
        if not (isinstance(scale_node, exp.Literal) and not scale_node.is_string) and not (
            isinstance(scale_node, exp.Neg) and isinstance(scale_node.this, exp.Literal)
        ):
            raise _fail("round: the scale must be an integer literal")
        scale = int(scale_node.sql())
    return _unary(node, lambda v: _round_half_up(_number(v), scale))


@_builds(exp.JSONExtractScalar, exp.JSONExtract)
def _get_json_object(node: exp.Expr) -> Fn:
    value = build(node.this)
    path = node.expression
    if not isinstance(path, exp.JSONPath):
        raise _fail("get_json_object: the path must be a string literal such as '$.a.b[0]'")
    steps: list[str | int] = []
    for part in path.expressions:
        if isinstance(part, exp.JSONPathRoot):
            continue
        if isinstance(part, exp.JSONPathKey):
            steps.append(str(part.this))
        elif isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int):
            steps.append(part.this)
        else:
            raise _fail("get_json_object: only $.field and [index] steps are supported")

    def run(row: Row) -> str | None:
        v = value(row)
        if v is None:
            return None
        if isinstance(v, str):
            try:
                doc: Any = json.loads(v)
            except ValueError:
                return None
        else:
            doc = v
        for step in steps:
            if isinstance(step, int):
                if not isinstance(doc, list) or step >= len(doc):
                    return None
                doc = doc[step]
            else:
                if not isinstance(doc, dict) or step not in doc:
                    return None
                doc = doc[step]
        if doc is None:
            return None
        if isinstance(doc, str):
            return doc
        return json.dumps(doc, separators=(",", ":"))

    return run
