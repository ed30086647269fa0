"""Evaluate an allow-listed SQL expression over a dict record, in Python, without ``eval``.

``tidemark replay`` runs a definition with no Spark, yet must compute the same key, event time
and aggregation inputs as the Spark job. So the sqlglot tree of an expression is compiled once
into nested closures (one per node), and calling the result on a record walks no tree and parses
no text. A bare column name (the common case) compiles to a single ``dict.get``.

Semantics follow Spark 4 as the platform's sessions run it: ANSI mode **off**
(``spark.sql.ansi.enabled=false``, :data:`SPARK_ANSI`) and session time zone UTC:

* null in, null out, for every operator and function, except the null-aware ones
  (``coalesce``, ``IS NULL``, ``<=>``, ``AND``/``OR`` three-valued logic, ``CASE``, ``if``,
  ``concat_ws`` is not offered);
* with ANSI off (the default), a value that cannot be converted (``CAST('x' AS INT)``) or a
  division by zero gives null and an integer overflow wraps around, as in the Spark job; a key
  or event time that is null makes the record a dead letter. Compiled with ``ansi=True`` they
  raise :class:`ExpressionError` instead, as Spark does in ANSI mode (``try_cast`` gives null
  in both modes);
* ``/`` always gives a double, ``div`` an integer truncated toward zero, ``%`` takes the sign
  of the dividend (Java), ``round`` rounds half up;
* timestamps are UTC-aware ``datetime`` values. A record field used where a timestamp is needed
  may be a datetime, an ISO-8601 string or an integer of epoch *milliseconds* (the replay input
  convention); ``CAST(number AS TIMESTAMP)`` reads *seconds*, as Spark does;
* field access ``a.b`` reads nested objects; names are looked up exactly first, then
  case-insensitively (Spark column names are case-insensitive).

The allow-list of :mod:`jobs.definition.sql` is this module's table: a node kind that is not in
:data:`ALLOWED_NODES` (or a function not in :data:`ALLOWED_FUNCTIONS`) is rejected before a
definition is saved, so every accepted expression can be evaluated here.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import InvalidOperation
from typing import Any

from sqlglot import exp

from jobs.definition.evaluator.compiler import _BUILDERS, FUNCTION_BUILDERS, build
from jobs.definition.evaluator.times import _timestamp_millis, _timestamp_seconds
from jobs.definition.evaluator.values import _ANSI, SPARK_ANSI, ExpressionError, Fn, Row


def compile_expression(sql: str, field: str = "expression", *, ansi: bool = SPARK_ANSI) -> Fn:
    """A function ``record -> value`` for an allow-listed expression (raises
    :class:`DefinitionError` naming ``field`` when ``sql`` is not allowed).

    ``ansi`` picks Spark's ANSI mode semantics (see :data:`SPARK_ANSI`): with it, a value that
    cannot be converted (bad cast, division by zero, overflow) raises :class:`ExpressionError`
    naming the field and the expression; without it (the platform default), such a
    sub-expression is null, as in Spark with ANSI off."""
    from jobs.definition.sql import parse_expression

    tree = parse_expression(sql, field)
    token = _ANSI.set(ansi)
    try:
        inner = build(tree)
    finally:
        _ANSI.reset(token)
    if isinstance(tree, exp.Column) and len(tree.parts) == 1:
        return inner  # fast path: one dict lookup, nothing can raise, no mode to set
    text = sql.strip()

    def run(row: Row) -> Any:
        # the mode is read while evaluating; set it only when the caller's context differs
        mode = _ANSI.set(ansi) if _ANSI.get() is not ansi else None
        try:
            return inner(row)
        except ExpressionError as exc:
            raise ExpressionError(f"{exc.message} (in {text})", field) from None
        except (ArithmeticError, ValueError, TypeError, InvalidOperation) as exc:
            # a value no rule above anticipated (e.g. an infinite float where an integer is
            # needed): still data, so still an ExpressionError (a dead letter), not a crash
            raise ExpressionError(f"cannot evaluate: {exc} (in {text})", field) from None
        finally:
            if mode is not None:
                _ANSI.reset(mode)

    return run


SUPPORTED_FUNCTIONS: tuple[str, ...] = (
    "abs", "ceil", "ceiling", "char_length", "character_length", "coalesce", "concat",
    "date_trunc", "floor", "from_unixtime", "get_json_object", "if", "ifnull", "lcase", "length",
    "lower", "ltrim", "mod", "nullif", "nvl", "round", "rtrim", "substr", "substring",
    "timestamp_millis", "timestamp_seconds", "to_timestamp", "trim", "try_cast", "ucase",
    "unix_millis", "unix_seconds", "upper",
)
"""The function names users may write (for messages and docs; tests check each one)."""


ALLOWED_FUNCTIONS: dict[str, Callable[[exp.Anonymous], Fn]] = {
    "timestamp_millis": _timestamp_millis,
    "timestamp_seconds": _timestamp_seconds,
}
"""Functions sqlglot does not model as their own node kind, by lower-case name."""
FUNCTION_BUILDERS.update(ALLOWED_FUNCTIONS)


ALLOWED_NODES: frozenset[type[exp.Expr]] = frozenset(_BUILDERS) | {
    exp.Identifier, exp.DataType, exp.DataTypeParam, exp.Var, exp.JSONPath, exp.JSONPathRoot,
    exp.JSONPathKey, exp.JSONPathSubscript,
}
"""Node kinds an expression may contain; the helper kinds (identifiers, type names, date units,
JSON path steps) are only accepted where their parent's builder reads them."""


__all__ = ["ALLOWED_FUNCTIONS", "ALLOWED_NODES", "SPARK_ANSI", "SUPPORTED_FUNCTIONS",
           "ExpressionError", "Fn", "Row", "build", "compile_expression"]
