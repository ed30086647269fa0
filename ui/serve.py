"""tidemark UI server: ``streamlit run ui/serve.py --server.address 127.0.0.1``.

Serves the page script ``ui/app.py`` through ``st.App`` so that the session-cookie routes
(``ui/session_routes.py``) run on the same server and share the process's session store with
the page scripts. ``streamlit run ui/app.py`` still works but then has no cookie: a sign-in
lasts one browser tab until it is reloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run ui/serve.py` imports this file as `serve`
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from ui import session_routes, sso, web_session  # noqa: E402

web_session.mark_routes_served()
_store = web_session.store()  # a bad session setting fails the start, not the first sign-in
_sso = sso.SsoSettings.from_env()
# Single sign-on, when configured: Streamlit's st.login reads its provider from the secrets;
# its own identity cookie is signed with a key derived from the session secret.
_secrets = None if _sso is None else _sso.streamlit_auth_secrets(
    web_session.derived_key(_store.settings.secret, "streamlit-auth-cookie"))

app = st.App(Path(__file__).with_name("app.py"), routes=session_routes.routes(),
             secrets=_secrets)
