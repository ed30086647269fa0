"""``EmissionColumns`` (the columnar output of engines whose panes are not all final) gives back
exactly the general engine's emissions and output lines: every hand-written transcript's output
(tests/transcripts/**: triggers, retractions, sessions, sliding windows, collect, late records,
global windows, odd keys) is turned into columns call by call, then into objects and lines."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobs.definition.model import Definition
from jobs.engine.records import LateRecord, Pane
from jobs.engine.vectorized.emission_columns import EmissionColumns
from jobs.replay import _replay_chunks
from tests.engine_vectorized.transcripts import transcripts

CASES = transcripts()


def _line(e: Any) -> str:
    return json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(("name", "defn", "doc"), CASES, ids=[c[0] for c in CASES])
def test_columns_give_back_the_general_engines_output(
        name: str, defn: Definition, doc: dict[str, Any]) -> None:
    lines = [json.dumps(x, default=str) for x in doc["input"]]
    names = [a.name for a in defn.aggregations]
    chunks = _replay_chunks(defn, lines, eof_flush=doc.get("eof_flush", True), stats=None,
                            engine="general")
    for chunk in chunks:
        assert isinstance(chunk, list)
        out = [e for e in chunk if isinstance(e, (Pane, LateRecord))]
        cols = EmissionColumns.of_emissions(out, names)
        assert (cols.pane_count, cols.late_count) == (
            sum(isinstance(e, Pane) for e in out), sum(isinstance(e, LateRecord) for e in out))
        assert cols.to_emissions() == out
        assert cols.json_lines() == [_line(e) for e in out]


def test_transcripts_cover_what_the_columns_hold() -> None:
    kinds = {d.window.type for _, d, _ in CASES}
    assert {"tumbling", "hopping", "sliding", "session", "global"} <= kinds
    assert any(d.accumulation == "retracting" for _, d, _ in CASES)
    assert any(a.fn == "collect" for _, d, _ in CASES for a in d.aggregations)
