"""Differential tests of the sliding trigger engine's columnar output: every call's columns
(what a processing-time tick fired, as objects in ``before``, then ``EmissionColumns``) must
give the general engine's lines, through ``json_lines()`` and through ``to_emissions()``, for
count and processing-time triggers, every accumulation mode, ``collect`` / ``count_distinct``
and per-key watermarks; ``tidemark replay`` takes the columnar path for this engine."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition.model import Definition
from jobs.engine import make_engine
from jobs.engine.kernels import SlidingTriggerEngine
from jobs.replay import is_columnar, replay_file
from tests.engine_kernels.strategies import event_logs
from tests.engine_kernels.test_sliding_columns import _general, _line
from tests.engine_kernels.test_sliding_key_triggers_vs_engine import KEYED, KEYED_SIDE, PLAIN
from tests.engine_kernels.test_sliding_vs_engine import SETTINGS, Unit, _batch, units

COLUMN_SETTINGS = settings(SETTINGS, max_examples=25)


def _columnar(defn: Definition, us: list[Unit], external: bool) -> tuple[
        list[list[str]], list[list[str]], SlidingTriggerEngine]:
    """The calls of ``_general`` on the columnar API: per call, the lines of ``before`` and
    ``json_lines()``, and the lines of ``to_emissions()``."""
    eng = SlidingTriggerEngine(defn, watermark="external" if external else "internal")
    outs = []
    for u in us:
        outs.append(eng.ingest_columns(_batch(defn, u)))
        if external and u[1]:
            outs.append(eng.advance_watermark_columns(max(r[1] for r in u[1]) - 5))
    outs.append(eng.end_of_input_columns())
    texts = [[_line(e) for e in out.before] + out.panes.json_lines() for out in outs]
    objects = [[_line(e) for e in out.to_emissions()] for out in outs]
    return texts, objects, eng


@COLUMN_SETTINGS
@given(defn=st.one_of(PLAIN, KEYED, KEYED_SIDE), us=units(), external=st.booleans())
def test_columns_are_the_general_engines_output_call_by_call(
    defn: Definition, us: list[Unit], external: bool
) -> None:
    texts, objects, eng = _columnar(defn, us, external)
    expected = _general(defn, us, external)
    assert eng.general is None
    assert objects == expected
    assert texts == expected


@settings(SETTINGS, max_examples=8)
@given(defn=st.one_of(PLAIN, KEYED_SIDE), log=event_logs())
def test_replay_file_takes_the_columns_and_writes_the_general_engines_lines(
    defn: Definition, log: list[dict[str, Any]]
) -> None:
    eng = make_engine(defn)
    assert isinstance(eng, SlidingTriggerEngine) and is_columnar(eng)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "in.jsonl")
        src.write_text("".join(json.dumps(r) + "\n" for r in log), encoding="utf-8")
        auto, general = Path(tmp, "auto.jsonl"), Path(tmp, "general.jsonl")
        s_auto = replay_file(defn, str(src), str(auto), engine="auto")
        s_general = replay_file(defn, str(src), str(general), engine="general")
        assert auto.read_text(encoding="utf-8") == general.read_text(encoding="utf-8")
        assert s_auto == s_general
