"""Definition mappings -> ``Definition`` for engine tests, through the real parser (so every
transcript also exercises the definition format and its defaults)."""

from __future__ import annotations

from typing import Any

from jobs.definition import load_definition
from jobs.definition.model import Definition


def definition_from_mapping(mapping: dict[str, Any]) -> Definition:
    """The ``Definition`` a transcript's ``definition:`` mapping describes (``name`` may be
    omitted: it does not change what the engine emits)."""
    m = dict(mapping)
    m.setdefault("name", "transcript")
    return load_definition(m)
