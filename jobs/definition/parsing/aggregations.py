"""The ``aggregations`` section of a definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jobs.definition.limits import (
    MAX_AGGREGATIONS,
)
from jobs.definition.model import (
    Aggregation,
)
from jobs.definition.parsing.fields import Collector, check_keys, enum_field, kind_of, text_field
from jobs.definition.parsing.source import parse_expression
from jobs.definition.schema import Schema

AGG_NAME_RE = re.compile(r"[a-z_][a-z0-9_]{0,62}")


AGG_FNS = ("count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct")


AGG_FN_HINTS = {
    "avg": "mean", "average": "mean", "cnt": "count", "distinct": "count_distinct",
    "count_unique": "count_distinct", "list": "collect", "collect_list": "collect",
    "approx_count_distinct": "count_distinct",
}


RESERVED_OUTPUT_NAMES = frozenset({
    "type", "key", "window_start", "window_end", "timing", "pane_index", "is_first", "is_last",
    "retraction", "values", "emitted_at", "watermark", "first_event_time", "last_event_time",
    "event_time", "reason", "record", "line", "job", "definition", "store",
})
"""Output fields of a pane / late / dead-letter line: an aggregation may not shadow them (the
Spark sinks write panes flat, one column per aggregation next to these)."""


def parse_aggregations(
    c: Collector, value: Any, schema: Schema | None, inferred: bool
) -> tuple[Aggregation, ...] | None:
    if value is None:
        c.add("aggregations", "is required: at least one, e.g. [{name: n, fn: count}]")
        return None
    if not isinstance(value, list):
        c.add("aggregations", f"must be a list, got {kind_of(value)}")
        return None
    if not value:
        c.add("aggregations", "must have at least one aggregation")
        return None
    if len(value) > MAX_AGGREGATIONS:
        c.add("aggregations", f"has {len(value)} entries; at most {MAX_AGGREGATIONS} are allowed")
        return None
    result: list[Aggregation] = []
    seen: dict[str, int] = {}
    ok = True
    for i, item in enumerate(value):
        prefix = f"aggregations[{i}]"
        if not isinstance(item, Mapping):
            c.add(prefix, f"must be a mapping {{name, fn, of}}, got {kind_of(item)}")
            ok = False
            continue
        check_keys(c, item, ("name", "fn", "of"), prefix)
        name = text_field(c, f"{prefix}.name", item.get("name"), required=True)
        if name is not None:
            if not AGG_NAME_RE.fullmatch(name):
                c.add(f"{prefix}.name", f"{name!r} must be a lower-case identifier "
                                        "([a-z_][a-z0-9_]*, at most 63 characters)")
                name = None
            elif name in RESERVED_OUTPUT_NAMES:
                c.add(f"{prefix}.name", f"{name!r} is reserved (it is an output field)")
                name = None
            elif name in seen:
                c.add(f"{prefix}.name", f"duplicate name {name!r} (also aggregations[{seen[name]}])")
                name = None
            else:
                seen[name] = i
        fn_raw = item.get("fn")
        fn = None
        if isinstance(fn_raw, str) and fn_raw in AGG_FN_HINTS:
            c.add(f"{prefix}.fn", f"unknown function {fn_raw!r}; use {AGG_FN_HINTS[fn_raw]}")
        else:
            fn = enum_field(c, f"{prefix}.fn", fn_raw, AGG_FNS, None)
        of = item.get("of")
        of_text: str | None = None
        of_ok = True
        if of is None:
            if fn is not None and fn != "count":
                c.add(f"{prefix}.of", f"is required for {fn} (the column or SQL expression to "
                                      "aggregate)")
                of_ok = False
        else:
            of_text = parse_expression(c, f"{prefix}.of", of, schema, inferred)
            of_ok = of_text is not None
        if name is None or fn is None or not of_ok:
            ok = False
            continue
        result.append(Aggregation(name=name, fn=fn, of=of_text))
    return tuple(result) if ok else None
