"""The two HTTP routes that set and clear the session cookie (Starlette, on Streamlit's server).

Why routes: a Streamlit page script answers over the WebSocket and cannot send a ``Set-Cookie``
header, and ``st.context.cookies`` only reads. Streamlit 1.67 serves apps with Starlette and
lets a launcher add routes through ``st.App(..., routes=[...])`` (``ui/serve.py``), the same way
its own ``st.login`` sets its identity cookie from its ``/oauth2callback`` route.

- ``GET /api/session/start?ticket=T&next=/page`` swaps a one-time ticket (issued by the sign-in
  page after checking the password) for a session and sets the cookie: ``HttpOnly`` (scripts in
  the page cannot read it), ``SameSite=Strict`` (no other site's page or link sends it),
  ``Path=/``, ``Secure`` when configured, and a ``Max-Age`` a minute longer than the absolute
  session lifetime (the server, not the browser, decides that a session expired, so it can say so).
- ``GET /api/session/end`` deletes the cookie (the page script has already ended the session
  on the server).

Both also delete Streamlit's own identity cookies left by a single sign-on (``st.login``): from
then on the web session alone says who is signed in, so its expiry and sign-out hold for SSO
users too (signing in again goes back through the identity provider).

Both answer ``Cache-Control: no-store`` and redirect (303) back into the app.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ui import web_session

START_PATH = "/api/session/start"
END_PATH = "/api/session/end"
_STREAMLIT_AUTH_COOKIES = ("_streamlit_user", "_streamlit_user_tokens")


def _safe_next(value: str | None) -> str:
    """Only a path inside this app (no scheme, no ``//host``): never an open redirect."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _redirect(to: str) -> RedirectResponse:
    response = RedirectResponse(to, status_code=303)
    response.headers["Cache-Control"] = "no-store"
    return response


NOTICES = frozenset({"stale", "sso_refused"})
"""``?signin=<code>`` values the sign-in page explains."""


def _clear_streamlit_auth(request: Request, response: Response) -> None:
    for name in _STREAMLIT_AUTH_COOKIES:
        if any(c == name or c.startswith(name + "__") for c in request.cookies):
            response.delete_cookie(name, path="/")


async def start(request: Request) -> Response:
    store = web_session.store()
    cookie = store.redeem(request.query_params.get("ticket", ""))
    if cookie is None:
        return _redirect("/?signin=stale")
    response = _redirect(_safe_next(request.query_params.get("next")))
    _clear_streamlit_auth(request, response)
    response.set_cookie(
        web_session.COOKIE_NAME, cookie, max_age=store.settings.max_ms // 1000 + 60, path="/",
        httponly=True, samesite="strict", secure=store.settings.secure_cookie,
    )
    return response


async def end(request: Request) -> Response:
    web_session.store().end(request.cookies.get(web_session.COOKIE_NAME))
    notice = request.query_params.get("signin", "")
    response = _redirect(f"/?signin={notice}" if notice in NOTICES else "/")
    response.delete_cookie(web_session.COOKIE_NAME, path="/", httponly=True, samesite="strict")
    _clear_streamlit_auth(request, response)
    return response


def routes() -> list[Route]:
    return [Route(START_PATH, start, methods=["GET"]), Route(END_PATH, end, methods=["GET"])]
