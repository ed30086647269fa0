"""Users, roles and the permission check the UI and the CLI use.

The service itself trusts its callers (the DAGs and the Spark job act as system actors such as
``airflow:supervisor``); user-facing front ends call :meth:`UserOps.require` before a change.
A refused permission check is audited (except for reads).
"""

from __future__ import annotations

import functools
import re

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from jobs.catalog import auth, convert
from jobs.catalog.base import CatalogBase
from jobs.catalog.errors import CatalogError
from jobs.catalog.models import ROLES, UserRow
from jobs.catalog.records import Action, Role, User

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")
FIRST_RUN_ACTOR = "system:first-run"


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
