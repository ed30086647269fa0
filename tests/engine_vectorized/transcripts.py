"""The hand-written transcripts (tests/transcripts/**) with a valid definition, for the tests
that replay them through another engine or output form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from jobs.definition import load_definition
from jobs.definition.model import Definition

ROOT = Path(__file__).resolve().parents[1] / "transcripts"


def transcripts(
    keep: Callable[[Definition], bool] = lambda _: True,
) -> list[tuple[str, Definition, dict[str, Any]]]:
    """(relative path, definition, document) of every transcript whose definition loads and
    passes ``keep``."""
    out = []
    for f in sorted(ROOT.glob("**/*.yaml")):
        doc = yaml.safe_load(f.read_text())
        if not isinstance(doc, dict) or "definition" not in doc:
            continue
        try:
            defn = load_definition({"name": "transcript", **doc["definition"]})
        except Exception:  # transcripts about invalid definitions
            continue
        if keep(defn):
            out.append((str(f.relative_to(ROOT)), defn, doc))
    return out
