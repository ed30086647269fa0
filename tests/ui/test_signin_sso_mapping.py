"""Single sign-on without a browser: settings, the claim-to-role mapping, the catalog users
behind identities, and the page under AppTest with ``st.user`` seeded as Streamlit documents.
(The full ``st.login`` round trip against a real provider is in ``test_signin_browser.py``.)"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from jobs.catalog import Catalog, CatalogError
from tests.ui.helpers import APP, PASSWORD, button, texts
from ui.sso import SsoConfigError, SsoSettings, identity, parse_role_map

ENV = {
    "TIDEMARK_UI_OIDC_METADATA_URL": "http://127.0.0.1:9/.well-known/openid-configuration",
    "TIDEMARK_UI_OIDC_CLIENT_ID": "tidemark-ui",
    "TIDEMARK_UI_OIDC_CLIENT_SECRET": "not-a-real-secret",
    "TIDEMARK_UI_OIDC_REDIRECT_URI": "http://127.0.0.1:8501/oauth2callback",
    "TIDEMARK_UI_SSO_ROLES": "tm-admins=admin, tm-ops=operator,tm-view=viewer",
}


def settings(**extra: str) -> SsoSettings:
    found = SsoSettings.from_env({**ENV, **extra})
    assert found is not None
    return found


def test_settings_and_role_map() -> None:
    assert SsoSettings.from_env({}) is None  # off unless configured
    s = settings()
    assert s.roles == {"tm-admins": "admin", "tm-ops": "operator", "tm-view": "viewer"}
    assert (s.role_claim, s.name_claim) == ("groups", "email")
    auth = s.streamlit_auth_secrets("k")["auth"]
    assert auth["server_metadata_url"] == ENV["TIDEMARK_UI_OIDC_METADATA_URL"]
    assert auth["cookie_secret"] == "k" and auth["redirect_uri"].endswith("/oauth2callback")
    with pytest.raises(SsoConfigError, match="TIDEMARK_UI_OIDC_CLIENT_SECRET"):
        SsoSettings.from_env({k: v for k, v in ENV.items() if k != "TIDEMARK_UI_OIDC_CLIENT_SECRET"})
    with pytest.raises(SsoConfigError, match="TIDEMARK_UI_SSO_ROLES: 'ops=root'"):
        parse_role_map("ops=root")
    with pytest.raises(SsoConfigError, match="TIDEMARK_UI_SSO_ROLES"):
        parse_role_map(" , ")


def test_identity_takes_the_highest_mapped_role() -> None:
    s = settings()
    who = identity({"email": "ann@example.com", "groups": ["staff", "tm-view", "tm-ops"]}, s)
    assert (who.name, who.role) == ("ann@example.com", "operator")
    assert identity({"email": "ann@example.com", "groups": "tm-admins"}, s).role == "admin"
    none = identity({"email": "ann@example.com", "groups": ["staff"]}, s)
    assert none.role is None and "no group in claim 'groups'" in none.problem
    assert identity({"email": "ann@example.com"}, s).role is None
    bad = identity({"email": "not a name!", "groups": ["tm-ops"]}, s)
    assert bad.name is None and "claim 'email'" in bad.problem
    custom = settings(TIDEMARK_UI_SSO_ROLE_CLAIM="roles", TIDEMARK_UI_SSO_NAME_CLAIM="preferred_username")
    who = identity({"preferred_username": "ann", "roles": ["tm-admins"], "groups": []}, custom)
    assert (who.name, who.role) == ("ann", "admin")


def test_sso_users_follow_the_provider_and_never_take_a_local_account(
        cat: Catalog, users: dict[str, str]) -> None:
    ann = cat.ensure_sso_user("ann@example.com", "viewer", "oidc")
    assert ann.role == "viewer"
    assert cat.authenticate("ann@example.com", "") is None
    assert cat.ensure_sso_user("ann@example.com", "operator", "oidc").role == "operator"
    changes = cat.audit(actor="sso:oidc")
    assert [c.action for c in reversed(changes)] == ["user_add", "user_update"]
    with pytest.raises(CatalogError, match="'operator' is a local account") as err:
        cat.ensure_sso_user("operator", "admin", "oidc")
    assert err.value.code == "state"
    assert cat.user("operator").role == "operator"
    # a disabled SSO user stays disabled and keeps its role
    cat.set_disabled("ann@example.com", True, "admin")
    again = cat.ensure_sso_user("ann@example.com", "admin", "oidc")
    assert again.disabled and again.role == "operator"


def sso_app(monkeypatch: pytest.MonkeyPatch, claims: dict[str, object]) -> AppTest:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = claims
    return at.run()


def test_page_signs_in_a_mapped_identity(monkeypatch: pytest.MonkeyPatch, cat: Catalog,
                                         users: dict[str, str]) -> None:
    at = sso_app(monkeypatch, {"is_logged_in": True, "email": "ann@example.com",
                               "groups": ["tm-ops"]})
    assert not at.exception
    assert "Signed in as **ann@example.com** (operator)" in texts(at)
    (row,) = cat.audit(action="sign_in")
    assert row.actor == "ann@example.com" and row.data["method"] == "oidc"


def test_page_refuses_an_unmapped_identity(monkeypatch: pytest.MonkeyPatch, cat: Catalog,
                                           users: dict[str, str]) -> None:
    at = sso_app(monkeypatch, {"is_logged_in": True, "email": "eve@example.com",
                               "groups": ["staff"]})
    assert not at.exception
    assert "Single sign-on was refused" in texts(at)
    assert [b.label for b in at.button] == ["Sign in with single sign-on", "Sign in"]
    (row,) = cat.audit(action="sign_in")
    assert (row.actor, row.outcome, row.data["reason"]) == ("eve@example.com", "refused", "no_role")
    at.run()  # refused once, not on every rerun
    assert len(cat.audit(action="sign_in")) == 1


def test_sign_in_page_messages(cat: Catalog, users: dict[str, str]) -> None:
    """Wrong password, back-off and lockout as the page words them (no browser)."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    messages = []
    for n in range(10):
        at.text_input(key="login_name").input("editor")
        at.text_input(key="login_password").input(f"guess {n}")
        button(at, "Sign in").click().run()
        messages.append(at.error[0].value)
    assert messages[0] == "Unknown user name or wrong password."
    assert any("Too many failed sign-ins" in m or "Wait" in m for m in messages[2:9])
    assert "is locked for 15 min" in messages[-1]
    at.text_input(key="login_name").input("editor")
    at.text_input(key="login_password").input(PASSWORD)
    button(at, "Sign in").click().run()
    assert "is locked for" in at.error[0].value
    assert "Signed in as" not in texts(at)
