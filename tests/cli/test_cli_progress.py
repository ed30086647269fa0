"""Long commands report progress on stderr, and stdout stays the command's output."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.catalog.records import MigrationInfo
from jobs.cli import main
from jobs.cli.lifecycle_cmds import MigrationProgress

ROOT = Path(__file__).resolve().parents[2]


def test_replay_progress_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = tmp_path / "in.jsonl"
    with events.open("w") as f:
        for i in range(25_000):
            f.write(json.dumps({"team": f"t{i % 7}", "score": i % 10,
                                "et": f"2026-01-01T00:{(i // 1000) % 60:02d}:00Z"}) + "\n")
    code = main(["replay", str(ROOT / "examples" / "team_scores.yaml"), "-i", str(events),
                 "-o", "-", "--progress-every", "0.000001"])
    out, err = capsys.readouterr()
    assert code == 0
    panes = [json.loads(line) for line in out.splitlines()]  # stdout: only the output lines
    assert panes and all(p["type"] == "pane" for p in panes)
    assert sum(p["values"]["n"] for p in panes) == 25_000
    progress = [line for line in err.splitlines() if "input lines read" in line]
    assert [line.split()[2] for line in progress] == ["10,000", "20,000"]


def test_replay_without_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = tmp_path / "in.jsonl"
    events.write_text("\n".join(json.dumps({"team": "a", "score": 1, "et": 60_000 * i})
                                for i in range(20_001)))
    out_file = tmp_path / "out.jsonl"
    assert main(["replay", str(ROOT / "examples" / "team_scores.yaml"), "-i", str(events),
                 "-o", str(out_file), "--progress-every", "0"]) == 0
    err = capsys.readouterr().err
    assert "input lines read" not in err and "20001 input lines" in err


def _migration(state: str, new_wm: int | None) -> MigrationInfo:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return MigrationInfo(
        id=3, job="scores", from_version=1, to_version=2, from_store="a", to_store="b",
        state=state, created_at=at, updated_at=at, created_by="bob",  # type: ignore[arg-type]
        replayed_files=2, total_files=5, new_watermark=new_wm, old_watermark=600_000,
        cutover_watermark=None, error=None)


def test_migration_progress_prints_changes_at_once_and_waits_between_repeats() -> None:
    import io

    now = [0.0]
    out = io.StringIO()
    progress = MigrationProgress(every_s=30, clock=lambda: now[0], stream=out)
    progress(_migration("replaying", None))
    now[0] = 10
    progress(_migration("replaying", 60_000))  # same state, too soon: nothing
    now[0] = 31
    progress(_migration("replaying", 120_000))
    now[0] = 32
    progress(_migration("caught_up", 600_000))
    assert out.getvalue().splitlines() == [
        "migration 3 of scores: replaying (watermark new -, old 1970-01-01T00:10:00.000Z, "
        "input files 2/5)",
        "migration 3 of scores: replaying for 31s (watermark new 1970-01-01T00:02:00.000Z, "
        "old 1970-01-01T00:10:00.000Z, input files 2/5)",
        "migration 3 of scores: caught_up (watermark new 1970-01-01T00:10:00.000Z, "
        "old 1970-01-01T00:10:00.000Z, input files 2/5)",
    ]
