"""Who is using the UI, what they may do, and how their actions are carried out.

Sign-in is a form checked by ``Catalog.sign_in`` (scrypt hashes in the catalog; back-off and
lockout after refused attempts; every attempt audited). Served by ``ui/serve.py``, a successful
sign-in becomes a server-side web session behind a signed HttpOnly cookie (``ui/web_session.py``)
that every script run checks again, so a reload or a second tab stays signed in and sign-out,
idle and absolute expiry end it; ``st.session_state`` only caches the user for the current run.
Under ``streamlit run ui/app.py`` or ``AppTest`` (no cookie route) the sign-in lasts one
Streamlit session.

What a role may do is decided by the catalog (``Catalog.require``), not here: the page only
*hides* what a role cannot use, and every change is re-checked against the catalog at the
moment it is made, so a role taken away while someone is signed in takes effect on their next
click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import streamlit as st

from jobs.catalog import CatalogError
from jobs.catalog.ports import UICatalog
from jobs.catalog.records import Action, Role
from ui import session_routes, sso, web_session

T = TypeVar("T")

USER_KEY = "tm_user"
FLASH_KEY = "tm_flash"
NOTICE_KEY = "tm_signin_notice"

ROLE_ACTIONS: dict[str, frozenset[str]] = {
    "viewer": frozenset({"read"}),
    "editor": frozenset({"read", "edit"}),
    "operator": frozenset({"read", "edit", "operate"}),
    "admin": frozenset({"read", "edit", "operate", "admin"}),
}
"""Mirror of the catalog's role ladder, used only to hide what a role cannot use."""

ACTION_ROLE: dict[str, str] = {"read": "viewer", "edit": "editor", "operate": "operator", "admin": "admin"}


@dataclass(frozen=True)
class SessionUser:
    name: str
    role: Role


def current_user() -> SessionUser | None:
    value = st.session_state.get(USER_KEY)
    if isinstance(value, SessionUser):
        return value
    if isinstance(value, dict) and "name" in value and "role" in value:  # seeded by tests
        return SessionUser(str(value["name"]), value["role"])
    return None


def sign_in(name: str, role: Role) -> None:
    st.session_state[USER_KEY] = SessionUser(name, role)


def sign_out(cat: UICatalog | None = None) -> None:
    """End the sign-in: the web session on the server (so the cookie is worthless even if it
    was copied), then the cookie itself through the end route."""
    user = current_user()
    st.session_state.pop(USER_KEY, None)
    if not web_session.routes_served():
        return
    ended = web_session.store().end(_cookie())
    if ended is not None and cat is not None and user is not None:
        cat.record_sign_out(user.name, client_address(), "signed out")
    _redirect(session_routes.END_PATH)
    st.stop()  # not st.rerun(): a rerun clears the queued redirect before it is sent


def client_address() -> str:
    """The visitor's address for the per-client back-off (``local`` on loopback, where
    Streamlit reports none)."""
    try:
        address = st.context.ip_address
    except Exception:  # no client context (bare script run)
        address = None
    return address if isinstance(address, str) and address else "local"


def _cookie() -> str | None:
    try:
        value = st.context.cookies.get(web_session.COOKIE_NAME)
    except Exception:  # no client context (bare script run)
        return None
    return value if isinstance(value, str) else None


def _redirect(url: str) -> None:
    """Send the browser to ``url`` (a full page load). Streamlit has no public call for this;
    ``st.login`` and ``st.logout`` do it with this same message, which the front end answers
    with ``window.location.href = url``. The run must then end normally (``st.stop``), never
    with ``st.rerun``, which drops queued messages of this kind."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    msg = ForwardMsg()
    msg.auth_redirect.url = url
    ctx.enqueue(msg)


_EXPIRED_NOTICE = {
    "idle": "Your session ended after {idle} without activity. Please sign in again.",
    "expired": "Your session reached its limit of {max}. Please sign in again.",
}


def resolve_session(cat: UICatalog) -> None:
    """Served with the cookie routes: make the cookie's web session (or its absence) the
    signed-in user of this run. Called before anything else on every run."""
    if not web_session.routes_served():
        return
    store = web_session.store()
    found = store.lookup(_cookie())
    if found.reason == "ok" and found.session is not None:
        try:
            record = cat.user(found.session.user)
        except CatalogError:
            record = None
        if record is not None and not record.disabled:
            st.session_state[USER_KEY] = SessionUser(record.name, record.role)
            return
        store.end(_cookie())
        cat.record_sign_out(found.session.user, client_address(), "user disabled or removed")
    elif found.reason in _EXPIRED_NOTICE and found.session is not None:
        settings = store.settings
        st.session_state[NOTICE_KEY] = _EXPIRED_NOTICE[found.reason].format(
            idle=fmt_ms(settings.idle_ms), max=fmt_ms(settings.max_ms))
        cat.record_sign_out(found.session.user, client_address(), found.reason)
    st.session_state.pop(USER_KEY, None)


def fmt_ms(ms: int) -> str:
    """``90 s``, ``15 min``, ``2 h`` -- for the messages on the sign-in page."""
    seconds = max(1, -(-ms // 1000))
    if seconds < 120:
        return f"{seconds} s"
    minutes = -(-seconds // 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes / 60:g} h"


def can(action: Action) -> bool:
    user = current_user()
    return user is not None and action in ROLE_ACTIONS.get(user.role, frozenset())


def why_not(action: Action) -> str:
    """Tooltip for a disabled control."""
    return f"needs the {ACTION_ROLE[action]} role or higher"


def require_page(action: Action) -> SessionUser:
    """Stop rendering a page the signed-in user may not see."""
    user = current_user()
    if user is None:
        st.warning("Please sign in.")
        st.stop()
        raise AssertionError("unreachable")
    if not can(action):
        st.error(f"This page {why_not(action)}; you are signed in as {user.name} ({user.role}).")
        st.stop()
    return user


def flash(kind: str, message: str) -> None:
    """Queue a message to show after the rerun that follows an action."""
    st.session_state.setdefault(FLASH_KEY, []).append((kind, message))


def show_flashes() -> None:
    for kind, message in st.session_state.pop(FLASH_KEY, []):
        getattr(st, kind if kind in ("success", "error", "warning", "info") else "info")(message)


def perform(
    cat: UICatalog,
    action: Action,
    what: str,
    fn: Callable[[str], T],
    *,
    rerun: bool = True,
) -> T | None:
    """Carry out a user action: check the role in the catalog, call ``fn(actor)``, report.

    The actor passed to ``fn`` is the signed-in user's name, so the catalog records who did it.
    Errors are shown (the catalog's messages name the job/version/field) rather than raised.
    """
    user = current_user()
    if user is None:
        st.error("Please sign in first.")
        return None
    try:
        cat.require(user.name, action)
        result = fn(user.name)
    except CatalogError as exc:
        st.error(f"{what} failed: {exc}")
        return None
    flash("success", f"{what}: done.")
    if rerun:
        st.rerun()
    return result


_QUERY_NOTICES = {
    "stale": "The sign-in took too long to complete; please sign in again.",
    "sso_refused": "Single sign-on was refused: your account at the identity provider has no "
                   "tidemark role (or is disabled here). Ask an administrator.",
}


def sso_settings() -> sso.SsoSettings | None:
    return sso.SsoSettings.from_env()


def login_form(cat: UICatalog, hint: str | None = None) -> None:
    """The sign-in form (the only thing an anonymous visitor sees)."""
    st.title("tidemark")
    st.caption("Windowed stream aggregations on Apache Spark")
    notice = st.session_state.pop(NOTICE_KEY, None) or _QUERY_NOTICES.get(
        str(st.query_params.get("signin", "")))
    if notice:
        st.warning(notice)
    if hint:
        st.info(hint)
    settings = sso_settings()
    if settings is not None and st.button(settings.label, key="sso_sign_in"):
        st.login()
    with st.form("login", enter_to_submit=False):
        name = st.text_input("User name", key="login_name")
        password = st.text_input("Password", type="password", key="login_password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if not submitted:
        return
    if not name.strip():
        st.error("Enter a user name.")
        return
    client = client_address()
    result = cat.sign_in(name.strip(), password, client)
    if result.user is None:
        st.error(refusal_message(result.reason, result.retry_after_ms))
        return
    complete_sign_in(result.user.name, result.user.role, "password", client)


def complete_sign_in(name: str, role: Role, method: str, client: str) -> None:
    """After the credentials were checked: the web session and its cookie (a full page load
    through the start route), or, without the routes, this Streamlit session only."""
    if web_session.routes_served():
        ticket = web_session.store().issue_ticket(name, method, client)
        _redirect(f"{session_routes.START_PATH}?ticket={ticket}")
        st.info("Signed in; loading tidemark...")
        st.stop()
    sign_in(name, role)
    st.rerun()


def refusal_message(reason: str, retry_after_ms: int) -> str:
    """What a refused visitor reads: never whether the name exists."""
    wait = fmt_ms(retry_after_ms)
    if reason == "locked":
        return (f"Too many failed sign-ins: signing in with this user name or from this "
                f"address is locked for {wait}. Failed attempts are recorded in the audit "
                "trail; an administrator can help.")
    if reason == "throttled":
        return f"Too many failed sign-ins: wait {wait} before the next attempt."
    if reason == "disabled":
        return "This account is disabled; ask an administrator."
    message = "Unknown user name or wrong password."
    if retry_after_ms:
        message += f" Wait {wait} before the next attempt."
    return message


def single_sign_on(cat: UICatalog) -> None:
    """A visitor the identity provider signed in (``st.user``) and who has no web session yet:
    map the claims to a user and role, audit, and start the web session as for a password."""
    settings = sso_settings()
    if settings is None or current_user() is not None or not _idp_signed_in():
        return
    if st.session_state.get(SSO_REFUSED_KEY):
        return
    client = client_address()
    who = sso.identity(st.user.to_dict(), settings)
    problem = who.problem
    if who.name is not None and who.role is not None:
        try:
            record = cat.ensure_sso_user(who.name, who.role, "oidc")
        except CatalogError as exc:
            problem = str(exc)
        else:
            if not record.disabled:
                cat.record_sign_in(record.name, client, "oidc", "ok")
                complete_sign_in(record.name, record.role, "oidc", client)
                return
            problem = "the user is disabled"
    cat.record_sign_in(who.name or "(not a user name)", client, "oidc",
                       "no_role" if who.role is None else "disabled", detail=problem)
    st.session_state[SSO_REFUSED_KEY] = True
    if web_session.routes_served():
        _redirect(f"{session_routes.END_PATH}?signin=sso_refused")
    else:
        st.session_state[NOTICE_KEY] = _QUERY_NOTICES["sso_refused"]


SSO_REFUSED_KEY = "tm_sso_refused"


def _idp_signed_in() -> bool:
    try:
        return bool(st.user.is_logged_in)
    except Exception:  # st.user outside a Streamlit run
        return False
