"""Every hand-written transcript (tests/transcripts/**) whose definition qualifies for the
vectorized engine replays to exactly the same output lines with ``--engine vectorized`` as with
the general engine (whose output tests/engine/test_transcripts.py checks against the
transcripts' hand-computed expectations)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine.vectorized import qualifies
from jobs.replay import replay_lines

ROOT = Path(__file__).resolve().parents[1] / "transcripts"


def _qualifying() -> list[tuple[str, Definition, dict[str, Any]]]:
    out = []
    for f in sorted(ROOT.glob("**/*.yaml")):
        doc = yaml.safe_load(f.read_text())
        if not isinstance(doc, dict) or "definition" not in doc:
            continue
        raw = {"name": "transcript", **doc["definition"]}
        try:
            defn = load_definition(raw)
        except Exception:  # transcripts about invalid definitions
            continue
        if qualifies(defn):
            out.append((str(f.relative_to(ROOT)), defn, doc))
    return out


CASES = _qualifying()


def test_some_transcripts_qualify() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize(("name", "defn", "doc"), CASES, ids=[c[0] for c in CASES])
def test_vectorized_replay_equals_general(name: str, defn: Definition, doc: dict[str, Any]) -> None:
    lines = [json.dumps(x, default=str) for x in doc["input"]]
    eof = doc.get("eof_flush", True)
    general = list(replay_lines(defn, lines, eof_flush=eof, engine="general"))
    vectorized = list(replay_lines(defn, lines, eof_flush=eof, engine="vectorized"))
    assert vectorized == general
