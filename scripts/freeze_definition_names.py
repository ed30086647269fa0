"""Write tests/definition/fixtures/frozen_names.json: the canonical JSON, spec hash and store
name of definitions covering every window kind and trigger shape, as the code computes them
when the script runs.

Existing stores keep their names only if these never change, so the file was generated once
from the code before window kinds and triggers became types, and
tests/definition/test_frozen_names.py checks the code of today against it. Re-run it only for
a deliberate, documented change of store names (which moves every running job to a new store).

    .venv/bin/python scripts/freeze_definition_names.py
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

from jobs.definition import canonical_json, load_definition, spec_hash, store_name
from jobs.definition.execution import spark_state_kind

OUT = Path(__file__).resolve().parent.parent / "tests" / "definition" / "fixtures" / "frozen_names.json"

BASE: dict[str, Any] = {
    "name": "team_scores",
    "source": {"kind": "files", "path": "data/landing/team_scores", "format": "json",
               "schema": "team STRING, score INT, et TIMESTAMP"},
    "key": "team",
    "event_time": "et",
    "watermark": {"strategy": "bounded", "delay": "5s"},
    "aggregations": [{"name": "total", "fn": "sum", "of": "score"}, {"name": "n", "fn": "count"}],
    "sink": {"kind": "parquet", "path": "data/results/team_scores"},
}

WINDOWS: list[dict[str, Any]] = [
    {"type": "tumbling", "size": "2m"},
    {"type": "tumbling", "size": "2m", "align_to": "2026-01-01T00:00:30Z"},
    {"type": "tumbling", "size": "90s", "align_to": "1999-12-31T23:59:59.250Z"},
    {"type": "hopping", "size": "10m", "step": "2m"},
    {"type": "hopping", "size": "10m", "step": "3m", "align_to": "2026-01-01T00:01:00Z"},
    {"type": "hopping", "size": "1m", "step": "1m"},
    {"type": "sliding", "size": "5m"},
    {"type": "session", "gap": "30s"},
    {"type": "global"},
]

TRIGGERS: list[dict[str, Any]] = [
    {},
    {"trigger": "final"},
    {"trigger": {"emit": "current"}},
    {"trigger": {"emit": "custom", "early": {"after": "30s"}}},
    {"trigger": {"emit": "custom", "early": {"every": "1m", "align_to": "2026-01-01T00:00:10Z"},
                 "on_time": False}},
    {"trigger": {"emit": "custom", "early": {"count": 3}}},
    {"allowed_lateness": "1m", "trigger": {"emit": "custom", "late": {"after": "1m"}}},
    {"allowed_lateness": "1m", "trigger": {"emit": "custom", "early": {"count": 2},
                                           "late": {"count": 5}}},
    {"allowed_lateness": "1m", "trigger": {"emit": "custom"}},
    {"allowed_lateness": "2m", "trigger": "final"},
]

VARIANTS: list[dict[str, Any]] = [
    {"aggregations": [{"name": "first_score", "fn": "first", "of": "score"},
                      {"name": "teams", "fn": "count_distinct", "of": "LOWER( Team )"}]},
    {"event_time": "processing", "watermark": {"strategy": "bounded"}},
    {"watermark": {"strategy": "bounded", "delay": "5s", "idle_advance": True}},
    {"watermark": {"strategy": "bounded", "delay": "infinite"}},
    {"watermark": {"strategy": "bounded", "delay": "5s", "scope": "key"}},
    {"watermark": {"strategy": "source"}},
    {"key": None, "accumulation": "retracting", "lateness_basis": "event"},
    {"name": "a_rather_long_job_name_that_leaves_little_room_for_the_window_x",
     "aggregations": [{"name": f"a{i}", "fn": "max", "of": "score"} for i in range(6)]},
    {"description": "Tëam scores ✓", "accumulation": "discarding"},
]


def documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for window, trigger in itertools.product(WINDOWS, TRIGGERS):
        doc = copy.deepcopy(BASE)
        doc["window"] = window
        doc.update(copy.deepcopy(trigger))
        docs.append(doc)
    for window, variant in itertools.product(WINDOWS, VARIANTS):
        doc = copy.deepcopy(BASE)
        doc["window"] = window
        doc.update(copy.deepcopy(variant))
        docs.append(doc)
    return docs


def freeze(doc: dict[str, Any]) -> dict[str, Any]:
    defn = load_definition(doc)
    return {
        "document": doc,
        "canonical_json": canonical_json(defn),
        "spec_hash": spec_hash(defn),
        "store_name": store_name(defn),
        "spark_state_kind": spark_state_kind(defn),
    }


def main() -> None:
    cases = [freeze(doc) for doc in documents()]
    OUT.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(cases)} definitions -> {OUT}")


if __name__ == "__main__":
    main()
