"""Users and roles: scrypt-hashed passwords, authentication, permission checks."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from jobs.catalog import Catalog, CatalogError


def test_passwords_are_stored_salted_and_hashed(catalog: Catalog) -> None:
    catalog.add_user("alice", "correct horse", "admin", "system")
    catalog.add_user("bob", "correct horse", "viewer", "alice")
    with catalog.engine.connect() as conn:
        rows = dict(conn.execute(text("SELECT name, password_hash FROM users")).all())
    assert all("correct horse" not in h for h in rows.values())
    assert all(h.startswith("scrypt$") for h in rows.values())
    assert rows["alice"] != rows["bob"]  # salted
    event = catalog.audit(action="user_add")[0]
    assert "correct horse" not in str(event)


def test_authenticate(catalog: Catalog) -> None:
    catalog.add_user("alice", "s3cret-pass", "editor", "system")
    user = catalog.authenticate("alice", "s3cret-pass")
    assert user is not None and (user.name, user.role) == ("alice", "editor")
    assert catalog.authenticate("alice", "wrong-pass") is None
    assert catalog.authenticate("nobody", "s3cret-pass") is None
    catalog.set_password("alice", "new-s3cret", "alice")
    assert catalog.authenticate("alice", "s3cret-pass") is None
    assert catalog.authenticate("alice", "new-s3cret") is not None
    catalog.add_user("root", "rootroot", "admin", "system")
    catalog.set_disabled("alice", True, "root")
    assert catalog.authenticate("alice", "new-s3cret") is None


ROLE_MATRIX = {
    "viewer": {"read"},
    "editor": {"read", "edit"},
    "operator": {"read", "edit", "operate"},
    "admin": {"read", "edit", "operate", "admin"},
}


def test_roles_are_ordered(catalog: Catalog) -> None:
    for role in ROLE_MATRIX:
        catalog.add_user(f"u_{role}", "password1", role, "system")  # type: ignore[arg-type]
    for role, allowed in ROLE_MATRIX.items():
        for action in ("read", "edit", "operate", "admin"):
            if action in allowed:
                assert catalog.require(f"u_{role}", action).role == role  # type: ignore[arg-type]
            else:
                with pytest.raises(CatalogError) as err:
                    catalog.require(f"u_{role}", action)  # type: ignore[arg-type]
                assert err.value.code == "forbidden"
                assert f"u_{role}" in str(err.value) and role in str(err.value)
    with pytest.raises(CatalogError) as err:
        catalog.require("stranger", "read")
    assert err.value.code == "forbidden"
    refused = catalog.audit(action="permission")
    assert len(refused) == 6  # 3 + 2 + 1 refusals, reads are not audited
    assert {e.data["action"] for e in refused} == {"edit", "operate", "admin"}


def test_ensure_admin_and_last_admin(catalog: Catalog) -> None:
    assert catalog.ensure_admin("root", "first-run-pass") is True
    assert catalog.ensure_admin("root", "first-run-pass") is False
    assert catalog.ensure_admin("other", "whatever-pass") is False
    assert catalog.user("root").role == "admin"
    assert catalog.audit(action="user_add")[0].actor == "system:first-run"
    with pytest.raises(CatalogError) as err:
        catalog.set_role("root", "viewer", "root")
    assert err.value.code == "state"
    catalog.add_user("second", "second-pass", "admin", "root")
    assert catalog.set_role("root", "viewer", "second").role == "viewer"


def test_user_input_is_validated(catalog: Catalog) -> None:
    for name, password, role in (
        ("bad name", "password1", "viewer"),
        ("alice", "short", "viewer"),
        ("alice", "password1", "superuser"),
    ):
        with pytest.raises(CatalogError) as err:
            catalog.add_user(name, password, role, "system")  # type: ignore[arg-type]
        assert err.value.code == "invalid"
    catalog.add_user("alice", "password1", "viewer", "system")
    with pytest.raises(CatalogError) as err:
        catalog.add_user("alice", "password1", "viewer", "system")
    assert err.value.code == "exists"
    assert [u.name for u in catalog.users()] == ["alice"]
