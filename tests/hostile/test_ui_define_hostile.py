"""The Define page under hostile input (the real app through ``streamlit.testing``): every case
of the hostile-input attack gives an error the user can read, never a traceback."""

from __future__ import annotations

import pytest

from tests.ui.conftest import cat, catalog_url, template_db, users  # noqa: F401  (fixtures)
from tests.ui.helpers import app_as, button, texts, widget

DEFINE = "views/define.py"

PASTED = {
    "yaml maps nested 500 deep": ("name: x\nwindow: " + "{a: " * 500 + "1" + "}" * 500, "16 deep"),
    "json arrays nested 50000 deep": ('{"name": "x", "window": ' + "[" * 50_000 + "]" * 50_000 + "}",
                                      "16 deep"),
    "a 5000-digit duration": ("name: x\nwindow: {type: tumbling, size: " + "9" * 5000 + "}",
                              "window.size"),
}


@pytest.mark.parametrize("case", sorted(PASTED))
def test_a_hostile_pasted_definition_is_refused_with_a_message(
        users: dict[str, str], case: str) -> None:  # noqa: F811
    text, expected = PASTED[case]
    at = app_as("editor", DEFINE)
    widget(at, "text_area", "Paste a YAML or JSON definition").input(text).run()
    button(at, "Load into form").click().run()
    assert not at.exception, at.exception
    assert any(expected in e.value for e in at.error), [e.value for e in at.error]


FIELDS = [
    ("Key (SQL expression)", "(" * 49 + "team" + ")" * 49, "16 deep"),
    ("Key (SQL expression)", "team = 'a'" + " AND team = 'a'" * 8000, "4096"),
    ("Key (SQL expression)", "0e", "as a number"),
    ("Size", "99999999999999999999d", "too large"),
    ("Schema (Spark DDL)", "a " + "STRUCT<b: " * 1000 + "INT" + ">" * 1000, "16 deep"),
]


@pytest.mark.parametrize(("label", "value", "expected"), FIELDS)
def test_a_hostile_field_value_shows_a_field_error(
        users: dict[str, str], label: str, value: str, expected: str) -> None:  # noqa: F811
    at = app_as("editor", DEFINE)
    widget(at, "text_input", label).input(value).run()
    assert not at.exception, at.exception
    assert expected in texts(at)
    assert button(at, "Create job").disabled
