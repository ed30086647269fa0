"""The definition document: YAML/JSON text (or a mapping) read safely into a mapping.

Before PyYAML builds anything, the text's size, nesting, node count (aliases expanded) and
number lengths are checked, so a hostile document fails fast with a message naming where;
duplicate keys are an error (PyYAML would keep the last one silently).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from jobs.definition.errors import DefinitionError
from jobs.definition.limits import (
    MAX_DOCUMENT_CHARS,
    MAX_DOCUMENT_DEPTH,
    MAX_DOCUMENT_NODES,
    MAX_NUMBER_DIGITS,
    nesting_of,
)
from jobs.definition.parsing.fields import kind_of


def read_document(source: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    """Parse YAML/JSON text (duplicate keys are an error) or pass a mapping through.

    The size, nesting and number limits of :mod:`jobs.definition.limits` are checked first, on
    the text's event stream (libyaml's parser does not recurse), before YAML builds objects."""
    if isinstance(source, Mapping):
        if nesting_of(source, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH:
            raise DefinitionError(f"nests mappings and lists more than {MAX_DOCUMENT_DEPTH} deep")
        _check_numbers(source)
        return source
    if isinstance(source, bytes | str) and len(source) > MAX_DOCUMENT_CHARS:
        raise DefinitionError(f"the definition is {len(source)} characters long; at most "
                              f"{MAX_DOCUMENT_CHARS} are read")
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DefinitionError(f"the definition is not UTF-8 text ({exc.reason})") from None
    if not isinstance(source, str):
        raise DefinitionError(
            f"expected YAML/JSON text or a mapping, got {type(source).__name__}"
        )
    try:
        _check_shape(source)
        document = yaml.load(source, Loader=_StrictLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        raise DefinitionError(_yaml_message(exc)) from None
    except yaml.YAMLError as exc:
        raise DefinitionError(f"not valid YAML or JSON: {exc}") from None
    if document is None:
        raise DefinitionError("the definition is empty")
    if not isinstance(document, Mapping):
        raise DefinitionError(
            f"a definition is a mapping of fields (name, window, ...), got {kind_of(document)}"
        )
    return document


_SafeBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x faster


_PLAIN_NUMBER = re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?")


def _check_numbers(document: Mapping[str, Any]) -> None:
    """A parsed document (already known to be shallow) holds no integer longer than the limit
    (the text path checks it on the event stream): messages print values, and Python cannot
    print an integer of more than 4300 digits."""
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
        elif type(value) is int and value.bit_length() > MAX_NUMBER_DIGITS * 3.33:
            raise DefinitionError(f"a number of more than {MAX_NUMBER_DIGITS} digits is too "
                                  "long", path)


def _check_shape(text: str) -> None:
    """Measure a document on its YAML event stream: nesting depth, node count (aliases count
    as what they expand to) and the length of unquoted numbers, naming the field that passes
    a limit. Linear in the text, and no recursion."""
    path: list[Any] = []  # per open container: its [key or index, expecting-key flag]
    nodes = 0
    sizes: dict[str, int] = {}
    opened: list[tuple[str | None, int]] = []  # anchor and node count where a container began

    def where() -> str:
        parts = []
        for frame in path:
            label = frame[0]
            if isinstance(label, int):
                parts.append(f"[{label}]")
            else:
                parts.append(("." if parts else "") + str(label))
        return "".join(parts)

    def value_done() -> None:
        if path:
            frame = path[-1]
            if isinstance(frame[0], int):
                frame[0] += 1
            else:
                frame[1] = True

    for event in yaml.parse(text, Loader=_SafeBase):
        if isinstance(event, yaml.CollectionStartEvent):
            nodes += 1
            is_key = bool(path) and path[-1][1] is True
            if is_key:  # a mapping or list used as a key: YAML allows it, a definition never
                path[-1][0], path[-1][1] = "?", False
            if len(path) >= MAX_DOCUMENT_DEPTH:
                raise DefinitionError(
                    f"nests mappings and lists more than {MAX_DOCUMENT_DEPTH} deep", where())
            opened.append((event.anchor, nodes))
            path.append([0, False] if isinstance(event, yaml.SequenceStartEvent) else ["", True])
        elif isinstance(event, yaml.CollectionEndEvent):
            path.pop()
            anchor, start = opened.pop()
            if anchor is not None:
                sizes[anchor] = nodes - start + 1
            value_done()
        elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            if path and path[-1][1] is True:  # a mapping key
                path[-1][0] = event.value if isinstance(event, yaml.ScalarEvent) else "*"
                path[-1][1] = False
            else:
                if isinstance(event, yaml.AliasEvent):
                    nodes += sizes.get(event.anchor or "", 1)
                else:
                    nodes += 1
                    if event.anchor is not None:
                        sizes[event.anchor] = 1
                if (isinstance(event, yaml.ScalarEvent) and event.implicit[0]
                        and len(event.value) > MAX_NUMBER_DIGITS
                        and _PLAIN_NUMBER.fullmatch(event.value)):
                    raise DefinitionError(
                        f"a number of {len(event.value)} characters is too long (at most "
                        f"{MAX_NUMBER_DIGITS})", where())
                value_done()
        if nodes > MAX_DOCUMENT_NODES:
            raise DefinitionError(
                f"has more than {MAX_DOCUMENT_NODES} values (YAML aliases count as expanded)",
                where())


class _StrictLoader(_SafeBase):
    """Safe loader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            continue
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = exc.problem or exc.context or "syntax error"
    return f"not valid YAML or JSON: {problem}{where}"
