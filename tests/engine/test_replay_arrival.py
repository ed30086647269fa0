"""``tidemark replay --arrival``: a plain log is one record at a time; ``batch`` / ``batch:N``
mirror a job's micro-batches (docs/semantics.md, "Arrival model")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.cli import main
from jobs.definition import load_definition
from jobs.engine.arrival import Arrival
from jobs.engine.errors import EngineError
from jobs.replay import replay_lines

DEFN = ("name: arrival\nkey: k\nevent_time: t\n"
        "watermark: {strategy: bounded, delay: 0s}\nlateness_basis: event\n"
        "window: {type: tumbling, size: 100ms}\naggregations: [{name: n, fn: count}]\n")
LOG = [{"k": "a", "t": 10}, {"k": "a", "t": 30}, {"k": "b", "t": 20}]


def _replay(tmp_path: Path, *extra: str) -> list[dict[str, object]]:
    (tmp_path / "d.yaml").write_text(DEFN)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(x) + "\n" for x in LOG))
    out = tmp_path / "out.jsonl"
    assert main(["replay", str(tmp_path / "d.yaml"), "--input", str(tmp_path / "in.jsonl"),
                 "--output", str(out), *extra]) == 0
    return [json.loads(x) for x in out.read_text().splitlines()]


def test_plain_log_judges_each_record_against_the_watermark_before_it(tmp_path: Path) -> None:
    out = _replay(tmp_path)
    assert [(o["type"], o["key"]) for o in out] == [("late", "b"), ("pane", "a")]
    assert out[1]["values"] == {"n": 2}


def test_one_micro_batch_judges_all_its_records_against_the_watermark_before_it(
    tmp_path: Path,
) -> None:
    out = _replay(tmp_path, "--arrival", "batch")
    assert [(o["type"], o["key"], o["values"]) for o in out] == [
        ("pane", "a", {"n": 2}), ("pane", "b", {"n": 1})]


def test_micro_batches_of_n_records(tmp_path: Path) -> None:
    # [a@10, a@30] then [b@20]: the first batch moved the watermark to 30
    out = _replay(tmp_path, "--arrival", "batch:2")
    assert [(o["type"], o["key"]) for o in out] == [("late", "b"), ("pane", "a")]
    assert [o["type"] for o in _replay(tmp_path, "--arrival", "batch:3")] == ["pane", "pane"]
    out = _replay(tmp_path, "--arrival", "batch:1")
    assert [(o["type"], o["key"]) for o in out] == [("late", "b"), ("pane", "a")]


def test_a_bad_arrival_is_refused_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "d.yaml").write_text(DEFN)
    (tmp_path / "in.jsonl").write_text("")
    assert main(["replay", str(tmp_path / "d.yaml"), "--input", str(tmp_path / "in.jsonl"),
                 "--output", str(tmp_path / "o"), "--arrival", "batch:0"]) == 2
    assert "--arrival" in capsys.readouterr().err
    with pytest.raises(EngineError, match="arrival"):
        Arrival.parse("files")


def test_dead_letters_keep_their_place_between_single_record_units() -> None:
    defn = load_definition(DEFN.replace("delay: 0s", "delay: 1h"))
    lines = [json.dumps(LOG[0]), "not json", json.dumps(LOG[1])]
    out = list(replay_lines(defn, lines))
    assert [o["type"] for o in out] == ["dead_letter", "pane"]
    assert out[0]["line"] == 2
    # in one micro-batch the dead letter still comes first: it precedes the unit's output
    out = list(replay_lines(defn, lines, arrival=Arrival("batch")))
    assert [o["type"] for o in out] == ["dead_letter", "pane"]
