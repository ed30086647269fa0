"""The cookie routes over HTTP (Starlette's test client, no browser): what ``Set-Cookie`` says,
single-use tickets, no open redirect, and sign-out clearing the cookies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ui import session_routes, web_session
from ui.web_session import SessionSettings, SessionStore

SECRET = b"k" * 32


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> SessionStore:
    s = SessionStore(SessionSettings(SECRET, 3_600_000, 43_200_000, False))
    monkeypatch.setattr(web_session, "_store", s)
    return s


@pytest.fixture
def client(store: SessionStore) -> Iterator[TestClient]:
    with TestClient(Starlette(routes=session_routes.routes()), follow_redirects=False) as c:
        yield c


def test_start_sets_a_signed_httponly_strict_cookie_once(store: SessionStore,
                                                         client: TestClient) -> None:
    ticket = store.issue_ticket("operator", "password", "local")
    r = client.get(session_routes.START_PATH, params={"ticket": ticket, "next": "/windows"})
    assert r.status_code == 303 and r.headers["location"] == "/windows"
    assert r.headers["cache-control"] == "no-store"
    header = r.headers["set-cookie"]
    attrs = {a.strip().split("=")[0].lower() for a in header.split(";")[1:]}
    assert {"httponly", "samesite", "path", "max-age"} <= attrs and "secure" not in attrs
    assert "samesite=strict" in header.lower() and f"Max-Age={43_200 + 60}" in header
    value = header.split(";")[0].split("=", 1)[1]
    found = store.lookup(value)
    assert found.reason == "ok" and found.session is not None and found.session.user == "operator"
    again = client.get(session_routes.START_PATH, params={"ticket": ticket})
    assert again.headers["location"] == "/?signin=stale" and "set-cookie" not in again.headers


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "evil", "/\\evil"])
def test_no_open_redirect(store: SessionStore, client: TestClient, target: str) -> None:
    ticket = store.issue_ticket("viewer", "password", "local")
    r = client.get(session_routes.START_PATH, params={"ticket": ticket, "next": target})
    assert r.headers["location"] == "/"


def test_secure_flag_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    s = SessionStore(SessionSettings(SECRET, 60_000, 120_000, True))
    monkeypatch.setattr(web_session, "_store", s)
    with TestClient(Starlette(routes=session_routes.routes()), follow_redirects=False) as c:
        r = c.get(session_routes.START_PATH, params={"ticket": s.issue_ticket("a", "password", "x")})
    assert "secure" in r.headers["set-cookie"].lower()


def test_end_clears_our_cookie_and_streamlits(store: SessionStore, client: TestClient) -> None:
    ticket = store.issue_ticket("operator", "oidc", "local")
    cookie = client.get(session_routes.START_PATH, params={"ticket": ticket}
                        ).headers["set-cookie"].split(";")[0].split("=", 1)[1]
    client.cookies.set(web_session.COOKIE_NAME, cookie)
    client.cookies.set("_streamlit_user", "whatever")
    r = client.get(session_routes.END_PATH, params={"signin": "sso_refused"})
    assert r.headers["location"] == "/?signin=sso_refused"
    cleared = r.headers.get_list("set-cookie")
    assert any(c.startswith(f"{web_session.COOKIE_NAME}=") and "Max-Age=0" in c for c in cleared)
    assert any(c.startswith("_streamlit_user=") and "Max-Age=0" in c for c in cleared)
    assert store.lookup(cookie).reason == "unknown"
    odd = client.get(session_routes.END_PATH, params={"signin": "<b>hi</b>"})
    assert odd.headers["location"] == "/"
