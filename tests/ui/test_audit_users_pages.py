"""Audit (timeline, filters, readable diffs) and Users (admin only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.catalog import Catalog
from tests.ui.helpers import PASSWORD, app_as, button, landing, team_scores, texts, widget


@pytest.fixture
def edited(cat: Catalog, users: dict[str, str], tmp_path: Path) -> str:
    src = landing(tmp_path / "landing", [])
    cat.create_job(team_scores(src), "editor", note="first")
    cat.save_version("team_scores", team_scores(src, size="2m"), "editor", base_version=1,
                     note="bigger windows")
    cat.set_desired_state("team_scores", "running", "operator")
    return "team_scores"


def test_timeline_lists_every_change_with_actor(edited: str) -> None:
    at = app_as("viewer", "views/audit.py")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "actor" in d.value.columns)
    pairs = set(zip(table["actor"], table["action"], strict=True))
    assert {("editor", "create"), ("editor", "edit"), ("operator", "start")} <= pairs


def test_filter_by_actor_and_action(edited: str) -> None:
    at = app_as("viewer", "views/audit.py")
    widget(at, "text_input", "Actor").input("operator").run()
    table = next(d.value for d in at.dataframe if "actor" in d.value.columns)
    assert set(table["actor"]) == {"operator"}
    widget(at, "text_input", "Actor").input("").run()
    widget(at, "selectbox", "Action").select("edit").run()
    table = next(d.value for d in at.dataframe if "actor" in d.value.columns)
    assert list(table["action"]) == ["edit"] and list(table["version"]) == [2]


def test_edit_event_shows_the_changed_field(edited: str) -> None:
    at = app_as("viewer", "views/audit.py")
    titles = [e.label for e in at.expander]
    assert any("editor edit team_scores v2" in t for t in titles), titles
    changes = [d.value for d in at.dataframe if list(d.value.columns) == ["field", "from", "to"]]
    rows = [dict(r) for c in changes for _, r in c.iterrows()]
    assert {"field": "window.size", "from": "1m", "to": "2m"} in rows, rows


def test_compare_versions_reads_in_human_units(edited: str) -> None:
    at = app_as("viewer", "views/audit.py")
    assert "v1 → v2: needs a new store (migration)" in texts(at)
    diff = at.code[-1].value
    assert "-  size: 1m" in diff and "+  size: 2m" in diff, diff


def test_audit_empty_catalog(users: dict[str, str]) -> None:
    at = app_as("viewer", "views/audit.py")
    assert not at.exception
    assert "no jobs yet" in texts(at).lower()


def test_admin_adds_a_user_who_can_sign_in(cat: Catalog, users: dict[str, str]) -> None:
    at = app_as("admin", "views/users.py")
    widget(at, "text_input", "User name").input("carol")
    widget(at, "selectbox", "Role").select("operator")
    widget(at, "text_input", "Password").input("carol-secret-1")
    button(at, "Add user").click().run()
    assert not at.exception
    user = cat.authenticate("carol", "carol-secret-1")
    assert user is not None and user.role == "operator"
    assert cat.audit(action="user_add")[0].actor == "admin"


def test_short_password_is_refused(cat: Catalog, users: dict[str, str]) -> None:
    at = app_as("admin", "views/users.py")
    widget(at, "text_input", "User name").input("dave")
    widget(at, "text_input", "Password").input("short")
    button(at, "Add user").click().run()
    assert any("at least 8" in e.value for e in at.error)
    assert "dave" not in [u.name for u in cat.users()]


def test_admin_changes_a_role(cat: Catalog, users: dict[str, str]) -> None:
    at = app_as("admin", "views/users.py")
    widget(at, "selectbox", "User").select("viewer").run()
    widget(at, "selectbox", "New role").select("editor").run()
    button(at, "Set role").click().run()
    assert cat.user("viewer").role == "editor"
    assert cat.authenticate("viewer", PASSWORD) is not None


@pytest.mark.parametrize("role", ["viewer", "editor", "operator"])
def test_users_page_is_admin_only(users: dict[str, str], role: str) -> None:
    at = app_as(role)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("views/users.py")


def test_create_event_shows_the_definition_created(edited: str) -> None:
    at = app_as("viewer", "views/audit.py")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "actor" in d.value.columns)
    create = table[table["action"] == "create"].iloc[0]
    assert create["changes"] == "new definition"
    assert "None of these events changed a definition." not in texts(at)
    [expander] = [e for e in at.expander if "editor created team_scores v1" in e.label]
    [code] = [c.value for c in expander.code]
    assert "name: team_scores" in code and "size: 1m" in code and "size: 2m" not in code
