"""Existing stores keep their names: canonical JSON, spec hash and store name of definitions
covering every window kind and trigger shape are what they were when
``scripts/freeze_definition_names.py`` recorded them (tests/definition/fixtures/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.definition import canonical_json, load_definition, spec_hash, store_name
from jobs.definition.execution import spark_state_kind

FROZEN: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "frozen_names.json").read_text(encoding="utf-8")
)


def test_the_fixture_covers_every_window_kind_and_state_kind() -> None:
    kinds = {json.loads(c["canonical_json"])["window"]["type"] for c in FROZEN}
    assert kinds == {"tumbling", "hopping", "sliding", "session", "global"}
    assert {c["spark_state_kind"] for c in FROZEN} == {"native", "engine", "engine+clock"}


@pytest.mark.parametrize("case", FROZEN, ids=lambda c: c["store_name"])
def test_names_and_canonical_json_did_not_change(case: dict[str, Any]) -> None:
    defn = load_definition(case["document"])
    assert canonical_json(defn) == case["canonical_json"]
    assert spec_hash(defn) == case["spec_hash"]
    assert store_name(defn) == case["store_name"]
    assert spark_state_kind(defn) == case["spark_state_kind"]
    assert load_definition(case["canonical_json"]) == defn
