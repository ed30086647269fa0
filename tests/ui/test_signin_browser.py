"""Sign-in as a browser sees it: headless Chromium against ``streamlit run ui/serve.py``.

A reload and a second tab stay signed in; sign-out (and then the back button, or the old
cookie put back) does not restore the session; idle and absolute expiry send the user back to
the sign-in form with a reason; a cookie signed with another secret or altered is refused; ten
wrong passwords lock the name and the address out, with audit rows; Streamlit's developer
toolbar is not offered.

Single sign-on runs against a real OpenID Connect provider, ``oidc-provider-mock`` (discovery,
authorization code flow, signed ID tokens), started on a free port by the test: a user whose
``groups`` claim maps to operator lands in tidemark as that operator with a tidemark session,
and one of an unmapped group is refused with a message and an audit row.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from oidc_provider_mock import User, run_server_in_thread
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from jobs.catalog import Catalog
from tests.ui.helpers import PASSWORD
from tests.ui.test_browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, free_port, settle
from ui import web_session

pytestmark = [pytest.mark.browser, pytest.mark.heavy]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "tidemark-test-secret-0123456789abcdef"

if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed (make system-deps)", allow_module_level=True)

expect.set_options(timeout=TIMEOUT_MS)  # page loads include a Streamlit rerun on 2 busy cores


@pytest.fixture
def serve(users: dict[str, str], catalog_url: str, tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start the UI (``ui/serve.py``) on a free 127.0.0.1 port with extra environment."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(port: int | None = None, **env_extra: str) -> str:
        port = port or free_port()
        env = dict(os.environ, TIDEMARK_DB_URL=catalog_url, TIDEMARK_HOME=str(tmp_path / "home"),
                   TIDEMARK_UI_SESSION_SECRET=SECRET, **env_extra)
        log_path = tmp_path / f"streamlit-{port}.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ROOT / "ui" / "serve.py"),
                 "--server.address", "127.0.0.1", "--server.port", str(port),
                 "--server.headless", "true", "--browser.gatherUsageStats", "false",
                 "--server.fileWatcherType", "none"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return url
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(log_path.read_text())
            time.sleep(0.3)

    try:
        yield start
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def new_page(context: BrowserContext) -> Page:
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return page


def sign_in(page: Page, user: str, password: str = PASSWORD) -> None:
    page.get_by_label("User name", exact=True).fill(user)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()


def expect_signed_in(page: Page, user: str) -> None:
    page.get_by_role("heading", name="Jobs").first.wait_for()
    expect(page.get_by_text(f"Signed in as {user}")).to_be_visible()


def expect_sign_in_form(page: Page) -> None:
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Jobs")).to_have_count(0)


def session_cookie(context: BrowserContext) -> dict[str, Any]:
    found = [c for c in context.cookies() if c["name"] == web_session.COOKIE_NAME]
    assert len(found) == 1, context.cookies()
    return dict(found[0])


def sign_out(page: Page, context: BrowserContext) -> None:
    """Click Sign out and wait until the browser went through the end route (the sign-in form
    can show a moment earlier, from the rerun that ended the session)."""
    page.get_by_role("button", name="Sign out").click()
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while [c for c in context.cookies() if c["name"] == web_session.COOKIE_NAME]:
        assert time.monotonic() < deadline, ("the session cookie was not deleted", page.url,
                                             context.cookies())
        page.wait_for_timeout(200)
    page.wait_for_load_state()
    expect_sign_in_form(page)


def with_value(cookie: dict[str, Any], value: str) -> Any:
    keep = ("name", "domain", "path", "httpOnly", "sameSite", "secure")
    return {**{k: cookie[k] for k in keep}, "value": value}


def test_reload_second_tab_sign_out_and_back(serve: Callable[..., str], browser: Browser,
                                             cat: Catalog) -> None:
    url = serve()
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = new_page(context)
    page.goto(url)
    sign_in(page, "operator")
    expect_signed_in(page, "operator")
    cookie = session_cookie(context)
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/" and cookie["expires"] > time.time() + 11 * 3600
    # page scripts cannot read it
    assert web_session.COOKIE_NAME not in page.evaluate("document.cookie")
    # no developer toolbar: no Deploy button, no main menu with rerun / clear cache
    expect(page.get_by_role("button", name="Deploy")).to_have_count(0)
    expect(page.locator('[data-testid="stMainMenu"]')).to_have_count(0)

    page.get_by_role("link", name="Windows").first.click()
    page.get_by_role("heading", name="Windows").first.wait_for()
    page.reload()
    page.get_by_role("heading", name="Windows").first.wait_for()
    expect(page.get_by_text("Signed in as operator")).to_be_visible()

    second = new_page(context)
    second.goto(url)
    expect_signed_in(second, "operator")
    second.close()

    settle(page)
    sign_out(page, context)
    page.go_back()
    page.wait_for_load_state()
    expect_sign_in_form(page)
    page.reload()
    expect_sign_in_form(page)
    # the old cookie, copied before sign-out, is worth nothing: the session ended on the server
    context.add_cookies([with_value(cookie, str(cookie["value"]))])
    page.goto(url)
    expect_sign_in_form(page)

    rows = cat.audit(actor="operator")
    assert [(r.action, r.outcome) for r in reversed(rows)] == [("sign_in", "ok"),
                                                               ("sign_out", "ok")]
    context.close()


def test_forged_and_foreign_cookies_are_refused(serve: Callable[..., str], browser: Browser) -> None:
    url = serve()
    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    sign_in(page, "viewer")
    expect_signed_in(page, "viewer")
    good = session_cookie(context)
    session_id, _, mac = str(good["value"]).partition(".")
    other_secret = web_session.sign(b"another secret, also 32+ characters", session_id)
    tampered = f"{session_id[:-1]}{'B' if session_id[-1] != 'B' else 'C'}.{mac}"
    for value in (other_secret, tampered, session_id):
        intruder = browser.new_context()
        intruder.add_cookies([with_value(good, value)])
        p = new_page(intruder)
        p.goto(url)
        expect_sign_in_form(p)
        intruder.close()
    # the genuine cookie in a fresh browser context is accepted (the check above can fail)
    copy = browser.new_context()
    copy.add_cookies([with_value(good, str(good["value"]))])
    p = new_page(copy)
    p.goto(url)
    expect_signed_in(p, "viewer")
    copy.close()
    context.close()


def test_disabled_user_and_changed_role_take_effect_at_the_next_click(
        serve: Callable[..., str], browser: Browser, cat: Catalog) -> None:
    url = serve()
    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    sign_in(page, "editor")
    expect_signed_in(page, "editor")
    expect(page.get_by_role("link", name="Define / edit")).to_have_count(1)
    cat.set_role("editor", "viewer", "admin")
    page.get_by_role("link", name="Windows").first.click()
    expect(page.get_by_text("Signed in as editor (viewer)")).to_be_visible()
    expect(page.get_by_role("link", name="Define / edit")).to_have_count(0)
    cat.set_disabled("editor", True, "admin")
    page.get_by_role("link", name="Jobs").first.click()
    expect_sign_in_form(page)
    page.reload()  # the cookie no longer names a session
    expect_sign_in_form(page)
    context.close()


def test_idle_expiry(serve: Callable[..., str], browser: Browser, cat: Catalog) -> None:
    url = serve(TIDEMARK_UI_SESSION_IDLE="4s")
    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    sign_in(page, "editor")
    expect_signed_in(page, "editor")
    page.wait_for_timeout(5_500)
    page.reload()
    expect_sign_in_form(page)
    expect(page.get_by_text("Your session ended after 4 s without activity")).to_be_visible()
    (row,) = cat.audit(action="sign_out", actor="editor")
    assert row.data["why"] == "idle"
    context.close()


def test_absolute_expiry_despite_activity(serve: Callable[..., str], browser: Browser) -> None:
    url = serve(TIDEMARK_UI_SESSION_MAX="30s")
    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    sign_in(page, "editor")
    expect_signed_in(page, "editor")
    signed_in_by = time.monotonic()  # the session started before this
    for title in ("Windows", "Late data", "Jobs"):  # activity keeps the idle timer fresh
        page.get_by_role("link", name=title).first.click()
        page.get_by_role("heading", name=title).first.wait_for()
        settle(page)
        expect(page.get_by_text("Signed in as editor")).to_be_visible()
    page.wait_for_timeout(max(0, int((signed_in_by + 31 - time.monotonic()) * 1000)))
    page.get_by_role("link", name="Windows").first.click()  # the next click after the limit
    expect_sign_in_form(page)
    expect(page.get_by_text("Your session reached its limit of 30 s")).to_be_visible()
    context.close()


def test_ten_wrong_passwords_lock_out(serve: Callable[..., str], browser: Browser,
                                      cat: Catalog) -> None:
    url = serve()
    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    for n in range(10):
        sign_in(page, "operator", f"guess-{n}-xyzzy")
        settle(page)
        expect(page.locator('[data-testid="stAlertContentError"]')).to_be_visible()
    expect(page.get_by_text("Too many failed sign-ins")).to_be_visible()
    expect(page.get_by_text("is locked for 15 min")).to_be_visible()
    # the right password is refused too while locked, and so is another name from this address
    for user in ("operator", "admin"):
        sign_in(page, user, PASSWORD)
        settle(page)
        expect(page.get_by_text("is locked for")).to_be_visible()
        expect(page.get_by_role("heading", name="Jobs")).to_have_count(0)
    rows = cat.audit(action="sign_in")
    operator_rows = [r for r in rows if r.actor == "operator"]
    assert len(operator_rows) == 11 and all(r.outcome == "refused" for r in operator_rows)
    assert {r.data["reason"] for r in operator_rows} <= {"wrong", "throttled", "locked"}
    assert operator_rows[0].data["reason"] == "locked"
    assert all(r.data["client"] == "local" for r in rows)
    assert "xyzzy" not in repr([(r.message, r.data) for r in rows])
    assert PASSWORD not in repr([(r.message, r.data) for r in rows])
    context.close()


ALICE = "alice@example.com"
MALLORY = "mallory@example.com"


@pytest.fixture
def provider() -> Iterator[str]:
    users = [User(sub=ALICE, claims={"email": ALICE, "groups": ["staff", "tm-operators"]}),
             User(sub=MALLORY, claims={"email": MALLORY, "groups": ["staff"]})]
    with run_server_in_thread(port=free_port(), user_claims=users) as server:
        yield f"http://localhost:{server.server_port}"


def sso_env(provider: str, port: int) -> dict[str, str]:
    return {
        "TIDEMARK_UI_OIDC_METADATA_URL": f"{provider}/.well-known/openid-configuration",
        "TIDEMARK_UI_OIDC_CLIENT_ID": "tidemark-ui",
        "TIDEMARK_UI_OIDC_CLIENT_SECRET": "client-secret-for-the-test",
        "TIDEMARK_UI_OIDC_REDIRECT_URI": f"http://127.0.0.1:{port}/oauth2callback",
        "TIDEMARK_UI_SSO_ROLES": "tm-admins=admin,tm-operators=operator,tm-viewers=viewer",
    }


def test_sso_maps_groups_to_roles(serve: Callable[..., str], browser: Browser, provider: str,
                                  cat: Catalog) -> None:
    port = free_port()
    url = serve(port=port, **sso_env(provider, port))

    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    page.get_by_role("button", name="Sign in with single sign-on").click()
    page.locator('input[name="sub"]').first.fill(ALICE)  # the provider's own sign-in form
    page.get_by_role("button", name="Authorize").click()
    expect_signed_in(page, ALICE)
    expect(page.get_by_text(f"Signed in as {ALICE} (operator)")).to_be_visible()
    session_cookie(context)  # the tidemark session took over ...
    assert not [c for c in context.cookies() if c["name"].startswith("_streamlit_user")]
    page.reload()  # ... so a reload keeps the user
    expect_signed_in(page, ALICE)
    assert cat.user(ALICE).role == "operator"
    assert cat.can(ALICE, "operate") and not cat.can(ALICE, "admin")
    (row,) = cat.audit(action="sign_in", actor=ALICE)
    assert row.outcome == "ok" and row.data["method"] == "oidc"
    (added,) = cat.audit(action="user_add", actor="sso:oidc")
    assert added.actor == "sso:oidc" and added.data["role"] == "operator"
    # SSO users have no password: the local form cannot sign them in
    assert cat.authenticate(ALICE, "") is None
    sign_out(page, context)  # ends the session like a password one
    context.close()

    context = browser.new_context()
    page = new_page(context)
    page.goto(url)
    page.get_by_role("button", name="Sign in with single sign-on").click()
    page.locator('input[name="sub"]').first.fill(MALLORY)
    page.get_by_role("button", name="Authorize").click()
    expect(page.get_by_text("Single sign-on was refused")).to_be_visible(timeout=TIMEOUT_MS)
    expect_sign_in_form(page)
    (refused,) = cat.audit(action="sign_in", actor=MALLORY)
    assert refused.outcome == "refused" and refused.data["reason"] == "no_role"
    assert "no group in claim 'groups'" in refused.message
    with pytest.raises(Exception, match="not found"):
        cat.user(MALLORY)
    context.close()
