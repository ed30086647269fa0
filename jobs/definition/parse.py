"""Reading a definition: YAML/JSON text (or an already parsed mapping) -> :class:`Definition`.

Validation collects every problem it can find instead of stopping at the first, because the UI
shows them next to their fields as the user types (:func:`validate_raw`) and a CLI user wants
to fix a file in one go. A section whose own fields are broken is skipped by the cross-field
rules that need it (so one typo does not produce five follow-on errors).

Rules that docs/semantics.md leaves open are decided here and written down in
``docs/definition.md``. The sections are read by :mod:`jobs.definition.parsing`; this module
assembles them into a :class:`Definition`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jobs.definition.errors import DefinitionError, FieldError
from jobs.definition.model import INFINITE, PROCESSING, Definition
from jobs.definition.parsing.aggregations import parse_aggregations
from jobs.definition.parsing.document import read_document
from jobs.definition.parsing.fields import (
    Collector,
    check_keys,
    duration_field,
    enum_field,
    kind_of,
    text_field,
)
from jobs.definition.parsing.source import (
    parse_event_time,
    parse_expression,
    parse_sink,
    parse_source,
)
from jobs.definition.parsing.timing import (
    check_processing_rules,
    parse_trigger,
    parse_watermark,
    parse_window,
)

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,62}")


TOP_FIELDS = (
    "name", "description", "source", "key", "event_time", "watermark", "window",
    "allowed_lateness", "lateness_basis", "trigger", "accumulation", "aggregations", "sink",
)


def load_definition(source: str | bytes | Mapping[str, Any]) -> Definition:
    """A validated :class:`Definition` from YAML or JSON text, bytes or a parsed mapping.

    Raises :class:`DefinitionError` holding every problem found."""
    raw = read_document(source)
    definition, errors = _build(raw)
    if errors or definition is None:
        raise DefinitionError(errors)
    return definition


def validate_raw(raw: Mapping[str, Any] | str | bytes) -> list[FieldError]:
    """Every ``(field path, message)`` problem of a definition, without raising (for the UI)."""
    try:
        document = read_document(raw)
    except DefinitionError as exc:
        return list(exc.errors)
    return _build(document)[1]


def _build(raw: Mapping[str, Any]) -> tuple[Definition | None, list[FieldError]]:
    c = Collector()
    check_keys(c, raw, TOP_FIELDS, "")

    name = text_field(c, "name", raw.get("name"), required=True)
    if name is not None and not NAME_RE.fullmatch(name):
        c.add("name", f"{name!r} must match [a-z][a-z0-9_]{{0,62}} (lower case letter first, "
                      "then lower case letters, digits or _; at most 63 characters)")
        name = None
    description = raw.get("description")
    if description is None:
        description = ""
    elif not isinstance(description, str):
        c.add("description", f"must be text, got {kind_of(description)}")

    source, schema = parse_source(c, raw)
    # a source without a declared schema (parquet) runs on the schema Spark infers, where a
    # name that is no column may be read as a function: such names are refused (sql.py)
    inferred = raw.get("source") is not None and schema is None
    key = parse_expression(c, "key", raw.get("key"), schema, inferred)
    event_time = parse_event_time(c, raw.get("event_time"), schema, inferred)
    watermark = parse_watermark(c, raw)
    window = parse_window(c, raw)
    allowed_lateness = duration_field(
        c, "allowed_lateness", raw.get("allowed_lateness"), default=0, allow_infinite=True
    )
    lateness_basis = enum_field(
        c, "lateness_basis", raw.get("lateness_basis"), ("window", "event"), "window"
    )
    trigger = parse_trigger(c, raw, allowed_lateness)
    accumulation = enum_field(
        c, "accumulation", raw.get("accumulation"),
        ("discarding", "accumulating", "retracting"), "accumulating",
    )
    aggregations = parse_aggregations(c, raw.get("aggregations"), schema, inferred)
    sink = parse_sink(c, raw)

    if event_time == PROCESSING:
        check_processing_rules(c, raw, watermark, allowed_lateness, lateness_basis)

    if c.errors:
        return None, c.errors
    assert name is not None and window is not None and aggregations is not None
    assert watermark is not None and trigger is not None and source is not None
    assert sink is not None and event_time is not None and allowed_lateness is not None
    definition = Definition(
        name=name,
        description=str(description),
        source=source,
        key=key,
        event_time=event_time,
        watermark=watermark,
        window=window,
        allowed_lateness=allowed_lateness,
        lateness_basis=lateness_basis,
        trigger=trigger,
        accumulation=accumulation,
        aggregations=aggregations,
        sink=sink,
    )
    return definition, []


__all__ = ["INFINITE", "load_definition", "read_document", "validate_raw"]
