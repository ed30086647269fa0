"""Parsing and allow-listing the SQL expressions of a definition (key, event_time, aggregation
``of``).

An expression is user text that later runs inside the Spark driver and executors, so it is
checked before a definition is saved, by what it *is* (the sqlglot syntax tree) rather than by
what it looks like (no regexes on the text):

* the text must tokenize without comments and without ``;`` (no statement smuggling: sqlglot
  and Spark must see the same single expression);
* it must parse, with sqlglot's Spark dialect, to exactly one expression;
* every node of the tree must be of a kind that :mod:`jobs.definition.expr` can evaluate (the
  allow-list is the evaluator's table, so whatever passes here also runs in ``tidemark
  replay`` with the same meaning as in Spark);
* forbidden things get a message that names them: subqueries, aggregate and window functions,
  non-deterministic functions (``rand``, ``uuid``, ``current_timestamp``...), functions that
  reach the JVM or the file system (``reflect``, ``java_method``, ``input_file_name``...),
  unknown functions (UDFs), ``*``, DDL/DML.

:func:`spark_sql` renders the checked tree back to Spark SQL; the Spark runtime should use it
rather than the raw text, so that Spark executes exactly the tree that was checked.
"""

from __future__ import annotations

import re
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from jobs.definition.errors import DefinitionError, FieldError
from jobs.definition.limits import (
    MAX_EXPRESSION_CHARS,
    MAX_EXPRESSION_DEPTH,
    MAX_EXPRESSION_NESTING,
)
from jobs.definition.schema import DataType, Schema

DIALECT = "spark"

NON_DETERMINISTIC = {
    "rand", "random", "randn", "uuid", "shuffle", "current_timestamp", "current_date", "now",
    "current_time", "localtimestamp", "current_timezone", "monotonically_increasing_id",
    "spark_partition_id", "unix_timestamp", "input_file_name", "input_file_block_start",
    "input_file_block_length", "current_user", "user", "session_user", "current_database",
    "current_schema", "current_catalog", "version", "try_reflect", "uniform", "randstr",
}
NAMES_SPARK_CALLS = frozenset({
    "current_date", "current_timestamp", "current_time", "current_user", "user", "session_user",
    "localtimestamp", "current_timezone", "current_database", "current_schema", "current_catalog",
})
"""Names that Spark resolves to a non-deterministic function (the clock, the OS user) when no
column has that name, quoted or not. Without a declared ``source.schema`` nothing says such a
name is a column, so it is refused; a schema that declares it makes it a column."""
JVM_OR_IO = {
    "reflect", "java_method", "try_reflect", "input_file_name", "input_file_block_start",
    "input_file_block_length", "assert_true", "raise_error", "read_files", "from_avro",
    "from_protobuf", "url_decode", "parse_url", "xpath",
}


@lru_cache(maxsize=1)
def _dialect() -> sqlglot.Dialect:
    return sqlglot.Dialect.get_or_raise(DIALECT)


def parse_expression(sql: str, field: str = "expression") -> exp.Expr:
    """Parse and allow-list one expression; raises :class:`DefinitionError` naming ``field``."""
    errors = _parse(sql, field)
    if isinstance(errors, list):
        raise DefinitionError(errors)
    return errors


@lru_cache(maxsize=1024)
def _parse_cached(sql: str, field: str) -> exp.Expr | tuple[FieldError, ...]:
    result = _parse_uncached(sql, field)
    return tuple(result) if isinstance(result, list) else result


def _parse(sql: str, field: str) -> exp.Expr | list[FieldError]:
    cached = _parse_cached(sql, field)
    return list(cached) if isinstance(cached, tuple) else cached


def _parse_uncached(sql: str, field: str) -> exp.Expr | list[FieldError]:
    if not isinstance(sql, str):
        return [(field, f"expected an SQL expression (text), got {type(sql).__name__}")]
    if not sql.strip():
        return [(field, "must not be empty")]
    if len(sql) > MAX_EXPRESSION_CHARS:
        return [(field, f"is {len(sql)} characters long; an expression may have at most "
                        f"{MAX_EXPRESSION_CHARS}")]
    try:
        tokens = _dialect().tokenize(sql)
    except TokenError as exc:
        return [(field, f"not a valid SQL expression: {_short(exc)}")]
    nesting = 0
    for token in tokens:
        if token.comments:
            return [(field, "comments are not allowed in an expression")]
        if token.token_type == TokenType.SEMICOLON:
            return [(field, "';' is not allowed: a definition holds one expression, not statements")]
        if token.token_type in _OPENERS:
            nesting += 1
            if nesting > MAX_EXPRESSION_NESTING:
                return [(field, "parentheses, brackets and CASE nest more than "
                                f"{MAX_EXPRESSION_NESTING} deep")]
        elif token.token_type in _CLOSERS:
            nesting -= 1
    try:
        parsed = sqlglot.parse(sql, read=DIALECT)
    except (ParseError, ValueError) as exc:  # ValueError: a sqlglot function builder refusing
        return [(field, f"not a valid SQL expression: {_short(exc)}")]
    except RecursionError:  # prefix operators (NOT NOT ...) nest without brackets
        return [(field, f"nests deeper than {MAX_EXPRESSION_DEPTH} levels")]
    trees = [t for t in parsed if t is not None]
    if len(trees) != 1:
        return [(field, "must be exactly one SQL expression")]
    tree = trees[0]
    if _tree_depth(tree) > MAX_EXPRESSION_DEPTH:
        return [(field, f"nests deeper than {MAX_EXPRESSION_DEPTH} levels (a chain such as "
                        "a + b + c counts one level per operator)")]
    problem = forbidden_reason(tree)
    if problem:
        return [(field, problem)]
    # the evaluator validates argument shapes (literal formats, cast types...)
    from jobs.definition.expr import ExpressionError, build

    try:
        build(tree)
    except ExpressionError as exc:
        return [(field, str(exc))]
    return tree


_OPENERS = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE})
_CLOSERS = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END})


def _tree_depth(tree: exp.Expr) -> int:
    """The depth of a syntax tree, measured with an explicit stack and no further than one
    past the limit (sqlglot builds operator chains iteratively, so they can be very deep)."""
    deepest = 0
    stack: list[tuple[exp.Expr, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_EXPRESSION_DEPTH:
            break
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest


def function_name(node: exp.Expr) -> str:
    """The SQL name a user would recognise (``reflect``, ``rand``, ``lpad``...).

    sqlglot normalises many functions to its own node names (``lpad`` is ``Pad``); rendering
    the node back as Spark SQL gives the Spark spelling."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        try:
            rendered = node.sql(dialect=DIALECT)
        except Exception:  # noqa: BLE001 - a name for a message, never worth failing over
            rendered = ""
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", rendered)
        return (m.group(1) if m else node.sql_name()).lower()
    return type(node).__name__.lower()


def forbidden_reason(tree: exp.Expr) -> str | None:
    """The first thing in ``tree`` that is not allowed, as a message; None if all is allowed."""
    from jobs.definition.expr import ALLOWED_FUNCTIONS, ALLOWED_NODES

    for node in tree.walk():
        kind = type(node)
        if isinstance(node, exp.Query | exp.Subquery) or kind.__name__ in ("Exists", "Lateral"):
            return "subqueries are not allowed"
        if isinstance(node, exp.Star):
            return "'*' is not allowed; name the columns"
        if isinstance(node, exp.Window):
            return f"window function {function_name(node.this)} is not allowed"
        if isinstance(node, exp.AggFunc):
            return (
                f"aggregate function {function_name(node)} is not allowed "
                "(aggregations go in aggregations[].fn)"
            )
        if isinstance(node, exp.Anonymous):
            name = function_name(node)
            if name in ALLOWED_FUNCTIONS:
                continue
            return _function_problem(name)
        if isinstance(node, exp.Func) and kind not in ALLOWED_NODES:
            return _function_problem(function_name(node))
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            return "'*' is not allowed; name the columns"
        if isinstance(node, exp.Alias):
            return "aliases (AS) are not allowed; the field name is given by the definition"
        if kind not in ALLOWED_NODES:
            if isinstance(node, exp.DDL | exp.DML | exp.Command) or kind.__name__ in (
                "Drop", "Create", "Insert", "Update", "Delete", "Command", "Set", "Use",
            ):
                return f"{kind.__name__.upper()} statements are not allowed"
            return f"{_describe(node)} is not allowed in an expression"
    return None


def _function_problem(name: str) -> str:
    if name in JVM_OR_IO:
        return f"function {name} is not allowed (it reaches the JVM or the file system)"
    if name in NON_DETERMINISTIC:
        return f"function {name} is not allowed (it is not deterministic)"
    from jobs.definition.expr import SUPPORTED_FUNCTIONS

    return (
        f"function {name} is not allowed (not one of the supported functions: "
        f"{', '.join(SUPPORTED_FUNCTIONS)})"
    )


def _describe(node: exp.Expr) -> str:
    names = {
        "Interval": "INTERVAL", "Array": "an array literal", "Struct": "a struct literal",
        "Bracket": "subscript []", "HexString": "a binary literal", "Lambda": "a lambda",
        "Placeholder": "a placeholder", "Parameter": "a parameter", "Var": f"'{node.name}'",
    }
    return names.get(type(node).__name__, type(node).__name__)


def referenced_columns(sql: str) -> set[str]:
    """Top-level source columns an allowed expression reads (``a.b`` reads ``a``)."""
    return {column_path(c)[0] for c in parse_expression(sql).find_all(exp.Column)}


def plain_column(sql: str) -> str | None:
    """The column name when an allowed expression is nothing but one top-level column (``team``,
    ```my col```), else None: the Spark runtime reads such a column straight from the source's
    schema, without its SQL parser and analyser."""
    tree = parse_expression(sql)
    if isinstance(tree, exp.Column) and isinstance(tree.this, exp.Identifier) and len(tree.parts) == 1:
        return str(tree.this.name)
    return None


def column_path(column: exp.Column) -> list[str]:
    """``a.b.c`` -> ``["a", "b", "c"]`` (the first part is a source column, the rest struct
    fields)."""
    return [part.name for part in column.parts]


def check_expression(
    sql: object, field: str, schema: Schema | None = None, *, inferred_schema: bool = False
) -> list[FieldError]:
    """Every problem of one expression: syntax, allow-list and (given a schema) columns.

    ``inferred_schema``: the source declares no schema (Spark infers it, as for parquet), so a
    name in :data:`NAMES_SPARK_CALLS` is refused (it could resolve to a function)."""
    tree = _parse(sql, field) if isinstance(sql, str) else _parse_uncached(sql, field)  # type: ignore[arg-type]
    if isinstance(tree, list):
        return tree
    errors: list[FieldError] = []
    for column in tree.find_all(exp.Column):
        path = column_path(column)
        if schema is not None:
            problem = _check_path(path, schema)
        else:
            problem = _undeclared_call(path[0]) if inferred_schema else None
        if problem and (field, problem) not in errors:
            errors.append((field, problem))
    if schema is not None:
        for bracket in tree.find_all(exp.Bracket):
            problem = _subscript_problem(bracket, schema)
            if problem and (field, problem) not in errors:
                errors.append((field, problem))
    return errors


def _subscript_problem(node: exp.Bracket, schema: Schema) -> str | None:
    """Only a map with string keys takes ``['key']``: an array's index and a cast key follow
    Spark rules the replay evaluator does not model (its base is a column: the evaluator
    refuses anything else)."""
    if not isinstance(node.this, exp.Column):
        return None
    path = column_path(node.this)
    dtype = _path_type(path, schema)
    if dtype is None:
        return None  # an unknown column is reported by the column check
    if dtype.name == "map" and dtype.key is not None and dtype.key.name == "string":
        return None
    what = "map with non-string keys" if dtype.name == "map" else dtype.name
    return (f"column {'.'.join(path)!r} is {what}; only a map with string keys takes a "
            "subscript ['key']")


def _path_type(path: list[str], schema: Schema) -> DataType | None:
    top = schema.field(path[0])
    dtype = top.type if top is not None else None
    for part in path[1:]:
        if dtype is None:
            return None
        if dtype.name == "map":
            dtype = dtype.value
        else:
            sub = dtype.field(part) if dtype.name == "struct" else None
            dtype = sub.type if sub is not None else None
    return dtype


def _undeclared_call(name: str) -> str | None:
    if name.lower() not in NAMES_SPARK_CALLS:
        return None
    return (f"{name!r} is not a declared column: without a column of that name Spark reads it "
            f"as the function {name.lower()}() (not deterministic); declare it in source.schema")


def _check_path(path: list[str], schema: Schema) -> str | None:
    top = schema.field(path[0])
    if top is None:
        return f"unknown column {path[0]!r} (source.schema has {', '.join(schema.names)})"
    dtype: DataType = top.type
    walked = path[0]
    for part in path[1:]:
        if dtype.name == "map":
            return None  # map keys are data, not schema
        if dtype.name != "struct":
            return f"column {walked!r} is {dtype.name}, it has no field {part!r}"
        if not dtype.fields:
            return None
        sub = dtype.field(part)
        if sub is None:
            return f"column {walked!r} has no field {part!r}"
        dtype = sub.type
        walked = f"{walked}.{part}"
    return None


def spark_sql(sql: str) -> str:
    """The checked expression rendered as Spark SQL (what the Spark runtime should run)."""
    return parse_expression(sql).sql(dialect=DIALECT)


def _short(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        first = errors[0]
        desc = first.get("description", str(exc))
        col = first.get("col")
        return f"{desc} (at character {col})" if col else str(desc)
    return str(exc).splitlines()[0]
