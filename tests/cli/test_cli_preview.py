"""``tidemark preview``: the definition replayed over its source's first records cut into the
job's micro-batches (files: ``maxFilesPerTrigger`` files each), or over a JSONL file whose
``$processing_time`` lines end the micro-batches; stderr names the arrival model used."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jobs.cli import main
from jobs.definition import load_definition
from jobs.engine.arrival import Arrival
from jobs.replay import replay_lines

Shell = Callable[..., subprocess.CompletedProcess[str]]

FILES = [
    [{"team": "a", "score": 1, "et": "2026-01-01T00:00:50Z"},
     {"team": "a", "score": 2, "et": "2026-01-01T00:00:10Z"}],  # one micro-batch: not late
    [{"team": "a", "score": 4, "et": "2026-01-01T00:00:20Z"},  # a later batch: watermark
     {"team": "b", "score": 8, "et": "2026-01-01T00:01:30Z"}],  # 00:50 makes it late
]


def _setup(tmp: Path, files_per_trigger: str | None = None) -> Path:
    root = tmp / "in"
    root.mkdir()
    for i, rows in enumerate(FILES):  # names against modification order: order is by mtime
        p = root / f"part-{9 - i}.json"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        os.utime(p, (1_700_000_000 + i, 1_700_000_000 + i))
    source: dict[str, Any] = {"kind": "files", "path": str(root), "format": "json",
                              "schema": "team STRING, score INT, et TIMESTAMP"}
    if files_per_trigger is not None:
        source["options"] = {"maxFilesPerTrigger": files_per_trigger}
    spec = {"name": "scores", "source": source, "key": "team", "event_time": "et",
            "watermark": {"delay": "0s"}, "lateness_basis": "event", "allowed_lateness": "0s",
            "window": {"type": "tumbling", "size": "1m"},
            "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                             {"name": "n", "fn": "count"}]}
    path = tmp / "scores.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def _in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> subprocess.CompletedProcess[str]:
    """``tidemark ARGS`` through ``main``, the entry function the shell calls (a fresh Python
    per case costs seconds; the first test runs the command from the shell)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), code, out, err)


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_one_file_a_batch_makes_the_later_files_record_late(
        tidemark: Shell, tmp_path: Path) -> None:
    path = _setup(tmp_path)
    res = tidemark("preview", str(path))
    assert res.returncode == 0, res.stderr
    out = _lines(res.stdout)
    late = [(o["key"], o["event_time"]) for o in out if o["type"] == "late"]
    assert late == [("a", 1_767_225_620_000)]  # a@00:20, judged after the batch of a@00:50
    defn = load_definition(path.read_text(encoding="utf-8"))
    want = list(replay_lines(defn, [*FILES[0], {"$processing_time": 0}, *FILES[1]],
                             arrival=Arrival("batch")))
    assert out == json.loads(json.dumps(want))
    assert "micro-batches" in res.stderr and "maxFilesPerTrigger" in res.stderr
    assert "4 records" in res.stderr and "replay --arrival batch" in res.stderr


def test_files_per_trigger_puts_both_files_in_one_batch(
        db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _in_process(capsys, "preview", str(_setup(tmp_path, files_per_trigger="2")))
    assert res.returncode == 0, res.stderr
    out = _lines(res.stdout)
    assert [o for o in out if o["type"] == "late"] == []
    panes = {(o["key"], o["window_start"]): o["values"] for o in out if o["type"] == "pane"}
    assert panes[("a", 1_767_225_600_000)] == {"total": 7, "n": 3}
    assert "one per 2 files" in res.stderr


def test_limit_takes_the_first_records_in_modification_order(
        db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _in_process(capsys, "preview", str(_setup(tmp_path)), "--limit", "2")
    assert res.returncode == 0, res.stderr
    panes = [o for o in _lines(res.stdout) if o["type"] == "pane"]
    assert [(p["key"], p["values"]) for p in panes] == [("a", {"total": 3, "n": 2})]
    assert "2 records" in res.stderr


def test_input_file_is_cut_at_processing_time_lines_as_replay_batch(
        db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _setup(tmp_path)
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in
                              [*FILES[0], {"$processing_time": 1000}, *FILES[1]]),
                      encoding="utf-8")
    res = _in_process(capsys, "preview", str(path), "--input", str(sample))
    assert res.returncode == 0, res.stderr
    replay = _in_process(capsys, "replay", str(path), "--input", str(sample), "--output", "-",
                      "--arrival", "batch")
    assert replay.returncode == 0, replay.stderr
    assert _lines(res.stdout) == _lines(replay.stdout)
    assert any(o["type"] == "late" for o in _lines(res.stdout))
    assert "$processing_time" in res.stderr


def test_errors_are_one_line_with_an_exit_code(
        tidemark: Shell, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first error from the shell (the process end to end), the others through the entry
    function the shell calls (a fresh Python each costs seconds)."""
    path = _setup(tmp_path)
    for f in (tmp_path / "in").iterdir():
        f.unlink()
    empty = tidemark("preview", str(path))
    assert empty.returncode == 1
    assert empty.stderr.strip().splitlines() == [
        f"tidemark: source: no records to preview in files source {str(tmp_path / 'in')!r}"]
    assert main(["preview", str(tmp_path / "nope.yaml")]) == 1
    missing = capsys.readouterr().err
    assert "nope.yaml" in missing and "Traceback" not in missing
    assert main(["preview", str(path), "--limit", "0"]) == 1
    assert "--limit" in capsys.readouterr().err
