"""Web sessions behind the signed cookie, and the sign-in throttle, without a browser.

The session store and the throttle take an injected clock, so idle and absolute expiry,
ticket lifetime, back-off and lockout are checked at exact instants. The catalog tests use a
real SQLite catalog (the audit trail is where refusals are counted).
"""

from __future__ import annotations

import pytest

from jobs.catalog import Catalog
from jobs.catalog.auth import SignInPolicy, throttle
from jobs.timeutil import ManualClock
from tests.ui.helpers import PASSWORD
from ui import web_session
from ui.web_session import SessionConfigError, SessionSettings, SessionStore

SECRET = b"s" * 32
MIN = 60_000


def make_store(clock: ManualClock, *, idle: int = 10 * MIN, max_ms: int = 60 * MIN) -> SessionStore:
    return SessionStore(SessionSettings(SECRET, idle, max_ms, False), clock)


def signed_in(store: SessionStore, user: str = "operator") -> str:
    cookie = store.redeem(store.issue_ticket(user, "password", "local"))
    assert cookie is not None
    return cookie


def test_a_ticket_gives_one_session_and_only_once() -> None:
    clock = ManualClock(1_000)
    store = make_store(clock)
    ticket = store.issue_ticket("operator", "password", "local")
    cookie = store.redeem(ticket)
    assert cookie is not None
    found = store.lookup(cookie)
    assert found.reason == "ok" and found.session is not None and found.session.user == "operator"
    assert store.redeem(ticket) is None  # used
    late = store.issue_ticket("operator", "password", "local")
    clock.now += web_session.TICKET_TTL_MS
    assert store.redeem(late) is None  # stale


def test_forged_and_foreign_cookies_are_refused() -> None:
    store = make_store(ManualClock(0))
    cookie = signed_in(store)
    session_id, _, mac = cookie.partition(".")
    assert store.lookup(web_session.sign(b"another secret of 32 characters!", session_id)).reason == "forged"
    assert store.lookup(session_id + "." + mac[:-1] + ("A" if mac[-1] != "A" else "B")).reason == "forged"
    assert store.lookup(session_id).reason == "forged"
    # a well-signed id of no session (e.g. before a restart with the same secret)
    assert store.lookup(web_session.sign(SECRET, "no-such-session")).reason == "unknown"
    assert store.lookup(None).reason == "missing"
    assert store.lookup(cookie).reason == "ok"


def test_idle_expiry_is_refreshed_by_use() -> None:
    clock = ManualClock(0)
    store = make_store(clock, idle=10 * MIN)
    cookie = signed_in(store)
    clock.now += 9 * MIN
    assert store.lookup(cookie).reason == "ok"
    clock.now += 9 * MIN  # 18 min after sign-in, 9 after the last use
    assert store.lookup(cookie).reason == "ok"
    clock.now += 10 * MIN
    assert store.lookup(cookie).reason == "idle"
    assert store.lookup(cookie).reason == "unknown"  # gone for good


def test_absolute_expiry_despite_activity() -> None:
    clock = ManualClock(0)
    store = make_store(clock, idle=10 * MIN, max_ms=30 * MIN)
    cookie = signed_in(store)
    for _ in range(5):
        clock.now += 5 * MIN
        assert store.lookup(cookie).reason == "ok"
    clock.now += 5 * MIN
    assert store.lookup(cookie).reason == "expired"


def test_ending_a_session_refuses_its_cookie_and_spares_others() -> None:
    store = make_store(ManualClock(0))
    first, second, other = signed_in(store), signed_in(store), signed_in(store, "viewer")
    ended = store.end(first)
    assert ended is not None and ended.user == "operator"
    assert store.lookup(first).reason == "unknown"
    assert store.lookup(second).reason == "ok"
    assert store.end_user("operator") == 1
    assert store.lookup(second).reason == "unknown"
    assert store.lookup(other).reason == "ok"


def test_settings_from_the_environment() -> None:
    s = SessionSettings.from_env({"TIDEMARK_UI_SESSION_SECRET": "x" * 40,
                                  "TIDEMARK_UI_SESSION_IDLE": "30m",
                                  "TIDEMARK_UI_SESSION_MAX": "8h"})
    assert (s.secret, s.idle_ms, s.max_ms, s.secure_cookie) == (b"x" * 40, 30 * MIN, 480 * MIN, False)
    defaults = SessionSettings.from_env({})
    assert (defaults.idle_ms, defaults.max_ms) == (120 * MIN, 720 * MIN)
    assert defaults.secret != SessionSettings.from_env({}).secret  # random per start
    with pytest.raises(SessionConfigError, match="TIDEMARK_UI_SESSION_SECRET"):
        SessionSettings.from_env({"TIDEMARK_UI_SESSION_SECRET": "short"})
    with pytest.raises(SessionConfigError, match="TIDEMARK_UI_SESSION_IDLE"):
        SessionSettings.from_env({"TIDEMARK_UI_SESSION_IDLE": "soon"})
    with pytest.raises(SessionConfigError, match="TIDEMARK_UI_SESSION_MAX"):
        SessionSettings.from_env({"TIDEMARK_UI_SESSION_MAX": "0"})


POLICY = SignInPolicy(free_failures=3, base_delay_ms=1_000, max_delay_ms=8_000,
                      lockout_failures=6, lockout_ms=10 * MIN, window_ms=15 * MIN)


def test_throttle_backs_off_then_locks() -> None:
    assert throttle([0, 1], 2, POLICY) is None  # two typos cost nothing
    wait = throttle([0, 1, 2], 2, POLICY)
    assert wait is not None and not wait.locked and wait.until_ms == 1_002
    assert throttle([0, 1, 2], 1_002, POLICY) is None
    wait = throttle([0, 1, 2, 3, 4], 4, POLICY)  # 2 s doubled once more: 4 s
    assert wait is not None and wait.until_ms == 4 + 4_000
    locked = throttle(list(range(6)), 5, POLICY)
    assert locked is not None and locked.locked and locked.until_ms == 5 + 10 * MIN
    assert throttle(list(range(6)), 5 + 10 * MIN, POLICY) is None
    # refusals older than the window are forgotten
    assert throttle(list(range(6)), 20 * MIN, POLICY) is None


def test_catalog_sign_in_backs_off_locks_and_audits(catalog_url: str, users: dict[str, str]) -> None:
    clock = ManualClock(1_800_000_000_000)
    with Catalog(catalog_url, clock=clock) as cat:
        assert cat.sign_in("operator", "wrong one", "10.0.0.7", policy=POLICY).reason == "wrong"
        assert cat.sign_in("operator", "wrong two", "10.0.0.7", policy=POLICY).reason == "wrong"
        third = cat.sign_in("operator", "wrong three", "10.0.0.7", policy=POLICY)
        assert (third.reason, third.retry_after_ms) == ("wrong", 1_000)
        # the right password during the back-off is refused without being checked
        early = cat.sign_in("operator", PASSWORD, "10.0.0.7", policy=POLICY)
        assert (early.user, early.reason) == (None, "throttled")
        clock.now += 10_000
        ok = cat.sign_in("operator", PASSWORD, "10.0.0.7", policy=POLICY)
        assert ok.user is not None and ok.user.role == "operator"
        # success cleared the name's count, not the address's: 4 refusals from 10.0.0.7 so
        # far, and the 6th locks the address whatever the name
        clock.now += 60_000
        assert cat.sign_in("viewer", "guess", "10.0.0.7", policy=POLICY).reason == "wrong"
        clock.now += 60_000
        locked = cat.sign_in("editor", "guess", "10.0.0.7", policy=POLICY)
        assert locked.reason == "locked" and locked.retry_after_ms == 10 * MIN
        assert cat.sign_in("editor", PASSWORD, "10.0.0.7", policy=POLICY).reason == "locked"
        # another address is not locked
        assert cat.sign_in("editor", PASSWORD, "10.0.0.8", policy=POLICY).reason == "ok"
        cat.set_disabled("viewer", True, "admin")
        assert cat.sign_in("viewer", PASSWORD, "10.0.0.9", policy=POLICY).reason == "disabled"

        rows = cat.audit(action="sign_in", limit=100)
        assert [r.outcome for r in rows].count("ok") == 2
        assert [r.outcome for r in rows].count("refused") == 8
        operator_rows = [r for r in rows if r.actor == "operator"]
        assert [r.data["reason"] for r in reversed(operator_rows)] == [
            "wrong", "wrong", "wrong", "throttled", "ok"]
        assert all(r.data["client"] == "10.0.0.7" for r in operator_rows)
        text = repr([(r.message, r.data) for r in rows])
        assert PASSWORD not in text and "wrong one" not in text and "guess" not in text


def test_text_that_is_not_a_user_name_is_not_stored(cat: Catalog, users: dict[str, str]) -> None:
    assert cat.sign_in("<script>alert(1)</script>", "x", "local").reason == "wrong"
    (row,) = cat.audit(action="sign_in")
    assert row.actor == "(not a user name)" and "script" not in repr((row.message, row.data))
