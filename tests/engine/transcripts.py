"""The transcript format and its runner (documented in docs/semantics.md).

A transcript is a YAML file: a definition, replay input lines, and the replay output lines a
user expects, worked out by hand from docs/semantics.md. The runner feeds the input through the real
``tidemark replay`` pipeline (JSON text lines, extraction, engine) and compares the output
sequence in order and length; inside each expected object only the fields written are compared,
and ISO strings in time fields are converted to epoch ms first.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from jobs.engine.arrival import Arrival
from jobs.replay import EngineChoice, replay_lines
from jobs.timeutil import datetime_to_ms, parse_instant

from .definitions import definition_from_mapping

TIME_FIELDS = frozenset(
    {
        "window_start",
        "window_end",
        "emitted_at",
        "watermark",
        "event_time",
        "first_event_time",
        "last_event_time",
    }
)
TOP_FIELDS = frozenset(
    {"title", "source", "definition", "input", "eof_flush", "arrival", "expected"}
)


class TranscriptError(Exception):
    """A transcript file that does not follow the format."""


@dataclass(frozen=True)
class Transcript:
    path: Path
    title: str
    source: str
    definition: dict[str, Any]
    input: list[dict[str, Any]]
    eof_flush: bool
    expected: list[dict[str, Any]]
    arrival: str = "record"


def _plain(value: Any) -> Any:
    """YAML turns unquoted timestamps into datetimes; input lines are JSON, so make them ISO."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def qualifies_for_vectorized(path: Path) -> bool:
    """Whether the transcript's definition runs on the vectorized fast path too."""
    from jobs.engine.vectorized import qualifies

    return bool(qualifies(definition_from_mapping(load_transcript(path).definition)))


def qualifies_for_kernels(path: Path) -> bool:
    """Whether the transcript's definition runs on a compiled engine (jobs.engine.kernels),
    which ``make_engine`` (replay's ``auto`` engine) then picks."""
    from jobs.engine.kernels import qualifies

    return bool(qualifies(definition_from_mapping(load_transcript(path).definition)))


def load_transcript(path: Path) -> Transcript:
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        raise TranscriptError(f"{path}: not a mapping")
    unknown = set(raw) - TOP_FIELDS
    if unknown:
        raise TranscriptError(f"{path}: unknown fields {sorted(unknown)}")
    for name in ("title", "source", "definition", "input", "expected"):
        if name not in raw:
            raise TranscriptError(f"{path}: missing {name}")
    expected = raw["expected"] or []
    if not isinstance(raw["input"], list) or not isinstance(expected, list):
        raise TranscriptError(f"{path}: input and expected must be lists")
    return Transcript(
        path=path,
        title=str(raw["title"]),
        source=str(raw["source"]),
        definition=_plain(raw["definition"]),
        input=[_plain(line) for line in raw["input"]],
        eof_flush=bool(raw.get("eof_flush", True)),
        expected=[_plain(e) for e in expected],
        arrival=str(raw.get("arrival", "record")),
    )


def _time(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, datetime):
        return datetime_to_ms(value)
    if isinstance(value, str | int | float):
        return parse_instant(value)
    return value


def normalise_expected(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: (_time(v) if k in TIME_FIELDS else v) for k, v in obj.items()}


def _equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, float) or isinstance(actual, float):
        if isinstance(expected, bool) or isinstance(actual, bool):
            return expected is actual
        if not isinstance(expected, int | float) or not isinstance(actual, int | float):
            return False
        # mean is a float: 2.5 written as 2.5; an int expected never matches a float actual
        if isinstance(expected, int) != isinstance(actual, int):
            return False
        return math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            _equal(expected[k], actual[k]) for k in expected
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            _equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Only the fields written in ``expected`` count."""
    return all(k in actual and _equal(v, actual[k]) for k, v in expected.items())


def _show(obj: dict[str, Any] | None, fields: list[str] | None = None) -> str:
    if obj is None:
        return "-"
    keys = fields if fields is not None else list(obj)
    return json.dumps({k: obj.get(k) for k in keys if k in obj}, separators=(",", ":"))


def render_diff(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> str:
    """Line by line: `=` matches, `!` differs (expected above, actual below), `+`/`-` extra."""
    out = [f"expected {len(expected)} lines, got {len(actual)}"]
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else None
        a = actual[i] if i < len(actual) else None
        if e is not None and a is not None and matches(e, a):
            out.append(f"  = {i:3d} {_show(a, list(e))}")
        elif e is not None and a is not None:
            out.append(f"  ! {i:3d} expected {_show(e)}")
            out.append(f"        actual   {_show(a, list(e))}")
            bad = [k for k in e if k not in a or not _equal(e[k], a[k])]
            out.append(f"        differs in {', '.join(bad)}")
        elif e is not None:
            out.append(f"  - {i:3d} missing  {_show(e)}")
        else:
            out.append(f"  + {i:3d} extra    {_show(a)}")
    return "\n".join(out)


def run_transcript(
    t: Transcript, engine: EngineChoice = "general", arrival: str | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(expected normalised, actual output) of one transcript (``arrival`` overrides the
    transcript's own)."""
    defn = definition_from_mapping(t.definition)
    lines = [json.dumps(line) for line in t.input]
    actual = list(replay_lines(defn, lines, eof_flush=t.eof_flush, engine=engine,
                               arrival=Arrival.parse(arrival or t.arrival)))
    expected = [normalise_expected(e) for e in t.expected]
    return expected, actual


def check_transcript(path: Path, engine: EngineChoice = "general",
                     arrival: str | None = None) -> None:
    """Raise AssertionError with a readable diff when the output differs."""
    t = load_transcript(path)
    expected, actual = run_transcript(t, engine, arrival)
    ok = len(expected) == len(actual) and all(
        matches(e, a) for e, a in zip(expected, actual, strict=True)
    )
    if not ok:
        raise AssertionError(
            f"{path.name} ({engine} engine, arrival {arrival or t.arrival}): {t.title}\n"
            f"source: {t.source}\n"
            + render_diff(expected, actual)
        )
