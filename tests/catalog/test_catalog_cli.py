"""`tidemark db|job|audit|user` driven as a user would, against a real SQLite catalog."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from catalog_defs import team_scores

from jobs.catalog import Catalog
from jobs.catalog.models import SCHEMA_HEAD
from jobs.cli import main


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'cli' / 'catalog.db'}"
    monkeypatch.setenv("TIDEMARK_DB_URL", url)
    monkeypatch.delenv("TIDEMARK_USER", raising=False)
    return url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_job_workflow(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "db", "upgrade")
    assert code == 0 and f"revision {SCHEMA_HEAD}" in out
    assert run(capsys, "db", "check")[0] == 0

    v1 = tmp_path / "v1.yaml"
    v1.write_text(team_scores())
    code, out, _ = run(capsys, "job", "create", str(v1), "--note", "first")
    assert code == 0 and "created job team_scores version 1" in out

    v2 = tmp_path / "v2.yaml"
    v2.write_text(team_scores(size="5m"))
    code, out, _ = run(capsys, "job", "edit", "team_scores", str(v2), "--base", "1")
    assert code == 0 and "version 2 (new store" in out
    assert "window.size: 120000 -> 300000" in out

    code, out, _ = run(capsys, "job", "edit", "team_scores", str(v2), "--base", "1")
    assert code == 0 and "no change" in out
    v3 = tmp_path / "v3.yaml"
    v3.write_text(team_scores(size="5m", description="stale edit"))
    code, _, err = run(capsys, "job", "edit", "team_scores", str(v3), "--base", "1")
    assert code == 3 and "based on version 1 but version 2 exists" in err

    code, out, _ = run(capsys, "job", "history", "team_scores")
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["VERSION", "CREATED", "AUTHOR", "CHANGE"]
    assert lines[1].startswith("*1") and "initial" in lines[1]
    assert lines[2].startswith("2") and "new_store" in lines[2]

    code, out, _ = run(capsys, "job", "diff", "team_scores", "1", "2")
    assert "new store" in out and "window.size: 120000 -> 300000" in out

    code, out, _ = run(capsys, "job", "activate", "team_scores", "2")
    assert code == 0 and "migration #1 planned" in out

    assert run(capsys, "job", "start", "team_scores")[0] == 0
    code, out, _ = run(capsys, "job", "list", "--json")
    [listed] = [json.loads(line) for line in out.splitlines()]
    assert (listed["name"], listed["desired_state"], listed["active_version"]) == (
        "team_scores", "running", 1,
    )
    code, out, _ = run(capsys, "job", "show", "team_scores", "--json")
    shown = json.loads(out)
    assert shown["spec"]["window"]["size"] == 120_000 and shown["status"] == "starting"
    assert run(capsys, "job", "stop", "team_scores", "--reason", "maintenance")[0] == 0

    code, out, _ = run(capsys, "audit", "--job", "team_scores", "--json")
    actions = [json.loads(line)["action"] for line in out.splitlines()]
    assert actions == ["stop", "start", "migrate", "edit", "edit", "create"]
    code, out, _ = run(capsys, "audit", "--outcome", "refused")
    assert "edit" in out and "version 2 exists" in out


def test_invalid_definition_prints_field_errors(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "db", "upgrade")
    bad = tmp_path / "bad.yaml"
    bad.write_text(team_scores().replace("type: tumbling", "type: rolling"))
    code, _, err = run(capsys, "job", "create", str(bad))
    assert code == 2
    assert "window.type" in err
    assert run(capsys, "job", "show", "team_scores")[0] == 5


def test_users_and_roles(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, "db", "upgrade")
    monkeypatch.setattr("sys.stdin", io.StringIO("long-enough-pass\n"))
    code, out, _ = run(capsys, "user", "add", "root", "--role", "admin", "--password-stdin")
    assert code == 0 and "added user root (admin)" in out
    monkeypatch.setattr("sys.stdin", io.StringIO("viewer-password\n"))
    assert run(capsys, "user", "add", "vic", "--role", "viewer", "--password-stdin",
               "--as", "root")[0] == 0

    definition = tmp_path / "d.yaml"
    definition.write_text(team_scores())
    code, _, err = run(capsys, "job", "create", str(definition), "--as", "vic")
    assert code == 4 and "needs role editor" in err
    assert run(capsys, "job", "list", "--as", "vic")[0] == 0

    with Catalog(db) as cat:
        assert cat.authenticate("vic", "viewer-password") is not None
        assert cat.jobs() == []
        assert cat.audit(action="permission")[0].actor == "vic"


def test_catalog_not_migrated_is_reported(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "job", "list")
    assert code == 1 and "tidemark db upgrade" in err
    code, out, _ = run(capsys, "db", "current")
    assert "(empty)" in out
