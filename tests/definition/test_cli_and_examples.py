"""``tidemark validate`` / ``tidemark store-name`` as a user runs them, and the shipped
example definitions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.cli import main
from jobs.definition import canonical_json, load_definition, store_name

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def test_validate_prints_canonical_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", str(ROOT / "examples" / "team_scores.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out)["window"] == {"type": "tumbling", "size": 120000, "align_to": 0}
    assert out.strip() == canonical_json(load_definition(
        (ROOT / "examples" / "team_scores.yaml").read_text()))


def test_validate_reports_every_error_with_exit_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nwindow: {type: hopping, size: 10m, step: 15m}\n"
                   "aggregations:\n  - {name: total, fn: sum, of: x}\n  - {name: total, fn: count}\n"
                   "key: \"reflect('java.lang.Runtime', 'getRuntime')\"\n")
    code = main(["validate", str(bad)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == f"{bad}: invalid definition (3 errors)"
    assert "  window.step: must not exceed window.size (10m); records in the gaps between " \
           "windows would be lost" in lines
    assert "  aggregations[1].name: duplicate name 'total' (also aggregations[0])" in lines
    assert any(line.startswith("  key: function reflect is not allowed") for line in lines)


def test_validate_missing_file_is_exit_1(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_store_name_command(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "examples" / "team_scores.yaml"
    assert main(["store-name", str(path)]) == 0
    assert capsys.readouterr().out.strip() == store_name(load_definition(path.read_text()))


def test_cli_as_a_subprocess_reads_stdin() -> None:
    text = (ROOT / "examples" / "user_sessions.yaml").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "jobs", "store-name", "-"], input=text, capture_output=True,
        text=True, cwd=ROOT, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("user_sessions__session_window_1800000_count_count_distinct")
    bad = subprocess.run(
        [sys.executable, "-m", "jobs", "validate", "-"], input="name: x\n",
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )
    assert bad.returncode == 2
    assert "  window: is required" in bad.stderr


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_validate_and_round_trip(path: Path) -> None:
    d = load_definition(path.read_text())
    assert d.name == path.stem
    assert load_definition(canonical_json(d)) == d


def test_examples_cover_the_spec_example_a_session_and_a_hopping_window() -> None:
    types = {load_definition(p.read_text()).window.type for p in EXAMPLES}
    assert {"tumbling", "session", "hopping"} <= types
    spec = load_definition((ROOT / "examples" / "team_scores.yaml").read_text())
    assert spec.key == "team" and spec.event_time == "et"
    assert [(a.name, a.fn, a.of) for a in spec.aggregations] == [
        ("total", "sum", "score"), ("n", "count", None)]
