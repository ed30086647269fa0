"""The compiler's core: the table of node builders (``_builds`` registers one per sqlglot node
kind), :func:`build`, which compiles a node into a closure, and the builders of the leaves
(columns, field access, map subscripts, literals).

The builders of the other node kinds are in :mod:`~jobs.definition.evaluator.operators`,
:mod:`~jobs.definition.evaluator.functions` and :mod:`~jobs.definition.evaluator.times`; the
allow-list (which functions and nodes a user may write) is in :mod:`jobs.definition.expr`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlglot import exp

from jobs.definition.evaluator.values import _ANSI, ExpressionError, Fn, Row, _fail

Builder = Callable[[Any], Fn]
FUNCTION_BUILDERS: dict[str, Callable[[exp.Anonymous], Fn]] = {}
"""Builders of the functions sqlglot does not model as their own node kind, by lower-case
name: :data:`jobs.definition.expr.ALLOWED_FUNCTIONS`, which that module registers here."""


_BUILDERS: dict[type[exp.Expr], Builder] = {}


def _builds(*kinds: type[exp.Expr]) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        for kind in kinds:
            _BUILDERS[kind] = fn
        return fn

    return register


def build(node: exp.Expr) -> Fn:
    """Compile one allow-listed node (and its children) into a closure."""
    if isinstance(node, exp.Anonymous):
        name = str(node.name).lower()
        anon = FUNCTION_BUILDERS.get(name)
        if anon is None:
            raise _fail(f"function {name} is not allowed")
        return anon(node) if _ANSI.get() else _null_on_error(anon(node))
    builder = _BUILDERS.get(type(node))
    if builder is None:
        raise _fail(f"{type(node).__name__} is not allowed in an expression")
    fn = builder(node)
    if _ANSI.get() or type(node) in _CANNOT_FAIL:
        return fn
    return _null_on_error(fn)


def _null_on_error(fn: Fn) -> Fn:
    """Spark without ANSI: a sub-expression that cannot be computed is null (and its parent
    carries on with null), rather than an error."""

    def run(row: Row) -> Any:
        try:
            return fn(row)
        except ExpressionError:
            return None

    return run


def _lookup(row: Any, name: str) -> Any:
    if not isinstance(row, Mapping):
        return None
    if name in row:
        return row[name]
    lowered = name.lower()
    for k, v in row.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return None


@_builds(exp.Column)
def _column(node: exp.Column) -> Fn:
    parts = [p.name for p in node.parts]
    if len(parts) == 1:
        name = parts[0]

        def get(row: Row) -> Any:
            v = row.get(name)
            if v is None and name not in row:
                return _lookup(row, name)
            return v

        return get

    def get_path(row: Row) -> Any:
        value: Any = row
        for part in parts:
            value = _lookup(value, part)
            if value is None:
                return None
        return value

    return get_path


@_builds(exp.Dot)
def _dot(node: exp.Dot) -> Fn:
    base = build(node.this)
    name = node.expression.name
    if not isinstance(node.expression, exp.Identifier):
        raise _fail("only field names may follow '.'")
    return lambda row: _lookup(base(row), name)


@_builds(exp.Bracket)
def _map_value(node: exp.Bracket) -> Fn:
    """``m['name']``: a map column's value by its key (a string literal), exact and
    case-sensitive as Spark's map lookup; an absent key is null. Only maps take a subscript
    (arrays would need Spark's index rules), which ``sql.check_expression`` checks."""
    subscripts = node.expressions
    if not isinstance(node.this, exp.Column) or len(subscripts) != 1 or not (
            isinstance(subscripts[0], exp.Literal) and subscripts[0].is_string):
        raise _fail("a subscript [] must be a map column's key as a string literal, "
                    "as in kafka_headers['name']")
    base = build(node.this)
    key = str(subscripts[0].this)

    def get(row: Row) -> Any:
        m = base(row)
        return m.get(key) if isinstance(m, Mapping) else None

    return get


@_builds(exp.Paren)
def _paren(node: exp.Paren) -> Fn:
    return build(node.this)


@_builds(exp.Literal)
def _literal(node: exp.Literal) -> Fn:
    if node.is_string:
        text = str(node.this)
        return lambda row: text
    raw = str(node.this)
    value: int | float
    try:
        try:
            value = int(raw)
        except ValueError:
            if raw.upper().endswith(("L", "S", "Y")) and raw[:-1].isdigit():
                value = int(raw[:-1])
            else:
                value = float(raw.rstrip("DdFf").rstrip("B").rstrip("b"))
    except ValueError:  # sqlglot reads `0e` as a number; nothing can read it as one
        raise _fail(f"cannot read {raw[:40]!r} as a number") from None
    return lambda row: value


@_builds(exp.Boolean)
def _bool(node: exp.Boolean) -> Fn:
    value = bool(node.this)
    return lambda row: value


@_builds(exp.Null)
def _null(node: exp.Null) -> Fn:
    return lambda row: None


_CANNOT_FAIL: frozenset[type[exp.Expr]] = frozenset(
    {exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Coalesce, exp.Is}
)
