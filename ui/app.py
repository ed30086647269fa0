"""tidemark UI page script, served by ``streamlit run ui/serve.py --server.address 127.0.0.1``.

Signs the visitor in (or recognises their session cookie, ``ui/auth.py``), then builds the navigation from the pages their role may use (a viewer
never sees Define / edit or Users), and offers the auto-refresh setting that the live pages'
fragments follow.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run ui/app.py` puts only ui/ on the path
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from jobs.catalog import CatalogError, User  # noqa: E402
from jobs.logsetup import configure_logging  # noqa: E402
from ui import auth, common, services  # noqa: E402

configure_logging("ui")  # idempotent: each rerun replaces tidemark's one handler
st.set_page_config(page_title="tidemark", page_icon=":material/waves:", layout="wide")

try:
    cat = services.catalog()
except CatalogError as exc:
    hint = " Run `tidemark db upgrade` first." if exc.code == "schema" else ""
    st.error(f"The catalog cannot be opened: {exc}.{hint}")
    st.stop()
    raise

auth.resolve_session(cat)
auth.single_sign_on(cat)


def sign_in_page() -> None:
    """The only page an anonymous visitor gets (a navigation of one hidden page, so no other
    page script can run before sign-in)."""
    hint = None
    if services.uses_embedded_catalog():
        cfg = services.settings()
        created = services.ensure_first_run_admin(cat, cfg.home, services.server_address())
        marker = services.first_run_admin_file(cfg.home)
        if created is not None or marker.exists():
            hint = (
                f"First run: an administrator **{services.FIRST_ADMIN}** was created. "
                f"Its password is in `{marker}` (readable only by you). Sign in, then add "
                "users on the Users page or with `tidemark user add`."
            )
    auth.login_form(cat, hint)


user = auth.current_user()
if user is None:
    st.navigation([st.Page(sign_in_page, title="Sign in", url_path="signin")],
                  position="hidden").run()
    st.stop()

assert user is not None
# The role comes from the catalog on every run, not from the sign-in: a user who is demoted or
# disabled while signed in loses the pages and buttons at their next click.
record: User | None
try:
    record = cat.user(user.name)
except CatalogError:
    record = None
if record is None or record.disabled:
    auth.sign_out(cat)
    st.rerun()
assert record is not None
if record.role != user.role:
    auth.sign_in(record.name, record.role)
    user = auth.current_user()
    assert user is not None
pages = {
    "Operate": [
        st.Page("views/jobs.py", title="Jobs", icon=":material/list:", default=True),
        st.Page("views/windows.py", title="Windows", icon=":material/view_timeline:"),
        st.Page("views/late_data.py", title="Late data", icon=":material/schedule:"),
        st.Page("views/snapshots.py", title="Recovery snapshots", icon=":material/restore:"),
        st.Page("views/migrations.py", title="Migrations", icon=":material/move_down:"),
    ],
    "Change": [
        st.Page("views/audit.py", title="Audit", icon=":material/history:"),
    ],
}
if auth.can("edit"):
    pages["Change"].insert(
        0, st.Page("views/define.py", title="Define / edit", icon=":material/edit:")
    )
if auth.can("admin"):
    pages["Change"].append(st.Page("views/users.py", title="Users", icon=":material/group:"))

nav = st.navigation(pages)

with st.sidebar:
    st.markdown(f"Signed in as **{user.name}** ({user.role})")
    st.selectbox(
        "Auto-refresh live pages",
        list(common.REFRESH_CHOICES),
        index=2,
        key=common.REFRESH_KEY,
        help="How often job status, windows, late data and migrations refresh themselves.",
    )
    if st.button("Sign out", key="sign_out"):
        auth.sign_out(cat)
        st.rerun()

nav.run()
