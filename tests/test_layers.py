"""The import rule of docs/architecture.md, enforced: every import in ``jobs/``, ``dags/`` and
``ui/`` (read with ``ast``, so imports inside functions count too) points to a lower layer, or
is an exception the table names; pyspark, airflow, streamlit and SQLAlchemy stay where the
table puts them. The tables are read from the document, so the document is the rule."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _table(heading_row: str) -> list[list[str]]:
    """The rows (cells) of the markdown table whose header row starts with ``heading_row``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading_row))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _layers() -> tuple[dict[str, int], set[tuple[str, str]]]:
    rows = _table("| layer | packages |")
    rank: dict[str, int] = {}
    allowed: set[tuple[str, str]] = set()
    for height, (_layer, packages, extra) in enumerate(reversed(rows)):
        for name in _names(packages):
            rank[name] = height
        for src, dst in re.findall(r"`([^`]+)` -> `([^`]+)`", extra):
            allowed.add((src, dst))
    return rank, allowed


def _unit(path: Path, root: Path = ROOT) -> str:
    """The package a file belongs to, as the table names it."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[0] != "jobs":
        return parts[0]
    if len(parts) == 2 and parts[1] == "__init__":
        return "jobs"
    return f"jobs.{parts[1]}"


def _target(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in ("ui", "dags"):
        return parts[0]
    if parts[0] != "jobs":
        return None
    return "jobs" if len(parts) == 1 else f"jobs.{parts[1]}"


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _sources(root: Path = ROOT) -> list[Path]:
    return sorted(p for d in ("jobs", "dags", "ui") for p in (root / d).rglob("*.py"))


def test_every_package_is_in_a_layer() -> None:
    rank, _ = _layers()
    missing = sorted({_unit(p) for p in _sources()} - set(rank))
    assert missing == [], f"add these to the layer table of docs/architecture.md: {missing}"


def _violations(root: Path = ROOT) -> list[str]:
    rank, allowed = _layers()
    homes = {lib: set(_names(where)) for libs, where in _table("| library | only in |")
             for lib in _names(libs)}
    wrong = []
    for path in _sources(root):
        src = _unit(path, root)
        for line, module in _imports(path):
            where = f"{path.relative_to(root)}:{line}: {src} imports {module}"
            lib = module.split(".")[0]
            if lib in homes and src not in homes[lib]:
                wrong.append(where)
            dst = _target(module)
            if dst is None or dst == src or (src, dst) in allowed:
                continue
            if rank[dst] >= rank[src]:
                wrong.append(where)
    return wrong


def test_imports_point_down_and_libraries_stay_home() -> None:
    assert _violations() == []


def test_the_rule_refuses_upward_and_sideways_imports(tmp_path: Path) -> None:
    files = {
        "jobs/engine/bad.py": "def f():\n    from jobs.spark.native import x\n",  # up, lazily
        "jobs/catalog/bad.py": "import jobs.replay\n",  # same layer
        "jobs/definition/bad.py": "import pyspark.sql\n",  # a library out of its home
        "ui/fine.py": "from jobs.catalog import Catalog\nimport streamlit\n",
        "jobs/run.py": "from jobs.cli.errors import report\n",  # a named exception
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert _violations(tmp_path) == [
        "jobs/catalog/bad.py:1: jobs.catalog imports jobs.replay",
        "jobs/definition/bad.py:1: jobs.definition imports pyspark.sql",
        "jobs/engine/bad.py:2: jobs.engine imports jobs.spark.native",
    ]
