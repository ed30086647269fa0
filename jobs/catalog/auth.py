"""Passwords and roles.

Passwords are stored only as salted scrypt hashes (``hashlib.scrypt``; n=2**14, r=8, p=1 --
about 16 MiB and a few tens of ms per check, the parameters recommended for interactive logins)
in a self-describing string ``scrypt$n$r$p$salt_hex$hash_hex`` so the cost can be raised later
without breaking stored hashes. Comparison is constant-time.

Roles are ordered: each one may do what the ones below it may.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from jobs.catalog.records import Action, Role

ROLE_ORDER: tuple[Role, ...] = ("viewer", "editor", "operator", "admin")
ACTION_MIN_ROLE: dict[Action, Role] = {
    "read": "viewer",
    "edit": "editor",  # create jobs, save definition versions
    "operate": "operator",  # start, stop, restart, activate, migrate, roll back
    "admin": "admin",  # manage users
}

_N, _R, _P = 2**14, 8, 1
_SALT_BYTES = 16
_KEY_BYTES = 32
MIN_PASSWORD_LENGTH = 8


def hash_password(password: str, *, n: int = _N, r: int = _R, p: int = _P) -> str:
    salt = secrets.token_bytes(_SALT_BYTES)
    key = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=_KEY_BYTES)
    return f"scrypt${n}${r}${p}${salt.hex()}${key.hex()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt_hex, key_hex = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = bytes.fromhex(key_hex)
        key = hashlib.scrypt(
            password.encode(),
            salt=bytes.fromhex(salt_hex),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except ValueError:
        return False
    return hmac.compare_digest(key, expected)


def role_allows(role: str, action: Action) -> bool:
    if role not in ROLE_ORDER:
        return False
    return ROLE_ORDER.index(role) >= ROLE_ORDER.index(ACTION_MIN_ROLE[action])
