"""Bulk construction of final panes, column by column.

Why: a firing of a hopping definition emits ~100k panes, and ``Pane(...)`` (a frozen slots
dataclass) costs one Python-level ``object.__setattr__`` per field, which made building the
objects the largest part of a replay. Here the objects are allocated empty and each field is
filled for all panes at once with ``map`` over the field's slot descriptor, so the per-pane
loop runs in C. The result is ordinary :class:`Pane` objects (same class, same fields, equal to
what ``Pane(...)`` builds); if ``Pane`` ever stops being a slots class, the constructor is used.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from itertools import repeat
from typing import Any

from jobs.engine.records import Pane

_FIELDS = [f.name for f in fields(Pane)]
_SETTERS: dict[str, Any] | None = (
    {name: Pane.__dict__[name].__set__ for name in _FIELDS}
    if all(type(Pane.__dict__.get(n)).__name__ == "member_descriptor" for n in _FIELDS)
    else None
)


def final_panes(
    keys: Sequence[Any], starts: Sequence[Any], ends: Sequence[Any],
    values: Sequence[dict[str, Any]], watermarks: Sequence[Any], emitted_at: int,
) -> list[Pane]:
    """``Pane(key, start, end, "ON_TIME", 0, True, True, False, values, emitted_at, wm)`` for
    each row of the columns (all of the same length)."""
    n = len(keys)
    if _SETTERS is None:  # pragma: no cover - only if Pane loses its slots
        return [
            Pane(k, s, e, "ON_TIME", 0, True, True, False, v, emitted_at, w)
            for k, s, e, v, w in zip(keys, starts, ends, values, watermarks, strict=True)
        ]
    columns: dict[str, Any] = {
        "key": keys, "window_start": starts, "window_end": ends, "values": values,
        "watermark": watermarks,
    }
    constants: dict[str, Any] = {
        "timing": "ON_TIME", "pane_index": 0, "is_first": True, "is_last": True,
        "retraction": False, "emitted_at": emitted_at, "first_event_time": None,
        "last_event_time": None, "type": "pane",
    }
    panes: list[Pane] = list(map(object.__new__, repeat(Pane, n)))
    sink: deque[None] = deque(maxlen=0)
    for name in _FIELDS:
        col = columns[name] if name in columns else repeat(constants[name], n)
        sink.extend(map(_SETTERS[name], panes, col))
    return panes
