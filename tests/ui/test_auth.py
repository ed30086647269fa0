"""Sign-in, the first-run admin, and the role ladder the UI hides controls by."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from streamlit.testing.v1 import AppTest

from jobs.catalog import Action, Catalog, CatalogError
from tests.ui.helpers import APP, PASSWORD, ROLES, button, texts, widget
from ui import auth, services


def test_anonymous_visitor_sees_only_the_sign_in_form(users: dict[str, str]) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert not any(t.value == "Jobs" for t in at.title)


def test_wrong_password_is_refused_and_right_one_signs_in(users: dict[str, str]) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    widget(at, "text_input", "User name").input("operator")
    widget(at, "text_input", "Password").input("not the password")
    button(at, "Sign in").click().run()
    assert any("wrong password" in e.value for e in at.error)
    assert "tm_user" not in at.session_state

    widget(at, "text_input", "User name").input("operator")
    widget(at, "text_input", "Password").input(PASSWORD)
    button(at, "Sign in").click().run()
    assert not at.exception
    assert any(t.value == "Jobs" for t in at.title)
    assert "Signed in as **operator** (operator)" in texts(at)


def test_sign_out(users: dict[str, str]) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["tm_user"] = {"name": "viewer", "role": "viewer"}
    at.run()
    button(at, "Sign out").click().run()
    assert [b.label for b in at.button] == ["Sign in"]


def test_first_run_admin_only_on_loopback(cat: Catalog, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDEMARK_ADMIN_PASSWORD", raising=False)
    assert services.ensure_first_run_admin(cat, tmp_path, "0.0.0.0") is None
    assert cat.users() == []
    path = services.ensure_first_run_admin(cat, tmp_path, "127.0.0.1")
    assert path is not None and oct(path.stat().st_mode & 0o777) == "0o600"
    password = path.read_text().split("password: ")[1].strip()
    user = cat.authenticate("admin", password)
    assert user is not None and user.role == "admin"
    # a second start does not create another admin nor rewrite the file
    before = path.read_text()
    assert services.ensure_first_run_admin(cat, tmp_path, "127.0.0.1") is None
    assert path.read_text() == before


def test_first_run_hint_on_the_sign_in_page(catalog_url: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedded catalog (no TIDEMARK_DB_URL) served on 127.0.0.1: the admin exists and the
    sign-in page says where its password is."""
    home = tmp_path / "home"
    monkeypatch.setenv("TIDEMARK_HOME", str(home))
    monkeypatch.delenv("TIDEMARK_DB_URL")
    monkeypatch.setenv("TIDEMARK_ADMIN_PASSWORD", "first-run-secret")
    home.mkdir()
    # the embedded default lives at <home>/catalog.db; start it from the migrated template
    Path(catalog_url.removeprefix("sqlite:///")).rename(home / "catalog.db")
    at = AppTest.from_file(APP, default_timeout=60)
    from streamlit import config

    old = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    try:
        at.run()
    finally:
        config.set_option("server.address", old)
    assert "first-run-admin.txt" in texts(at)
    assert "first-run-secret" not in texts(at)
    with Catalog(f"sqlite:///{home / 'catalog.db'}") as c:
        assert c.authenticate("admin", "first-run-secret") is not None


@pytest.mark.parametrize("role", ROLES)
def test_ui_role_ladder_matches_the_catalog(cat: Catalog, users: dict[str, str], role: str) -> None:
    """The UI hides controls by a mirror of the catalog's rules; they must agree."""
    for action in ("read", "edit", "operate", "admin"):
        try:
            cat.require(role, cast(Action, action))
            allowed = True
        except CatalogError:
            allowed = False
        assert (action in auth.ROLE_ACTIONS[role]) == allowed, (role, action)


def test_out_of_date_configured_catalog_is_reported_not_migrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configured catalog whose schema is not at head (here: empty) is not migrated by the
    UI; the page says what to do."""
    monkeypatch.setenv("TIDEMARK_DB_URL", f"sqlite:///{tmp_path / 'empty.db'}")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert any("tidemark db upgrade" in e.value for e in at.error), [e.value for e in at.error]
