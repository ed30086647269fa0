"""A valid base definition that tests mutate one field at a time."""

from __future__ import annotations

import copy
from typing import Any

BASE: dict[str, Any] = {
    "name": "team_scores",
    "description": "Team scores, 2 minute windows",
    "source": {
        "kind": "files",
        "path": "data/landing/team_scores",
        "format": "json",
        "schema": "team STRING, score INT, et TIMESTAMP, meta STRUCT<region: STRING>",
    },
    "key": "team",
    "event_time": "et",
    "watermark": {"strategy": "bounded", "delay": "0s", "scope": "global", "idle_advance": False},
    "window": {"type": "tumbling", "size": "2m", "align_to": "1970-01-01T00:00:00Z"},
    "allowed_lateness": "0s",
    "lateness_basis": "window",
    "trigger": {"emit": "final"},
    "accumulation": "accumulating",
    "aggregations": [{"name": "total", "fn": "sum", "of": "score"}, {"name": "n", "fn": "count"}],
    "sink": {"kind": "parquet", "path": "data/results/team_scores"},
}

_DELETE = object()
DELETE: Any = _DELETE


def base(**changes: Any) -> dict[str, Any]:
    """BASE with dotted-path changes: ``base(**{"window.step": "1m"})``; DELETE removes."""
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        set_path(doc, path, value)
    return doc


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    target: Any = doc
    for part in parts[:-1]:
        if part.endswith("]"):
            name, index = part[:-1].split("[")
            target = target[name][int(index)]
        else:
            target = target.setdefault(part, {})
    last = parts[-1]
    if last.endswith("]"):
        name, index = last[:-1].split("[")
        target[name][int(index)] = value
    elif value is _DELETE:
        target.pop(last, None)
    else:
        target[last] = value
