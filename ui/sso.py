"""Optional single sign-on: settings and the mapping of identity-provider claims to roles (pure).

Sign-in itself is Streamlit's OpenID Connect support (``st.login``, Authlib): ``ui/serve.py``
hands it the provider from these settings, the identity provider checks the credentials, and
``ui/auth.py`` turns the identity (``st.user``) into a tidemark user and role with
:func:`identity` and then into the same web session a password sign-in gets. Local accounts
stay, for the embedded default and as a way in when the provider is down.

| variable | meaning |
|---|---|
| ``TIDEMARK_UI_OIDC_METADATA_URL`` | the provider's ``.well-known/openid-configuration``; SSO is on when set |
| ``TIDEMARK_UI_OIDC_CLIENT_ID`` | this app's client id at the provider |
| ``TIDEMARK_UI_OIDC_CLIENT_SECRET`` | its client secret (from the environment, never the catalog) |
| ``TIDEMARK_UI_OIDC_REDIRECT_URI`` | ``http(s)://<ui host>/oauth2callback`` as registered at the provider |
| ``TIDEMARK_UI_SSO_ROLES`` | ``group=role`` pairs, comma separated, e.g. ``tm-admins=admin,tm-ops=operator`` |
| ``TIDEMARK_UI_SSO_ROLE_CLAIM`` | the claim holding the groups (default ``groups``; a list or one string) |
| ``TIDEMARK_UI_SSO_NAME_CLAIM`` | the claim that becomes the tidemark user name (default ``email``) |
| ``TIDEMARK_UI_SSO_LABEL`` | the sign-in button's text (default ``Sign in with single sign-on``) |

An identity in several mapped groups gets the highest of their roles; one in none is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from jobs.catalog.auth import ROLE_ORDER
from jobs.catalog.records import Role
from jobs.config import Settings

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")


class SsoConfigError(ValueError):
    """A single sign-on setting is unusable (the message names the variable)."""


@dataclass(frozen=True)
class SsoSettings:
    metadata_url: str
    client_id: str
    client_secret: str
    redirect_uri: str
    roles: dict[str, Role]
    role_claim: str = "groups"
    name_claim: str = "email"
    label: str = "Sign in with single sign-on"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SsoSettings | None:
        """The settings, or None when single sign-on is not configured."""
        e = Settings.from_env().values if env is None else env
        metadata_url = e.get("TIDEMARK_UI_OIDC_METADATA_URL", "")
        if not metadata_url:
            return None
        missing = [k for k in ("TIDEMARK_UI_OIDC_CLIENT_ID", "TIDEMARK_UI_OIDC_CLIENT_SECRET",
                               "TIDEMARK_UI_OIDC_REDIRECT_URI", "TIDEMARK_UI_SSO_ROLES")
                   if not e.get(k)]
        if missing:
            raise SsoConfigError(f"{missing[0]}: must be set when TIDEMARK_UI_OIDC_METADATA_URL is")
        return cls(
            metadata_url=metadata_url,
            client_id=e["TIDEMARK_UI_OIDC_CLIENT_ID"],
            client_secret=e["TIDEMARK_UI_OIDC_CLIENT_SECRET"],
            redirect_uri=e["TIDEMARK_UI_OIDC_REDIRECT_URI"],
            roles=parse_role_map(e["TIDEMARK_UI_SSO_ROLES"]),
            role_claim=e.get("TIDEMARK_UI_SSO_ROLE_CLAIM") or "groups",
            name_claim=e.get("TIDEMARK_UI_SSO_NAME_CLAIM") or "email",
            label=e.get("TIDEMARK_UI_SSO_LABEL") or "Sign in with single sign-on",
        )

    def streamlit_auth_secrets(self, cookie_secret: str) -> dict[str, Any]:
        """The ``[auth]`` section ``st.login`` reads (one provider, named ``default``)."""
        return {"auth": {
            "redirect_uri": self.redirect_uri, "cookie_secret": cookie_secret,
            "client_id": self.client_id, "client_secret": self.client_secret,
            "server_metadata_url": self.metadata_url,
        }}


def parse_role_map(text: str) -> dict[str, Role]:
    """``group=role,group=role`` -> {group: role}; roles must be tidemark's."""
    roles: dict[str, Role] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        group, eq, role = (x.strip() for x in part.partition("="))
        if not eq or not group or role not in ROLE_ORDER:
            raise SsoConfigError(
                f"TIDEMARK_UI_SSO_ROLES: {part!r} is not group=role with a role among "
                f"{', '.join(ROLE_ORDER)}")
        roles[group] = cast(Role, role)
    if not roles:
        raise SsoConfigError("TIDEMARK_UI_SSO_ROLES: no group=role pair")
    return roles


@dataclass(frozen=True)
class Identity:
    """What the claims gave: a user name and role, or why not (``problem``)."""

    name: str | None
    role: Role | None
    problem: str = ""


def identity(claims: Mapping[str, Any], settings: SsoSettings) -> Identity:
    """The tidemark user name and the highest mapped role of an identity provider's claims."""
    raw_name = claims.get(settings.name_claim)
    name = raw_name if isinstance(raw_name, str) and _NAME.match(raw_name) else None
    if name is None:
        return Identity(None, None, f"claim {settings.name_claim!r} is missing or not a user name")
    value = claims.get(settings.role_claim)
    groups = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    mapped = [settings.roles[g] for g in groups if isinstance(g, str) and g in settings.roles]
    if not mapped:
        return Identity(name, None,
                        f"no group in claim {settings.role_claim!r} maps to a tidemark role")
    return Identity(name, max(mapped, key=ROLE_ORDER.index))
