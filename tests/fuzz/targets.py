"""Fuzz targets: one function per hostile surface, taking raw bytes, shared by the hypothesis
tests and the atheris (coverage-guided) runs. Each states the contract of its surface; any
exception other than an AssertionError about that contract is a crash, i.e. a bug.

- :func:`definition`: any text is a list of ``(field, message)`` errors or a definition;
- :func:`expression`: any text is refused with errors naming the field, or compiles to a
  function that evaluates a record or raises the package's error;
- :func:`replay_input`: any input lines replay to strict, UTF-8-writable JSON, and every
  record is counted in a pane or reported late (nothing vanishes), whatever the lines hold.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jobs.definition import DefinitionError, compile_expression, load_definition, validate_raw
from jobs.definition.model import Definition
from jobs.definition.schema import parse_schema
from jobs.definition.sql import check_expression
from jobs.replay import ReplayStats, replay_lines

SCHEMA = "team STRING, score INT, et TIMESTAMP, meta STRUCT<region: STRING>"
RECORDS: list[dict[str, Any]] = [
    {"team": "a", "score": 1, "et": 1000, "meta": {"region": "eu"}},
    {"team": None, "score": 2**62, "et": "2026-01-01T00:00:00Z", "meta": None},
    {"team": "\u00e9", "score": -1.5e308, "et": -1, "meta": {"region": 7}},
]
DEFINITION = """\
name: fuzz
key: team
event_time: et
window: {type: tumbling, size: 1m}
trigger: final
aggregations:
  - {name: n, fn: count}
  - {name: s, fn: sum, of: score}
  - {name: m, fn: mean, of: score}
"""


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"bare {name} in output")


def definition(data: bytes) -> None:
    for document in (data, data.decode("utf-8", "replace")):
        errors = validate_raw(document)
        assert isinstance(errors, list)
        for field, message in errors:
            assert isinstance(field, str) and isinstance(message, str) and message
        if not errors:
            assert isinstance(load_definition(document), Definition)


@lru_cache(maxsize=1)
def _schema() -> Any:
    return parse_schema(SCHEMA)


def expression(data: bytes) -> None:
    sql = data.decode("utf-8", "replace")
    for schema, inferred in ((None, False), (None, True), (_schema(), False)):
        for field, message in check_expression(sql, "key", schema, inferred_schema=inferred):
            assert field == "key" and message
    try:
        fn = compile_expression(sql, "key")
    except DefinitionError as exc:
        assert exc.errors and exc.errors[0][0] == "key"
        return
    for record in RECORDS:
        try:
            fn(record)
        except DefinitionError as exc:  # a record it cannot evaluate: a dead letter, named
            assert exc.field == "key"


@lru_cache(maxsize=1)
def _definition() -> Definition:
    return load_definition(DEFINITION)


def replay_input(data: bytes) -> None:
    stats = ReplayStats()
    counted = late = 0
    for obj in replay_lines(_definition(), data.split(b"\n"), stats=stats):
        text = json.dumps(obj, ensure_ascii=False)
        text.encode("utf-8")  # writable: no lone surrogate
        json.loads(text, parse_constant=_reject_constant)  # strict JSON: no NaN / Infinity
        if obj["type"] == "pane":
            counted += obj["values"]["n"]
        elif obj["type"] == "late":
            late += 1
    # emit final, tumbling, no lateness: one pane per window, one late line per late record
    assert counted + late == stats.records, (counted, late, stats.records)


TARGETS = {"definition": definition, "expression": expression, "replay": replay_input}
