"""The form model: every definition survives definition -> form -> definition unchanged, and
the form reports what it cannot represent."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.definition import canonical_json, load_definition
from ui import defform

BASE: dict[str, Any] = {
    "name": "t",
    "source": {"kind": "files", "path": "/in", "format": "json",
               "schema": "k STRING, v INT, et TIMESTAMP"},
    "key": "k",
    "event_time": "et",
    "aggregations": [{"name": "s", "fn": "sum", "of": "v"}, {"name": "n", "fn": "count"}],
}

CASES: list[dict[str, Any]] = [
    {"window": {"type": "tumbling", "size": "2m"}},
    {"window": {"type": "tumbling", "size": "1h", "align_to": "2026-01-01T00:15:00Z"},
     "description": "aligned"},
    {"window": {"type": "hopping", "size": "10m", "step": "1m"}, "accumulation": "retracting"},
    {"window": {"type": "sliding", "size": "30s"}, "allowed_lateness": "infinite",
     "lateness_basis": "event"},
    {"window": {"type": "session", "gap": "5m"},
     "trigger": {"emit": "custom", "early": {"every": "10s", "align_to": "2026-01-01T00:00:05Z"},
                 "on_time": False, "late": {"after": "30s"}},
     "allowed_lateness": "1m"},
    {"window": {"type": "global"}, "trigger": {"emit": "custom", "early": {"count": 100}}},
    {"window": {"type": "tumbling", "size": "1m"}, "trigger": {"emit": "current"},
     "watermark": {"strategy": "bounded", "delay": "1m30s", "scope": "key", "idle_advance": True},
     "source": {"kind": "files", "path": "/in", "format": "csv", "schema": "k STRING, v INT, et TIMESTAMP",
                "options": {"maxFilesPerTrigger": "1", "header": "true"}},
     "sink": {"kind": "catalog"}},
    {"window": {"type": "tumbling", "size": "1m"}, "event_time": "processing", "key": None},
]


@pytest.mark.parametrize("case", CASES)
def test_definition_round_trips_through_the_form(case: dict[str, Any]) -> None:
    raw = {**BASE, **case}
    if raw.get("key") is None:
        raw.pop("key")
    original = load_definition(raw)
    model = defform.form_from_definition(original)
    back, errors = defform.raw_from_form(model)
    assert errors == []
    assert canonical_json(load_definition(back)) == canonical_json(original)
    # and the YAML export reads back to the same definition
    assert load_definition(defform.to_yaml(back)) == original


def test_form_shows_human_durations() -> None:
    defn = load_definition({**BASE, "window": {"type": "hopping", "size": 600000, "step": "PT1M"}})
    model = defform.form_from_definition(defn)
    assert model["window.size"] == "10m" and model["window.step"] == "1m"


def test_hidden_parameters_are_not_sent() -> None:
    """A step typed while hopping was chosen must not make a tumbling window invalid."""
    model = defform.new_model()
    model.update({"name": "t", "window.type": "tumbling", "window.size": "1m", "window.step": "30s"})
    raw, _ = defform.raw_from_form(model)
    assert raw["window"] == {"type": "tumbling", "size": "1m"}


def test_options_lines_are_checked() -> None:
    model = defform.new_model()
    model["source.options"] = "maxFilesPerTrigger=1\n# comment\nnot an option"
    raw, errors = defform.raw_from_form(model)
    assert raw["source"]["options"] == {"maxFilesPerTrigger": "1"}
    assert errors == [("source.options", "line 3: expected name=value, got 'not an option'")]


def test_import_reports_fields_the_form_cannot_hold() -> None:
    model, dropped = defform.form_from_raw({"name": "x", "colour": "blue",
                                            "window": {"type": "tumbling", "size": "1m", "hop": 1}})
    assert model["name"] == "x" and model["window.size"] == "1m"
    assert dropped == ["colour", "window.hop"]


@pytest.mark.parametrize(("error_field", "path", "expected"), [
    ("window.size", "window.size", True),
    ("aggregations[1].of", "aggregations[1]", True),
    ("aggregations[10].of", "aggregations[1]", False),
    ("trigger.early.after", "trigger.early", True),
    ("window.sizes", "window.size", False),
])
def test_errors_land_under_the_right_widget(error_field: str, path: str, expected: bool) -> None:
    assert defform.field_matches(error_field, path) is expected


def test_touched_paths_and_which_errors_show() -> None:
    from ui.defform import AGGS, error_shown, new_model, touched_paths

    initial = new_model()
    model = new_model()
    assert touched_paths(model, initial) == set()
    model["window.size"] = "2m"
    model[AGGS] = [*model[AGGS], {"name": "", "fn": "sum", "of": ""}]  # added, still empty
    assert touched_paths(model, initial) == {"window.size"}
    model[AGGS][1]["of"] = "score"
    touched = touched_paths(model, initial)
    assert touched == {"window.size", f"{AGGS}[1].of"}
    assert error_shown("window.size", touched) and error_shown("window", touched)
    assert error_shown(f"{AGGS}[1]", touched) and error_shown("", touched)
    assert not error_shown("name", touched) and not error_shown("source.path", touched)
