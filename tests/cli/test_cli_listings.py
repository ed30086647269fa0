"""Every listing takes ``--json``: what a script reads is the same as what the table shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.catalog.models import SCHEMA_HEAD
from jobs.cli import main

DEFINITION = """\
name: scores
key: team
event_time: et
window: {{type: tumbling, size: {size}}}
aggregations:
  - {{name: total, fn: sum, of: score}}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _lines(out: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in out.splitlines()]


def test_db_current_and_check(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "db", "current", "--json")
    assert code == 0
    assert json.loads(out) == {"current": SCHEMA_HEAD, "head": SCHEMA_HEAD, "at_head": True}
    code, out = run(capsys, "db", "current")
    assert out.strip() == f"{SCHEMA_HEAD} (head)"
    code, out = run(capsys, "db", "check", "--json")
    assert code == 0 and json.loads(out) == {"match": True, "differences": []}


def test_job_diff(db_url: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    for n, size in ((1, "2m"), (2, "5m")):
        path = tmp_path / f"v{n}.yaml"
        path.write_text(DEFINITION.format(size=size))
        argv = ["job", "create", str(path)] if n == 1 else [
            "job", "edit", "scores", str(path), "--base", "1"]
        assert run(capsys, *argv)[0] == 0

    code, out = run(capsys, "job", "diff", "scores", "1", "2", "--json")
    diff = json.loads(out)
    assert code == 0
    assert (diff["job"], diff["old"], diff["new"], diff["kind"]) == ("scores", 1, 2, "new_store")
    assert {"path": "window.size", "old": 120000, "new": 300000} in diff["changes"]
    _, table = run(capsys, "job", "diff", "scores", "1", "2")
    assert "window.size: 120000 -> 300000" in table
    _, history = run(capsys, "job", "history", "scores", "--json")
    assert diff["store"] == [v["store"] for v in _lines(history) if v["version"] == 2][0]


def test_user_list(db_url: str, monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    assert run(capsys, "user", "add", "carol", "--role", "viewer", "--password-stdin")[0] == 0
    code, out = run(capsys, "user", "list", "--json")
    [carol] = [u for u in _lines(out) if u["name"] == "carol"]
    assert code == 0 and carol["role"] == "viewer" and carol["disabled"] is False
    assert carol["created_at"].endswith("+00:00")
    _, table = run(capsys, "user", "list")
    assert any(line.split()[:2] == ["carol", "viewer"] for line in table.splitlines())
