"""Record extraction (dict records -> RecordBatch + dead letters) and the `tidemark replay`
command end to end on real files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jobs.cli import main
from jobs.definition import load_definition
from jobs.engine.extract import RecordExtractor
from jobs.replay import ReplayStats, replay_lines

DEFN = {
    "name": "team_scores",
    "key": "team",
    "event_time": "et",
    "window": {"type": "tumbling", "size": "1m"},
    "aggregations": [{"name": "total", "fn": "sum", "of": "score"}, {"name": "n", "fn": "count"}],
}


def test_event_time_forms() -> None:
    ex = RecordExtractor(load_definition(DEFN))
    recs: list[Any] = [
        {"team": "a", "score": 1, "et": "2026-01-01T12:00:30Z"},
        {"team": "a", "score": 1, "et": 1767268830000},
        {"team": "a", "score": 1, "et": datetime(2026, 1, 1, 12, 0, 30, 999_999, tzinfo=UTC)},
        {"team": "a", "score": 1, "et": "2026-01-01T13:00:30+01:00"},
    ]
    batch, dead = ex.extract(recs, processing_time=5)
    assert dead == []
    assert batch.event_times.tolist() == [1767268830000, 1767268830000, 1767268830999,
                                          1767268830000]
    assert batch.keys == ["a"] * 4 and batch.processing_time == 5
    assert list(batch.columns) == ["total"]  # count without `of` needs no column


def test_bad_records_name_the_field_and_keep_the_record() -> None:
    ex = RecordExtractor(load_definition(DEFN))
    recs: list[Any] = [
        {"team": None, "score": 1, "et": 0},
        {"team": "a", "score": 1},
        {"team": "a", "score": 1, "et": "soon"},
        {"team": "a", "score": "many", "et": 0},
        {"team": ["x"], "score": 1, "et": 0},
        "not an object",
        {"team": "b", "score": None, "et": 0},
    ]
    batch, dead = ex.extract(recs, processing_time=None, lines=[1, 2, 3, 4, 5, 6, 7])
    assert [(d.line, d.field) for d in dead] == [
        (1, "key"), (2, "event_time"), (3, "event_time"), (4, "aggregations.total"),
        (5, "key"), (6, None),
    ]
    assert all(d.field is None or d.reason.startswith(d.field) for d in dead)
    assert dead[0].record == recs[0]
    assert batch.keys == ["b"] and list(batch.columns["total"]) == [None]  # null is data


def test_processing_clock_uses_arrival_time() -> None:
    defn = load_definition({**DEFN, "event_time": "processing"})
    batch, dead = RecordExtractor(defn).extract([{"team": "a", "score": 1}], 42)
    assert dead == [] and batch.event_times.tolist() == [42]


def test_replay_lines_counts() -> None:
    stats = ReplayStats()
    out = list(replay_lines(load_definition(DEFN), [
        '{"$processing_time": "2026-01-01T12:00:00Z"}',
        '{"team": "a", "score": 2, "et": "2026-01-01T12:00:01Z"}',
        "{oops",
        "",
        '{"$watermark": 5}',
    ], stats=stats))
    assert [o["type"] for o in out] == ["dead_letter", "pane"]
    assert out[0]["line"] == 3 and out[0]["record"] == "{oops"
    assert (stats.records, stats.panes, stats.dead_letters, stats.ignored_watermarks) == (
        1, 1, 1, 1)


def _write(path: Path, lines: list[Any]) -> None:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


def test_cli_replay_writes_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.yaml").write_text(
        "name: team_scores\nkey: team\nevent_time: et\n"
        "window: {type: tumbling, size: 1m}\n"
        "aggregations: [{name: total, fn: sum, of: score}, {name: n, fn: count}]\n"
    )
    _write(tmp_path / "in.jsonl", [
        {"$processing_time": "2026-01-01T12:00:00Z"},
        {"team": "a", "score": 5, "et": "2026-01-01T12:00:30Z"},
        "not json",
        {"$processing_time": "2026-01-01T12:01:00Z"},
        {"team": "a", "score": 7, "et": "2026-01-01T12:01:30Z"},
    ])
    code = main(["replay", str(tmp_path / "d.yaml"), "--input", str(tmp_path / "in.jsonl"),
                 "--output", str(tmp_path / "out.jsonl")])
    assert code == 0
    out = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    t0 = 1767268800000
    assert out[0] == {"type": "dead_letter", "line": 3, "reason": out[0]["reason"],
                      "record": "not json"}
    assert out[1] == {
        "type": "pane", "key": "a", "window_start": t0, "window_end": t0 + 60_000,
        "timing": "ON_TIME", "pane_index": 0, "is_first": True, "is_last": True,
        "retraction": False, "values": {"total": 5, "n": 1}, "emitted_at": t0 + 60_000,
        "watermark": t0 + 90_000,
    }
    assert out[2]["window_start"] == t0 + 60_000 and out[2]["watermark"] is None
    assert len(out) == 3
    err = capsys.readouterr().err
    assert "2 records" in err and "2 panes" in err and "1 dead letters" in err

    code = main(["replay", str(tmp_path / "d.yaml"), "--input", str(tmp_path / "in.jsonl"),
                 "--output", str(tmp_path / "out2.jsonl"), "--no-eof-flush"])
    assert code == 0
    assert len((tmp_path / "out2.jsonl").read_text().splitlines()) == 2


def test_cli_replay_reports_bad_definition(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d.yaml").write_text("name: x\nwindow: {type: tumbling}\naggregations: []\n")
    (tmp_path / "in.jsonl").write_text("")
    code = main(["replay", str(tmp_path / "d.yaml"), "--input", str(tmp_path / "in.jsonl"),
                 "--output", str(tmp_path / "o.jsonl")])
    assert code == 2
    assert "window" in capsys.readouterr().err
    (tmp_path / "good.json").write_text(json.dumps(DEFN))
    code = main(["replay", str(tmp_path / "good.json"), "--input", str(tmp_path / "missing"),
                 "--output", str(tmp_path / "o.jsonl")])
    assert code == 2
    assert "missing" in capsys.readouterr().err
