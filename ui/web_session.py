"""Server-side UI sessions behind a signed cookie (pure: no Streamlit, no web framework).

A Streamlit session lives as long as one WebSocket, so a reload or a second tab starts a new,
anonymous one. Signing in therefore also creates a *web session* here, in the UI server process,
and the browser keeps only its id in an HttpOnly, SameSite=Strict cookie signed with
HMAC-SHA256. Every script run checks the cookie's signature and then the session: a cookie
signed with another secret or altered is refused, an ended session (sign-out) is refused even
with a valid signature, and a session expires after ``idle_ms`` without a click or
``max_ms`` after sign-in, whichever comes first.

The cookie is set by an HTTP response (``ui/session_routes.py``), never by the page script: a
script run only talks over the WebSocket. The page script hands the browser a one-time
*ticket* (random, 60 s, single use) by redirecting it to that route, which swaps the ticket
for a session and the cookie.

The secret is ``TIDEMARK_UI_SESSION_SECRET`` (32+ characters); without it each server start
draws a random one, so a restart (or a new secret) ends every session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from jobs.config import Settings
from jobs.definition.durations import parse_duration
from jobs.definition.errors import DefinitionError
from jobs.timeutil import Clock, SystemClock

COOKIE_NAME = "tidemark_session"
TICKET_TTL_MS = 60_000
_DAY_MS = 86_400_000
MIN_SECRET_LENGTH = 32
DEFAULT_IDLE = "2h"
DEFAULT_MAX = "12h"

Reason = Literal["ok", "missing", "forged", "unknown", "idle", "expired"]
"""Why a cookie did or did not give a user: ``forged`` (bad signature or malformed),
``unknown`` (signed by us but no such session: signed out, or the server restarted)."""


class SessionConfigError(ValueError):
    """A session setting in the environment is unusable (the message names the variable)."""


@dataclass(frozen=True)
class SessionSettings:
    secret: bytes
    idle_ms: int
    max_ms: int
    secure_cookie: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SessionSettings:
        """``TIDEMARK_UI_SESSION_SECRET``, ``TIDEMARK_UI_SESSION_IDLE`` (default 2h),
        ``TIDEMARK_UI_SESSION_MAX`` (default 12h), ``TIDEMARK_UI_SECURE_COOKIE`` (``1`` behind
        HTTPS: the cookie is then only sent over HTTPS)."""
        e = Settings.from_env().values if env is None else env
        raw = e.get("TIDEMARK_UI_SESSION_SECRET", "")
        if raw and len(raw) < MIN_SECRET_LENGTH:
            raise SessionConfigError(
                f"TIDEMARK_UI_SESSION_SECRET: must be at least {MIN_SECRET_LENGTH} characters"
            )
        secret = raw.encode() if raw else secrets.token_bytes(32)
        idle = _duration(e, "TIDEMARK_UI_SESSION_IDLE", DEFAULT_IDLE)
        max_ms = _duration(e, "TIDEMARK_UI_SESSION_MAX", DEFAULT_MAX)
        secure = e.get("TIDEMARK_UI_SECURE_COOKIE", "").lower() in ("1", "true", "yes")
        return cls(secret, idle, max_ms, secure)


def _duration(env: Mapping[str, str], name: str, default: str) -> int:
    try:
        value = parse_duration(env.get(name) or default, name)
    except DefinitionError as exc:
        raise SessionConfigError(f"{name}: {exc}") from exc
    if value <= 0:
        raise SessionConfigError(f"{name}: must be longer than 0")
    return value


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def derived_key(secret: bytes, purpose: str) -> str:
    """A key for another purpose (hex), so one configured secret serves several signers
    without any of them learning the others' keys."""
    return hmac.new(secret, f"tidemark|{purpose}".encode(), hashlib.sha256).hexdigest()


def sign(secret: bytes, session_id: str) -> str:
    """The cookie value for ``session_id``: ``<id>.<HMAC-SHA256 over name and id>``."""
    mac = hmac.new(secret, f"{COOKIE_NAME}|{session_id}".encode(), hashlib.sha256).digest()
    return f"{session_id}.{_b64(mac)}"


def verify(secret: bytes, value: str) -> str | None:
    """The session id in a cookie value if its signature is ours, else None."""
    session_id, dot, _ = value.partition(".")
    if not dot or not session_id:
        return None
    return session_id if hmac.compare_digest(sign(secret, session_id), value) else None


@dataclass
class WebSession:
    id: str
    user: str
    method: str
    client: str
    created_ms: int
    last_seen_ms: int


@dataclass(frozen=True)
class Lookup:
    reason: Reason
    session: WebSession | None = None


class SessionStore:
    """Tickets and sessions of one UI server process (thread-safe: the web routes run on the
    server's event loop, page scripts on their own threads)."""

    def __init__(self, settings: SessionSettings, clock: Clock | None = None) -> None:
        self.settings = settings
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._tickets: dict[str, tuple[WebSession, int]] = {}
        self._sessions: dict[str, WebSession] = {}

    def issue_ticket(self, user: str, method: str, client: str) -> str:
        """A one-time ticket that :meth:`redeem` turns into a session for ``user``."""
        now = self._clock.now_ms()
        ticket = secrets.token_urlsafe(32)
        pending = WebSession(secrets.token_urlsafe(32), user, method, client, now, now)
        with self._lock:
            self._drop_stale(now)
            self._tickets[ticket] = (pending, now + TICKET_TTL_MS)
        return ticket

    def redeem(self, ticket: str) -> str | None:
        """The signed cookie value of a new session, or None for an unknown, used or stale
        ticket."""
        now = self._clock.now_ms()
        with self._lock:
            entry = self._tickets.pop(ticket, None)
            if entry is None or entry[1] <= now:
                return None
            session = entry[0]
            session.created_ms = session.last_seen_ms = now
            self._sessions[session.id] = session
        return sign(self.settings.secret, session.id)

    def lookup(self, cookie: str | None, *, touch: bool = True) -> Lookup:
        """The live session a cookie value names, refreshing its idle timer when ``touch``."""
        if not cookie:
            return Lookup("missing")
        session_id = verify(self.settings.secret, cookie)
        if session_id is None:
            return Lookup("forged")
        now = self._clock.now_ms()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return Lookup("unknown")
            if now - session.created_ms >= self.settings.max_ms:
                del self._sessions[session_id]
                return Lookup("expired", session)
            if now - session.last_seen_ms >= self.settings.idle_ms:
                del self._sessions[session_id]
                return Lookup("idle", session)
            if touch:
                session.last_seen_ms = now
            return Lookup("ok", session)

    def end(self, cookie: str | None) -> WebSession | None:
        """End the session a (validly signed) cookie names; the ended session, if any."""
        session_id = verify(self.settings.secret, cookie or "")
        if session_id is None:
            return None
        with self._lock:
            return self._sessions.pop(session_id, None)

    def end_user(self, user: str) -> int:
        """End every session of ``user`` (e.g. disabled); how many there were."""
        with self._lock:
            ids = [s.id for s in self._sessions.values() if s.user == user]
            for session_id in ids:
                del self._sessions[session_id]
        return len(ids)

    def _drop_stale(self, now: int) -> None:
        for ticket in [t for t, (_, until) in self._tickets.items() if until <= now]:
            del self._tickets[ticket]
        # sessions expired for a day: nobody is going to come back and be told why
        s = self.settings
        for sid in [i for i, x in self._sessions.items()
                    if now - x.created_ms >= s.max_ms + _DAY_MS
                    or now - x.last_seen_ms >= s.idle_ms + _DAY_MS]:
            del self._sessions[sid]


_store: SessionStore | None = None
_store_lock = threading.Lock()
_routes_served = False


def store() -> SessionStore:
    """The process's session store, built from the environment on first use."""
    global _store
    with _store_lock:
        if _store is None:
            _store = SessionStore(SessionSettings.from_env())
        return _store


def mark_routes_served() -> None:
    """Called by the server launcher (``ui/serve.py``): the cookie routes exist in this process,
    so sign-in may hand the browser over to them."""
    global _routes_served
    _routes_served = True


def routes_served() -> bool:
    """False under ``streamlit run ui/app.py`` or ``AppTest``: there sign-in lasts one
    Streamlit session, as no route can set a cookie."""
    return _routes_served
