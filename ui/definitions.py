"""The definition facts the define/edit page shows, from the pure ``jobs.definition`` API.

Validation, the derived store name and "keeps the store / needs a migration" are all decided by
``jobs.definition`` -- the same functions the catalog uses when it saves -- so what the form
promises is what saving does. This module only gathers them into one value per form state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jobs.definition.errors import DefinitionError, FieldError
from jobs.definition.model import Definition

Kind = Literal["new_job", "unchanged", "same_store", "new_store"]


@dataclass(frozen=True)
class Assessment:
    """Everything the page says about the form's current content."""

    definition: Definition | None
    errors: list[FieldError]
    store: str | None = None
    kind: Kind | None = None
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)
    replay_files: int | None = None
    """For ``new_store``: how many input files a migration would replay (None if unknown)."""
    path_change: tuple[str, str] | None = None
    """(old, new) execution path on Spark when the change moves the job between Spark's native
    aggregation and the engine (why a trigger change can need a migration)."""

    @property
    def valid(self) -> bool:
        return self.definition is not None and not self.errors


def validate(raw: dict[str, Any]) -> tuple[Definition | None, list[FieldError]]:
    """All field errors of ``raw`` (empty when valid) and the definition when valid."""
    from jobs.definition import (
        load_definition,  # the validator the catalog itself uses
        validate_raw,
    )

    errors: list[FieldError] = list(validate_raw(raw))
    if errors:
        return None, errors
    try:
        return load_definition(raw), []
    except DefinitionError as exc:
        return None, list(exc.errors)


def load_spec(spec: dict[str, Any] | str) -> Definition:
    from jobs.definition import load_definition

    return load_definition(spec)


def input_file_count(defn: Definition) -> int | None:
    """Files a migration would replay: the data files currently in the source directory.

    Only ``files`` sources have retained input we can count (hidden and ``_``-prefixed
    names are bookkeeping, as Spark's file source treats them). None when unknown.
    """
    if defn.source.kind != "files" or not defn.source.path:
        return None
    root = Path(defn.source.path)
    if not root.is_dir():
        return None
    return sum(
        1
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)
    )


def assess(
    raw: dict[str, Any],
    form_errors: list[FieldError],
    active: Definition | None,
) -> Assessment:
    """Validate the form and compare it with the job's active definition (None = new job)."""
    from jobs.definition import diff_definitions, store_name

    defn, errors = validate(raw)
    errors = form_errors + errors
    if defn is None or errors:
        return Assessment(None, errors)
    store = store_name(defn)
    if active is None:
        return Assessment(defn, [], store, "new_job")
    diff = diff_definitions(active, defn)
    changes = [(c.path, c.old, c.new) for c in diff.changes]
    kind: Kind = diff.kind
    files = input_file_count(defn) if kind == "new_store" else None
    return Assessment(defn, [], store, kind, changes, files, diff.path_change)
