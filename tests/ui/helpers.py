"""Helpers shared by the UI tests (not fixtures: see conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from jobs.timeutil import parse_instant

APP = str(Path(__file__).resolve().parents[2] / "ui" / "app.py")
PASSWORD = "correct horse battery"
ROLES = ("viewer", "editor", "operator", "admin")
T0 = parse_instant("2026-01-01T00:00:00Z")
MIN = 60_000


def app_as(role: str | None, page: str | None = None) -> AppTest:
    """The app, signed in as the user named ``role`` (None: anonymous), on ``page``."""
    at = AppTest.from_file(APP, default_timeout=60)
    if role is not None:
        at.session_state["tm_user"] = {"name": role, "role": role}
    at.run()
    if page is not None:
        at.switch_page(page).run()
    return at


def texts(at: AppTest) -> str:
    """Everything the page says, for "the user can read X" assertions."""
    parts: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "success",
                 "warning", "error", "text", "metric"):
        for el in getattr(at, kind):
            parts.append(str(getattr(el, "value", "")))
            parts.append(str(getattr(el, "label", "")))
    return "\n".join(parts)


def landing(dir_: Path, records: list[dict[str, Any]]) -> Path:
    dir_.mkdir(parents=True, exist_ok=True)
    (dir_ / "part-0001.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    return dir_


def team_scores(source: Path, *, sink: str = "catalog", size: str = "1m", name: str = "team_scores") -> dict[str, Any]:
    return {
        "name": name,
        "description": "Team scores",
        "source": {"kind": "files", "path": str(source), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team",
        "event_time": "et",
        "watermark": {"delay": "10s"},
        "window": {"type": "tumbling", "size": size},
        "allowed_lateness": "1m",
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"}, {"name": "n", "fn": "count"}],
        "sink": {"kind": sink},
    }


def widget(at: AppTest, kind: str, label: str) -> Any:
    """The widget of ``kind`` (text_input, selectbox, ...) with ``label``."""
    found = [w for w in getattr(at, kind) if w.label == label]
    assert found, f"no {kind} labelled {label!r}; have {[w.label for w in getattr(at, kind)]}"
    return found[0]


def button(at: AppTest, label: str) -> Any:
    return widget(at, "button", label)
