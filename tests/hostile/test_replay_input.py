"""Hostile replay input: every line is counted in a pane, reported late, or sent to dead
letters with its reason; no line stops the run, and no record vanishes without a trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.cli import main
from jobs.definition import load_definition
from jobs.replay import MAX_RECORD_DEPTH, ReplayStats, replay_lines

DEFINITION = """\
name: hostile
key: team
event_time: et
window: {type: tumbling, size: 1m}
aggregations:
  - {name: s, fn: sum, of: score}
  - {name: m, fn: mean, of: score}
  - {name: n, fn: count}
"""
GOOD = b'{"team":"a","et":1000,"score":1}\n'


def replay(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str],
           definition: str = DEFINITION) -> tuple[list[dict[str, Any]], str]:
    """Run ``tidemark replay`` on ``data``; the output lines (parsed) and the summary."""
    (tmp_path / "d.yaml").write_text(definition, encoding="utf-8")
    (tmp_path / "in.jsonl").write_bytes(data)
    out = tmp_path / "out.jsonl"
    code = main(["replay", str(tmp_path / "d.yaml"), "-i", str(tmp_path / "in.jsonl"),
                 "-o", str(out)])
    assert code == 0
    text = out.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    for line in text.splitlines():  # strict JSON: no NaN / Infinity literals
        json.loads(line, parse_constant=_reject)
    return lines, capsys.readouterr().err


def _reject(name: str) -> Any:
    raise AssertionError(f"bare {name} in output")


def dead(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if x["type"] == "dead_letter"]


def pane_counts(lines: list[dict[str, Any]]) -> list[int]:
    return [x["values"]["n"] for x in lines if x["type"] == "pane"]


def test_a_raw_invalid_utf8_byte_is_one_dead_letter_and_the_run_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = GOOD + b'{"team":"\xff","et":2000,"score":1}\n' + GOOD
    lines, summary = replay(tmp_path, data, capsys)
    [letter] = dead(lines)
    assert letter["line"] == 2
    assert "not UTF-8" in letter["reason"] and "0xff" in letter["reason"]
    assert pane_counts(lines) == [2]
    assert "3 input lines, 2 records: 1 panes, 0 late records, 1 dead letters" in summary


def test_an_invalid_byte_in_the_first_kilobytes_does_not_lose_the_lines_before_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = GOOD * 500 + b"\xc3\x28\n" + GOOD
    lines, _ = replay(tmp_path, data, capsys)
    assert pane_counts(lines) == [501]
    assert [d["line"] for d in dead(lines)] == [501]


def test_a_lone_surrogate_is_a_dead_letter_not_a_crash_when_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = GOOD + b'{"team":"\\ud800","et":2000,"score":1}\n' + b'{"team":"\\ud83d\\ude00","et":2000,"score":1}\n'
    lines, _ = replay(tmp_path, data, capsys)
    [letter] = dead(lines)
    assert letter["line"] == 2 and "surrogate" in letter["reason"]
    assert sorted(x["key"] for x in lines if x["type"] == "pane") == ["a", "\U0001f600"]


@pytest.mark.parametrize("depth", [MAX_RECORD_DEPTH + 1, 1000, 50_000])
def test_a_record_nested_too_deep_is_a_dead_letter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int) -> None:
    data = GOOD + b'{"team":"a","et":2000,"x":' + b"[" * depth + b"]" * depth + b"}\n"
    lines, _ = replay(tmp_path, data, capsys)
    [letter] = dead(lines)
    assert f"deeper than {MAX_RECORD_DEPTH}" in letter["reason"]
    assert pane_counts(lines) == [1]


def test_a_record_nested_to_the_limit_is_a_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    depth = MAX_RECORD_DEPTH - 1
    data = GOOD + b'{"team":"a","et":2000,"x":' + b"[" * depth + b"]" * depth + b"}\n"
    lines, _ = replay(tmp_path, data, capsys)
    assert dead(lines) == [] and pane_counts(lines) == [2]


@pytest.mark.parametrize("et", [
    b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809", b"1e300",
    b"-1e300", b"253402300800000", b'"99999999999999999999"',
])
def test_an_event_time_outside_the_representable_range_is_a_dead_letter_with_that_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], et: bytes) -> None:
    data = GOOD + b'{"team":"a","et":' + et + b',"score":1}\n'
    lines, summary = replay(tmp_path, data, capsys)
    [letter] = dead(lines)
    assert letter["line"] == 2
    assert "event_time" in letter["reason"] and "representable range" in letter["reason"]
    assert "1 dead letters" in summary


def test_the_last_representable_instant_is_a_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b'{"team":"a","et":"9999-12-31T23:59:59.999Z","score":1}\n'
    lines, _ = replay(tmp_path, data, capsys)
    assert dead(lines) == [] and pane_counts(lines) == [1]


def test_a_record_whose_windows_would_pass_the_bound_range_is_a_dead_letter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = DEFINITION.replace("size: 1m", "size: 4611586018427387904")
    data = b'{"team":"a","et":253402300799999,"score":1}\n' + GOOD
    lines, _ = replay(tmp_path, data, capsys, huge)
    [letter] = dead(lines)
    assert "window bounds" in letter["reason"]
    assert pane_counts(lines) == [1]


def test_an_integer_beyond_64_bits_under_sum_and_mean_is_a_dead_letter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = GOOD + b'{"team":"a","et":2000,"score":1' + b"0" * 309 + b"}\n"
    lines, _ = replay(tmp_path, data, capsys)
    [letter] = dead(lines)
    assert "64-bit integer range" in letter["reason"]
    assert pane_counts(lines) == [1]


def test_an_integer_of_5000_digits_is_a_dead_letter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = GOOD + b'{"team":"a","et":2000,"score":' + b"9" * 5000 + b"}\n"
    lines, _ = replay(tmp_path, data, capsys)
    [letter] = dead(lines)
    assert letter["line"] == 2
    assert pane_counts(lines) == [1]


@pytest.mark.parametrize("control", [b'{"$processing_time":1e300}',
                                     b'{"$watermark":99999999999999999999999}'])
def test_a_control_instant_outside_the_range_is_a_dead_letter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], control: bytes) -> None:
    lines, _ = replay(tmp_path, control + b"\n" + GOOD, capsys)
    [letter] = dead(lines)
    assert letter["line"] == 1 and "representable range" in letter["reason"]
    assert pane_counts(lines) == [1]


def test_a_processing_time_that_goes_back_is_reported_and_does_not_change_the_results() -> None:
    defn = load_definition(DEFINITION + "trigger: current\n")
    record: dict[str, Any] = {"team": "a", "et": 1000, "score": 1}
    with_back: list[dict[str, Any]] = [{"$processing_time": 5000}, record, {"$processing_time": 1000}, record]
    without: list[dict[str, Any]] = [{"$processing_time": 5000}, record, record]
    out_with = list(replay_lines(defn, with_back))
    out_without = list(replay_lines(defn, without))
    [letter] = [x for x in out_with if x["type"] == "dead_letter"]
    assert letter["line"] == 3 and "goes back" in letter["reason"]
    assert [x for x in out_with if x["type"] != "dead_letter"] == out_without


def test_every_input_line_is_accounted_for() -> None:
    """records = panes' counts + late + dead letters that are records: nothing vanishes."""
    defn = load_definition(DEFINITION)
    lines: list[Any] = [
        b'{"team":"a","et":1000,"score":1}', b'{"team":"\xff"}', b'{"team":"a","et":9223372036854775807}',
        b'{"team":"a","et":1e300}', b"[1,2]", b"not json", b'{"team":"\\udfff","et":1}',
        b'{"team":"b","et":2000,"score":2.5}',
    ]
    stats = ReplayStats()
    out = list(replay_lines(defn, lines, stats=stats))
    counted = sum(x["values"]["n"] for x in out if x["type"] == "pane")
    assert counted + stats.dead_letters == len(lines)
    assert stats.dead_letters == 6


@pytest.mark.parametrize("engine", ["general", "vectorized"])
def test_non_finite_numbers_are_written_as_strings_by_both_engines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str) -> None:
    definition = ("name: nf\nkey: k\nevent_time: et\nwindow: {type: tumbling, size: 1m}\n"
                  "aggregations: [{name: n, fn: count}, {name: s, fn: sum, of: v}]\n")
    (tmp_path / "d.yaml").write_text(definition, encoding="utf-8")
    (tmp_path / "in.jsonl").write_text(
        '{"k":NaN,"et":1,"v":1.5}\n{"k":Infinity,"et":1,"v":Infinity}\n'
        '{"k":"NaN","et":1,"v":2}\n{"k":-Infinity,"et":1,"v":-Infinity}\n', encoding="utf-8")
    assert main(["replay", str(tmp_path / "d.yaml"), "-i", str(tmp_path / "in.jsonl"),
                 "-o", str(tmp_path / "out.jsonl"), "--engine", engine]) == 0
    text = (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    panes = [json.loads(line, parse_constant=_reject) for line in text.splitlines()]
    got = sorted((json.dumps(p["key"]), json.dumps(p["values"])) for p in panes)
    assert got == sorted([
        ('"NaN"', '{"n": 1, "s": 1.5}'),  # the NaN key
        ('"NaN"', '{"n": 1, "s": 2}'),  # the string key "NaN": another key, same text
        ('"Infinity"', '{"n": 1, "s": "Infinity"}'),
        ('"-Infinity"', '{"n": 1, "s": "-Infinity"}'),
    ])
