"""Passwords and roles.

Passwords are stored only as salted scrypt hashes (``hashlib.scrypt``; n=2**14, r=8, p=1 --
about 16 MiB and a few tens of ms per check, the parameters recommended for interactive logins)
in a self-describing string ``scrypt$n$r$p$salt_hex$hash_hex`` so the cost can be raised later
without breaking stored hashes. Comparison is constant-time.

Roles are ordered: each one may do what the ones below it may.

Sign-in attempts are throttled (:func:`throttle`, :class:`SignInPolicy`) from the refusals the
audit trail already holds, so the back-off and lockout survive a UI restart and hold across
several UI processes on one catalog.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from jobs.catalog.records import Action, Role, User

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


# ---------------------------------------------------------------- guessing resistance

SIGN_IN_ACTION = "sign_in"
SIGN_OUT_ACTION = "sign_out"


@dataclass(frozen=True)
class SignInPolicy:
    """How refused sign-ins slow down further attempts, per user name and per client address.

    The first ``free_failures`` refusals cost nothing (typos happen); each further one makes the
    next attempt wait ``base_delay_ms`` doubled per refusal, up to ``max_delay_ms``; after
    ``lockout_failures`` refusals the name or client is locked for ``lockout_ms``. Refusals older
    than ``window_ms`` are forgotten, and a successful sign-in clears a name's count (not a
    client's: one valid account must not reset the counter of an address spraying guesses).
    Attempts refused *because* of the wait count as refusals too, so a script that ignores the
    wait reaches the lockout sooner, not later.
    """

    free_failures: int = 3
    base_delay_ms: int = 1_000
    max_delay_ms: int = 30_000
    lockout_failures: int = 10
    lockout_ms: int = 15 * 60_000
    window_ms: int = 15 * 60_000


DEFAULT_SIGN_IN_POLICY = SignInPolicy()


@dataclass(frozen=True)
class Throttle:
    """Whether the next attempt must wait: ``locked`` or a plain back-off, and until when."""

    locked: bool
    until_ms: int

    def wait_ms(self, now_ms: int) -> int:
        return max(0, self.until_ms - now_ms)


def throttle(failures_ms: Sequence[int], now_ms: int, policy: SignInPolicy) -> Throttle | None:
    """The wait imposed by ``failures_ms`` (times of refused attempts, any order, already cut to
    those that count), or None when the next attempt may go ahead now."""
    recent = sorted(t for t in failures_ms if now_ms - t < policy.window_ms)
    n = len(recent)
    if n < policy.free_failures:
        return None
    last = recent[-1]
    if n >= policy.lockout_failures:
        until, locked = last + policy.lockout_ms, True
    else:
        delay = policy.base_delay_ms * 2 ** (n - policy.free_failures)
        until, locked = last + min(delay, policy.max_delay_ms), False
    return Throttle(locked, until) if until > now_ms else None


SignInReason = Literal["ok", "wrong", "disabled", "throttled", "locked", "no_role"]


@dataclass(frozen=True)
class SignInResult:
    """What a sign-in attempt gave: the user (only when ``reason == "ok"``), why not, and how
    long the visitor must wait before the next attempt (ms, 0 when they need not)."""

    user: User | None
    reason: SignInReason
    retry_after_ms: int = 0
