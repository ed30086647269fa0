"""A small parser for the Spark DDL schema strings a source declares, without Spark.

The definition is validated where Spark is not available (the UI, the CLI, the catalog), yet a
typo in the schema or an expression that names a column the schema does not have should be
caught when the definition is saved, not when the job starts. So this module reads the subset of
Spark DDL that a record schema uses::

    team STRING, score INT, et TIMESTAMP,
    meta STRUCT<region: STRING, tags: ARRAY<STRING>> NOT NULL COMMENT 'free text',
    attrs MAP<STRING, DOUBLE>, price DECIMAL(10, 2), `odd name` BIGINT

Names are case-insensitive, as in Spark (``spark.sql.caseSensitive`` is false by default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jobs.definition.errors import DefinitionError
from jobs.definition.limits import MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH

PRIMITIVE_TYPES: dict[str, str] = {
    # alias -> the name Spark prints
    "string": "string",
    "varchar": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "smallint": "smallint",
    "short": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "long": "bigint",
    "float": "float",
    "real": "float",
    "double": "double",
    "decimal": "decimal",
    "dec": "decimal",
    "numeric": "decimal",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
    "variant": "variant",
}
_PARAMETERISED = {"varchar", "char", "decimal"}


@dataclass(frozen=True, slots=True)
class DataType:
    """``name`` is a primitive name from :data:`PRIMITIVE_TYPES` values, or ``struct``,
    ``array`` (``element``) or ``map`` (``key``, ``value``)."""

    name: str
    fields: tuple[Field, ...] = ()
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    params: tuple[int, ...] = ()

    def field(self, name: str) -> Field | None:
        lowered = name.lower()
        return next((f for f in self.fields if f.name.lower() == lowered), None)


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: DataType
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class Schema:
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field | None:
        lowered = name.lower()
        return next((f for f in self.fields if f.name.lower() == lowered), None)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>`(?:[^`]|``)*`)|(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+)|(?P<punct>[<>(),:]))"
)


class _Tokens:
    def __init__(self, text: str) -> None:
        self.items: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise DefinitionError(f"unexpected character {text[pos:].strip()[:1]!r} at {pos}")
            kind = m.lastgroup or ""
            value = m.group(kind)
            if kind == "quoted":
                value = value[1:-1].replace("``", "`")
                kind = "word"
            self.items.append((kind, value))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.items[self.i] if self.i < len(self.items) else None

    def next(self, what: str) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise DefinitionError(f"expected {what} but the schema ended")
        self.i += 1
        return tok

    def expect(self, punct: str) -> None:
        kind, value = self.next(repr(punct))
        if kind != "punct" or value != punct:
            raise DefinitionError(f"expected {punct!r} but found {value!r}")

    def accept(self, punct: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == "punct" and tok[1] == punct:
            self.i += 1
            return True
        return False

    def accept_word(self, word: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == "word" and tok[1].lower() == word:
            self.i += 1
            return True
        return False


def parse_schema(ddl: str) -> Schema:
    """Parse ``name TYPE, ...``; raises :class:`DefinitionError` (field ``""``; the caller
    prefixes ``source.schema``) with the position of the problem."""
    if not ddl.strip():
        raise DefinitionError("must list at least one column, e.g. 'team STRING, et TIMESTAMP'")
    if len(ddl) > MAX_SCHEMA_CHARS:
        raise DefinitionError(f"is {len(ddl)} characters long; a schema may have at most "
                              f"{MAX_SCHEMA_CHARS}")
    tokens = _Tokens(ddl)
    _check_nesting(tokens.items)
    fields = _field_list(tokens, end=None)
    if tokens.peek() is not None:
        raise DefinitionError(f"unexpected {tokens.peek()[1]!r} after the last column")  # type: ignore[index]
    return Schema(fields)


def _check_nesting(items: list[tuple[str, str]]) -> None:
    """Refuse types nested deeper than the limit before the recursive reader meets them."""
    depth = 0
    for kind, value in items:
        if kind == "punct" and value == "<":
            depth += 1
            if depth > MAX_SCHEMA_DEPTH:
                raise DefinitionError(f"types nest more than {MAX_SCHEMA_DEPTH} deep "
                                      "(STRUCT, ARRAY and MAP inside one another)")
        elif kind == "punct" and value == ">":
            depth -= 1
        elif kind == "number" and len(value) > 9:
            raise DefinitionError(f"the number {value[:12]}... is too long for a type parameter")


def _field_list(tokens: _Tokens, end: str | None) -> tuple[Field, ...]:
    fields: list[Field] = []
    seen: set[str] = set()
    while True:
        kind, name = tokens.next("a column name")
        if kind != "word":
            raise DefinitionError(f"expected a column name but found {name!r}")
        if end == ">":
            tokens.accept(":")
        if name.lower() in seen:
            raise DefinitionError(f"duplicate column {name!r}")
        seen.add(name.lower())
        dtype = _type(tokens)
        nullable = True
        if tokens.accept_word("not"):
            if not tokens.accept_word("null"):
                raise DefinitionError(f"expected NULL after NOT in column {name!r}")
            nullable = False
        if tokens.accept_word("comment"):
            ckind, _ = tokens.next("a comment string")
            if ckind != "string":
                raise DefinitionError(f"expected a quoted comment for column {name!r}")
        fields.append(Field(name, dtype, nullable))
        if not tokens.accept(","):
            break
    return tuple(fields)


def _type(tokens: _Tokens) -> DataType:
    kind, word = tokens.next("a type")
    if kind != "word":
        raise DefinitionError(f"expected a type but found {word!r}")
    lowered = word.lower()
    if lowered == "struct":
        tokens.expect("<")
        if tokens.accept(">"):
            return DataType("struct")
        fields = _field_list(tokens, end=">")
        tokens.expect(">")
        return DataType("struct", fields=fields)
    if lowered == "array":
        tokens.expect("<")
        element = _type(tokens)
        tokens.expect(">")
        return DataType("array", element=element)
    if lowered == "map":
        tokens.expect("<")
        key = _type(tokens)
        tokens.expect(",")
        value = _type(tokens)
        tokens.expect(">")
        return DataType("map", key=key, value=value)
    if lowered not in PRIMITIVE_TYPES:
        raise DefinitionError(f"unknown type {word!r}")
    params: list[int] = []
    if tokens.accept("("):
        if lowered not in _PARAMETERISED:
            raise DefinitionError(f"type {word!r} takes no parameters")
        while True:
            nkind, number = tokens.next("a number")
            if nkind != "number":
                raise DefinitionError(f"expected a number in {word}(...) but found {number!r}")
            params.append(int(number))
            if not tokens.accept(","):
                break
        tokens.expect(")")
    elif lowered in ("varchar", "char"):
        raise DefinitionError(f"type {word!r} needs a length, e.g. {word.upper()}(20)")
    return DataType(PRIMITIVE_TYPES[lowered], params=tuple(params))
