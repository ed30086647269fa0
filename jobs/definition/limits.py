"""Size and depth limits of a definition, checked before anything parses deep.

A definition is user text that the UI validates on every keystroke and the CLI, the catalog and
the Spark driver read. Recursive parsers (YAML composition, sqlglot, the Spark DDL reader, the
expression evaluator) would crash or stall on pathological input, so each input is measured
first, in one linear pass that never recurses, and refused with an error naming the field when
it passes a limit. The numbers are far above what a real definition uses; ``docs/definition.md``
lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_DOCUMENT_CHARS = 1_000_000
"""A definition's YAML/JSON text, in characters (bytes before decoding)."""
MAX_DOCUMENT_DEPTH = 16
"""Nesting of mappings and lists in a definition (the format itself needs 3)."""
MAX_DOCUMENT_NODES = 100_000
"""Scalars, mappings and lists in a definition, with YAML aliases counted as expanded."""
MAX_NUMBER_DIGITS = 100
"""Digits of a plain (unquoted) number in a definition."""
MAX_AGGREGATIONS = 1_000
"""Entries of ``aggregations``."""
MAX_EXPRESSION_CHARS = 4_096
"""An SQL expression (key, event_time, aggregations[].of), in characters."""
MAX_EXPRESSION_NESTING = 16
"""Nesting of parentheses, brackets and ``CASE ... END`` in one expression."""
MAX_EXPRESSION_DEPTH = 64
"""Depth of an expression's syntax tree (``a + b + c`` is 3 deep: chains count too)."""
MAX_SCHEMA_CHARS = 65_536
"""``source.schema``, in characters."""
MAX_SCHEMA_DEPTH = 16
"""Nesting of ``STRUCT``/``ARRAY``/``MAP`` types in ``source.schema``."""
MAX_DURATION_DIGITS = 30
"""Digits of the number(s) in a duration written as text (``99999...d``)."""


def nesting_of(value: Any, limit: int) -> int:
    """How deeply ``value`` (mappings and lists) nests, counting no further than ``limit + 1``
    (an explicit stack: a pathological value cannot exhaust the Python stack)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > limit or id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend((child, depth + 1) for child in children)
    return deepest
