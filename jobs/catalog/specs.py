"""The catalog's view of a definition: validate, canonicalise, hash, name the store, diff.

All of it is delegated to :mod:`jobs.definition` (the one place that knows the format); this
module only turns a ``DefinitionError`` into a :class:`CatalogError` that keeps the field
errors, and gives the service the few derived values it stores with a version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jobs.catalog.errors import CatalogError
from jobs.definition import (
    Definition,
    DefinitionError,
    canonical_json,
    diff_definitions,
    load_definition,
    spec_hash,
    store_name,
)

DiffKind = Literal["unchanged", "same_store", "new_store"]
Change = tuple[str, Any, Any]


@dataclass(frozen=True, slots=True)
class PreparedSpec:
    definition: Definition
    canonical: str
    hash: str
    store: str

    @property
    def name(self) -> str:
        return self.definition.name


def prepare(definition: str | Mapping[str, Any], *, what: str = "definition") -> PreparedSpec:
    """Validate ``definition``; raise ``CatalogError(code="invalid")`` with its field errors."""
    try:
        defn = load_definition(definition if isinstance(definition, str) else dict(definition))
    except DefinitionError as exc:
        raise CatalogError(
            f"{what} refused: {exc}", code="invalid", errors=list(exc.errors)
        ) from exc
    return PreparedSpec(defn, canonical_json(defn), spec_hash(defn), store_name(defn))


def load_stored(spec_json: str) -> Definition:
    """A stored canonical spec back as a Definition (it validated when it was saved)."""
    return load_definition(json.loads(spec_json))


def diff(old: Definition, new: Definition) -> tuple[DiffKind, tuple[Change, ...]]:
    result = diff_definitions(old, new)
    changes = tuple((c.path, c.old, c.new) for c in result.changes)
    kind: DiffKind = result.kind
    return kind, changes


def changes_json(changes: tuple[Change, ...]) -> list[dict[str, Any]]:
    """Changes as JSON for the audit log (values that are not JSON become strings)."""
    return [
        {"path": p, "old": _jsonable(o), "new": _jsonable(n)} for p, o, n in changes
    ]


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
