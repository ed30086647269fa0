"""Users, roles and the permission check the UI and the CLI use.

The service itself trusts its callers (the DAGs and the Spark job act as system actors such as
``airflow:supervisor``); user-facing front ends call :meth:`UserOps.require` before a change.
A refused permission check is audited (except for reads).
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from jobs.catalog import auth, convert
from jobs.catalog.base import CatalogBase
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import ROLES, AuditEventRow, UserRow
from jobs.catalog.records import Action, Role, User

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")
FIRST_RUN_ACTOR = "system:first-run"
SSO_HASH_PREFIX = "sso$"
"""Password-hash column of a single sign-on user: ``sso$<provider>`` (matches no password)."""


@functools.cache
def _dummy_hash() -> str:
    return auth.hash_password("not a real password")


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise CatalogError(f"role: must be one of {', '.join(ROLES)}, not {role!r}", code="invalid")


def _check_password(password: str) -> None:
    if len(password) < auth.MIN_PASSWORD_LENGTH:
        raise CatalogError(
            f"password: must be at least {auth.MIN_PASSWORD_LENGTH} characters", code="invalid"
        )


class UserOps(CatalogBase):
    def _user_row(self, session: Session, name: str) -> UserRow:
        row = session.scalars(select(UserRow).where(UserRow.name == name)).one_or_none()
        if row is None:
            raise CatalogError(f"user {name!r} not found", code="not_found")
        return row

    def add_user(self, name: str, password: str, role: Role, actor: str) -> User:
        """Create a user (names: letters, digits, ``_.@-``; passwords: 8+ characters)."""
        try:
            if not USER_NAME.match(name):
                raise CatalogError(
                    f"name: {name!r} is not a valid user name (letters, digits, _ . @ -)",
                    code="invalid",
                )
            _check_role(role)
            _check_password(password)
            with self._write() as session:
                if session.scalars(select(UserRow.id).where(UserRow.name == name)).first():
                    raise CatalogError(f"user {name!r} already exists", code="exists")
                now = self._now()
                row = UserRow(
                    name=name, role=role, password_hash=auth.hash_password(password),
                    created_at=now, updated_at=now, disabled=False,
                )
                session.add(row)
                session.flush()
                self._audit(
                    session, actor, "user_add", message=f"added user {name!r} ({role})",
                    data={"user": name, "role": role},
                )
                return convert.user(row)
        except IntegrityError as exc:
            raise CatalogError(f"user {name!r} already exists", code="exists") from exc
        except CatalogError as exc:
            self._audit_refusal(actor, "user_add", exc, data={"user": name})
            raise

    def set_password(self, name: str, password: str, actor: str) -> User:
        _check_password(password)
        with self._write() as session:
            row = self._user_row(session, name)
            row.password_hash = auth.hash_password(password)
            row.updated_at = self._now()
            self._audit(
                session, actor, "user_update", message=f"changed the password of {name!r}",
                data={"user": name, "field": "password"},
            )
            return convert.user(row)

    def set_role(self, name: str, role: Role, actor: str) -> User:
        _check_role(role)
        with self._write() as session:
            row = self._user_row(session, name)
            previous = row.role
            if previous == role:
                return convert.user(row)
            self._keep_an_admin(session, row, demoting=previous == "admin")
            row.role = role
            row.updated_at = self._now()
            self._audit(
                session, actor, "user_update", message=f"{name!r}: role {previous} -> {role}",
                data={"user": name, "field": "role", "old": previous, "new": role},
            )
            return convert.user(row)

    def set_disabled(self, name: str, disabled: bool, actor: str) -> User:
        with self._write() as session:
            row = self._user_row(session, name)
            if row.disabled == disabled:
                return convert.user(row)
            self._keep_an_admin(session, row, demoting=disabled and row.role == "admin")
            row.disabled = disabled
            row.updated_at = self._now()
            self._audit(
                session, actor, "user_update",
                message=f"{'disabled' if disabled else 'enabled'} user {name!r}",
                data={"user": name, "field": "disabled", "new": disabled},
            )
            return convert.user(row)

    def _keep_an_admin(self, session: Session, row: UserRow, *, demoting: bool) -> None:
        if not demoting:
            return
        others = session.scalar(
            select(func.count())
            .select_from(UserRow)
            .where(UserRow.role == "admin", UserRow.disabled.is_(False), UserRow.id != row.id)
        )
        if not others:
            raise CatalogError(
                f"user {row.name!r} is the last enabled admin; make another admin first",
                code="state",
            )

    def users(self) -> list[User]:
        with self._read() as session:
            return [convert.user(r) for r in session.scalars(select(UserRow).order_by(UserRow.name))]

    def user(self, name: str) -> User:
        with self._read() as session:
            return convert.user(self._user_row(session, name))

    def authenticate(self, name: str, password: str) -> User | None:
        """The user if the password matches and the user is enabled, else None. An unknown
        name costs the same scrypt work as a wrong password (no user enumeration by timing)."""
        with self._read() as session:
            row = session.scalars(select(UserRow).where(UserRow.name == name)).one_or_none()
            stored = row.password_hash if row is not None else _dummy_hash()
            found = convert.user(row) if row is not None else None
        ok = auth.verify_password(password, stored)
        if found is None or not ok or found.disabled:
            return None
        return found

    def ensure_admin(self, name: str, password: str) -> bool:
        """First run: create admin ``name`` if the catalog has no enabled admin; True if created.
        Refused (``state``) if ``name`` exists but is not an admin."""
        with self._read() as session:
            admins = session.scalar(
                select(func.count())
                .select_from(UserRow)
                .where(UserRow.role == "admin", UserRow.disabled.is_(False))
            )
            exists = session.scalars(select(UserRow.id).where(UserRow.name == name)).first()
        if admins:
            return False
        if exists:
            raise CatalogError(
                f"user {name!r} exists but is not an enabled admin; promote it with set_role",
                code="state",
            )
        self.add_user(name, password, "admin", FIRST_RUN_ACTOR)
        return True

    def can(self, actor: str, action: Action) -> bool:
        """Whether ``actor`` is an enabled user whose role allows ``action``."""
        with self._read() as session:
            row = session.scalars(select(UserRow).where(UserRow.name == actor)).one_or_none()
            return row is not None and not row.disabled and auth.role_allows(row.role, action)

    def require(self, actor: str, action: Action) -> User:
        """Raise ``CatalogError(code="forbidden")`` unless ``actor`` is an enabled user whose
        role allows ``action`` (viewer: read; editor: + edit; operator: + operate; admin: all)."""
        if action not in auth.ACTION_MIN_ROLE:
            raise CatalogError(f"action: unknown action {action!r}", code="invalid")
        with self._read() as session:
            row = session.scalars(select(UserRow).where(UserRow.name == actor)).one_or_none()
            found = convert.user(row) if row is not None else None
        needed = auth.ACTION_MIN_ROLE[action]
        error: CatalogError | None = None
        if found is None:
            error = CatalogError(f"user {actor!r} is unknown; {action} needs role {needed}", code="forbidden")
        elif found.disabled:
            error = CatalogError(f"user {actor!r} is disabled", code="forbidden")
        elif not auth.role_allows(found.role, action):
            error = CatalogError(
                f"user {actor!r} ({found.role}) may not {action}: needs role {needed} or higher",
                code="forbidden",
            )
        if error is not None:
            if action != "read":
                self._audit_refusal(
                    actor, "permission", error, data={"action": action, "needed_role": needed}
                )
            raise error
        assert found is not None
        return found

    # ------------------------------------------------------------ sign-in and sign-out

    def sign_in(
        self,
        name: str,
        password: str,
        client: str,
        *,
        policy: auth.SignInPolicy = auth.DEFAULT_SIGN_IN_POLICY,
    ) -> auth.SignInResult:
        """Check a password sign-in from ``client`` (an address) and audit it either way.

        A name or client that is backing off or locked out (:func:`auth.throttle` over the
        refused attempts in the audit trail) is refused without checking the password. The
        audit row names the attempted user and the client, never the password.
        """
        actor = _sign_in_actor(name)
        wait = self._sign_in_throttle(actor, client, policy)
        reason: auth.SignInReason
        if wait is not None:
            reason = "locked" if wait.locked else "throttled"
            self._record_sign_in(actor, client, "password", reason,
                                 retry_after_ms=wait.wait_ms(self.clock.now_ms()))
        else:
            with self._read() as session:
                row = session.scalars(select(UserRow).where(UserRow.name == name)).one_or_none()
                stored = row.password_hash if row is not None else _dummy_hash()
                found = convert.user(row) if row is not None else None
            matches = auth.verify_password(password, stored)
            if found is not None and matches and not found.disabled:
                self._record_sign_in(found.name, client, "password", "ok")
                return auth.SignInResult(found, "ok")
            reason = "disabled" if found is not None and matches else "wrong"
            self._record_sign_in(actor, client, "password", reason)
        after = self._sign_in_throttle(actor, client, policy)
        if after is None:
            return auth.SignInResult(None, reason, 0)
        return auth.SignInResult(None, "locked" if after.locked else reason,
                                 after.wait_ms(self.clock.now_ms()))

    def ensure_sso_user(self, name: str, role: Role, provider: str) -> User:
        """The catalog user behind a single sign-on identity, created or given the role the
        identity provider's claims map to (both audited, actor ``sso:<provider>``).

        Such users carry no password (their hash is the marker ``sso$<provider>``, which no
        password matches), so they can only come in through the provider. A *local* account of
        the same name is refused (``state``): an identity provider must not take it over."""
        _check_role(role)
        actor = f"sso:{provider}"
        marker = f"{SSO_HASH_PREFIX}{provider}"
        with self._write() as session:
            row = session.scalars(select(UserRow).where(UserRow.name == name)).one_or_none()
            if row is None:
                if not USER_NAME.match(name):
                    raise CatalogError(f"name: {name!r} is not a valid user name", code="invalid")
                now = self._now()
                row = UserRow(name=name, role=role, password_hash=marker, created_at=now,
                              updated_at=now, disabled=False)
                session.add(row)
                session.flush()
                self._audit(session, actor, "user_add",
                            message=f"added single sign-on user {name!r} ({role})",
                            data={"user": name, "role": role, "sso": provider})
            elif not row.password_hash.startswith(SSO_HASH_PREFIX):
                raise CatalogError(
                    f"user {name!r} is a local account; single sign-on may not use it",
                    code="state")
            elif row.role != role and not row.disabled:
                previous = row.role
                self._keep_an_admin(session, row, demoting=previous == "admin")
                row.role = role
                row.updated_at = self._now()
                self._audit(session, actor, "user_update",
                            message=f"{name!r}: role {previous} -> {role} (from the identity provider)",
                            data={"user": name, "field": "role", "old": previous, "new": role})
            return convert.user(row)

    def record_sign_in(self, name: str, client: str, method: str, reason: auth.SignInReason,
                       *, detail: str = "") -> None:
        """Audit a sign-in decided elsewhere (single sign-on: the identity provider checked the
        credentials, the UI mapped the claims to a role)."""
        self._record_sign_in(_sign_in_actor(name), client, method, reason, detail=detail)

    def record_sign_out(self, name: str, client: str, why: str) -> None:
        """Audit the end of a UI session (``why``: signed out, idle, expired)."""
        with self._write() as session:
            self._audit(
                session, _sign_in_actor(name), auth.SIGN_OUT_ACTION,
                message=f"session of {name!r} ended: {why}",
                data={"user": name, "client": client, "why": why},
            )

    def _record_sign_in(self, actor: str, client: str, method: str, reason: auth.SignInReason,
                        *, retry_after_ms: int = 0, detail: str = "") -> None:
        ok = reason == "ok"
        words = {
            "ok": "signed in", "wrong": "refused: unknown user or wrong password",
            "disabled": "refused: user is disabled", "throttled": "refused: backing off",
            "locked": "refused: locked out",
            "no_role": "refused: no tidemark role from the identity provider",
        }
        message = f"{actor} {words[reason]} ({method}, from {client})"
        if detail:
            message += f": {detail}"
        data: dict[str, object] = {"user": actor, "client": client, "method": method,
                                   "reason": reason}
        if retry_after_ms:
            data["retry_after_ms"] = retry_after_ms
        with self._write() as session:
            self._audit(session, actor, auth.SIGN_IN_ACTION, outcome="ok" if ok else "refused",
                        message=message, data=data)

    def _sign_in_throttle(self, actor: str, client: str,
                          policy: auth.SignInPolicy) -> auth.Throttle | None:
        """The stricter of the name's and the client's waits, from the audit trail."""
        now_ms = self.clock.now_ms()
        since = self._now() - timedelta(milliseconds=policy.window_ms)
        with self._read() as session:
            rows = session.execute(
                select(AuditEventRow.actor, AuditEventRow.outcome, AuditEventRow.at,
                       AuditEventRow.data)
                .where(AuditEventRow.action == auth.SIGN_IN_ACTION, AuditEventRow.at >= since)
                .order_by(AuditEventRow.id)
            ).all()
        by_name: list[int] = []
        by_client: list[int] = []
        for row_actor, outcome, at, data in rows:
            t = _ms(at)
            if row_actor == actor:
                if outcome == "ok":
                    by_name.clear()
                else:
                    by_name.append(t)
            if outcome != "ok" and isinstance(data, dict) and data.get("client") == client:
                by_client.append(t)
        waits = [w for w in (auth.throttle(by_name, now_ms, policy),
                             auth.throttle(by_client, now_ms, policy)) if w is not None]
        if not waits:
            return None
        return max(waits, key=lambda w: (w.locked, w.until_ms))


def _sign_in_actor(name: str) -> str:
    """The attempted name as the audit actor, or a placeholder for text that is not a name
    (audit rows must not become a store for whatever a visitor types)."""
    return name if USER_NAME.match(name) else "(not a user name)"


def _ms(at: datetime) -> int:
    return int((at - _EPOCH).total_seconds() * 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
