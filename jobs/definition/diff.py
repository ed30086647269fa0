"""What changed between two versions of a definition, and what it means for running state.

The catalog records this in the audit log and the UI shows it before a user saves: the list of
changed fields (over the canonical forms, so ``2m`` -> ``120000`` is no change) and whether
the new version keeps the state store (restart in place) or needs a new one (migration).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from jobs.definition.canonical import to_canonical
from jobs.definition.durations import format_duration
from jobs.definition.execution import SparkStateKind, spark_state_kind
from jobs.definition.model import Definition
from jobs.definition.store import store_name

DiffKind = Literal["unchanged", "same_store", "new_store"]

STATE_SHAPING_PREFIXES = (
    "name", "key", "event_time", "window", "aggregations", "accumulation", "watermark.scope",
    "lateness_basis",
)
"""Paths whose change gives a new store (``name`` because it is part of the store name)."""

_DURATION_PATHS = {
    "watermark.delay", "allowed_lateness", "window.size", "window.step", "window.gap",
    "trigger.early.after", "trigger.early.every", "trigger.late.after",
}


@dataclass(frozen=True, slots=True)
class FieldChange:
    path: str
    """``window.size``, ``aggregations[1].fn``, ``source.options.maxFilesPerTrigger``."""
    old: Any
    """Canonical value before (None when the field did not exist)."""
    new: Any
    state_shaping: bool = False

    def describe(self) -> str:
        return f"{self.path}: {_show(self.path, self.old)} -> {_show(self.path, self.new)}"


@dataclass(frozen=True, slots=True)
class DefinitionDiff:
    changes: list[FieldChange] = field(default_factory=list)
    same_store: bool = True
    old_store: str = ""
    new_store: str = ""
    path_change: tuple[SparkStateKind, SparkStateKind] | None = None
    """(old, new) execution path on Spark when the change moves the definition between Spark's
    native aggregation, the engine, and the engine woken by the clock (``engine+clock``): each
    keeps its own kind of checkpoint, so this alone needs a new store
    (``jobs/definition/execution.py``)."""

    @property
    def kind(self) -> DiffKind:
        if not self.changes:
            return "unchanged"
        return "same_store" if self.same_store else "new_store"

    def summary(self) -> str:
        """Readable text, e.g. for the audit log::

            2 changes; new state store (migration): ...
              window.size: 2m -> 5m  [state]
              description: 'a' -> 'b'
        """
        if not self.changes:
            return "no changes"
        n = len(self.changes)
        head = f"{n} change{'s' if n != 1 else ''}; "
        if self.same_store:
            head += f"same state store {self.new_store} (restart in place)"
        else:
            head += f"new state store {self.new_store} (migration from {self.old_store})"
        lines = [head]
        for change in self.changes:
            mark = "  [state]" if change.state_shaping else ""
            lines.append(f"  {change.describe()}{mark}")
        if self.path_change is not None:
            old, new = self.path_change
            lines.append(f"  execution path on Spark: {old} -> {new}  [state]")
        return "\n".join(lines)


def diff_definitions(old: Definition, new: Definition) -> DefinitionDiff:
    changes: list[FieldChange] = []
    _walk("", to_canonical(old), to_canonical(new), changes)
    old_store, new_store = store_name(old), store_name(new)
    old_path, new_path = spark_state_kind(old), spark_state_kind(new)
    return DefinitionDiff(
        changes=changes, same_store=old_store == new_store, old_store=old_store,
        new_store=new_store,
        path_change=(old_path, new_path) if old_path != new_path else None,
    )


def _is_state_shaping(path: str) -> bool:
    return any(
        path == p or path.startswith(f"{p}.") or path.startswith(f"{p}[")
        for p in STATE_SHAPING_PREFIXES
    )


def _walk(path: str, a: Any, b: Any, out: list[FieldChange]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            sub = f"{path}.{key}" if path else key
            _walk(sub, a.get(key), b.get(key), out)
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _walk(f"{path}[{i}]", a[i] if i < len(a) else None, b[i] if i < len(b) else None, out)
        return
    if a != b or type(a) is not type(b):
        out.append(FieldChange(path, a, b, _is_state_shaping(path)))


def _show(path: str, value: Any) -> str:
    if value is None:
        return "(none)"
    if path in _DURATION_PATHS and isinstance(value, int) and not isinstance(value, bool):
        return format_duration(value)
    if value == "infinite":
        return "infinite"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
