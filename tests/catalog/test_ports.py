"""The catalog's ports (jobs/catalog/ports.py): the service implements each one exactly, and a
caller sees the service only through its port."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from jobs.catalog import Catalog
from jobs.catalog.ports import LifecycleService, RuntimeCatalog, UICatalog

ROOT = Path(__file__).resolve().parents[2]


def _methods(port: type) -> list[str]:
    return sorted(n for n, v in vars(port).items() if inspect.isfunction(v) and not n.startswith("_"))


@pytest.mark.parametrize("port", [RuntimeCatalog, UICatalog, LifecycleService])
def test_the_service_implements_each_port_with_the_same_signatures(port: type) -> None:
    names = _methods(port)
    assert names, port
    for name in names:
        assert inspect.signature(getattr(Catalog, name)) == inspect.signature(getattr(port, name)), name


def _catalog_users(folder: Path) -> dict[str, list[str]]:
    """Module -> the ways it names the service class ``Catalog`` (imports and annotations)."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("jobs.catalog")
                    and any(a.name == "Catalog" for a in node.names)):
                found.setdefault(str(path.relative_to(ROOT)), []).append(node.module)
    return found


def test_the_ui_sees_the_catalog_only_through_its_port() -> None:
    """Only ``ui/services.py`` opens the service; every page gets a ``UICatalog``."""
    assert list(_catalog_users(ROOT / "ui")) == ["ui/services.py"]
    src = (ROOT / "ui" / "services.py").read_text()
    assert "def catalog() -> UICatalog:" in src


def test_the_lifecycle_uses_the_service_only_where_it_opens_it() -> None:
    """The supervisor, migrations and the outbox consumer get the port; only the modules that
    open a connection name the service."""
    assert sorted(_catalog_users(ROOT / "jobs" / "lifecycle")) == [
        "jobs/lifecycle/outbox_trigger.py", "jobs/lifecycle/wiring.py"]
