"""Who is using the UI, what they may do, and how their actions are carried out.

Login is a plain form checked by ``Catalog.authenticate`` (scrypt hashes in the catalog); the
signed-in user lives in ``st.session_state`` for the browser session. What a role may do is
decided by the catalog (``Catalog.require``), not here: the page only *hides* what a role cannot
use, and every change is re-checked against the catalog at the moment it is made, so a role
taken away while someone is signed in takes effect on their next click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import streamlit as st

from jobs.catalog import Catalog, CatalogError
from jobs.catalog.records import Action, Role

T = TypeVar("T")

USER_KEY = "tm_user"
FLASH_KEY = "tm_flash"

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


def sign_out() -> None:
    st.session_state.pop(USER_KEY, None)


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
    cat: Catalog,
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


def login_form(cat: Catalog, hint: str | None = None) -> None:
    """The sign-in form (the only thing an anonymous visitor sees)."""
    st.title("tidemark")
    st.caption("Windowed stream aggregations on Apache Spark")
    if hint:
        st.info(hint)
    with st.form("login", enter_to_submit=False):
        name = st.text_input("User name", key="login_name")
        password = st.text_input("Password", type="password", key="login_password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        user = cat.authenticate(name.strip(), password) if name.strip() else None
        if user is None or user.disabled:
            st.error("Unknown user name or wrong password.")
            return
        sign_in(user.name, user.role)
        st.rerun()
