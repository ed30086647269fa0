"""The demo stream is realistic (out of order, late, malformed) and deterministic, and the
engine copes with it: every well-formed event ends up in a pane or in the late output, every
malformed line in the dead letters."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.definition import load_definition
from jobs.demo.generator import Disorder, Generator
from jobs.replay import replay_lines
from jobs.timeutil import ManualClock, parse_instant

SPECS = Path(__file__).resolve().parents[2] / "jobs" / "demo" / "specs"
START = parse_instant("2026-11-22T10:00:00Z")


def _land(tmp_path: Path, ticks: int, seed: int = 3) -> tuple[Generator, list[tuple[int, Path]]]:
    clock = ManualClock(START)
    gen = Generator(tmp_path, clock, seed=seed, events_per_tick=40,
                    disorder=Disorder(malformed_share=0.05, very_late_share=0.05))
    landed = []
    for _ in range(ticks):
        landed += [(clock.now_ms(), p) for p in gen.tick()]
        clock.advance(5_000)
    return gen, landed


def test_same_seed_same_files_and_no_partial_files(tmp_path: Path) -> None:
    _, a = _land(tmp_path / "a", 4)
    _, b = _land(tmp_path / "b", 4)
    assert [p.read_text() for _, p in a] == [p.read_text() for _, p in b]
    assert not list(tmp_path.rglob(".*.tmp")), "temporary files must be renamed into place"


def test_stream_is_out_of_order_with_late_and_malformed_events(tmp_path: Path) -> None:
    gen, landed = _land(tmp_path, 20)
    times, malformed = [], 0
    for _, path in landed:
        if path.parent.name != "team_scores":
            continue
        for line in path.read_text().splitlines():
            try:
                obj = json.loads(line)
                times.append(parse_instant(obj["et"]))
            except (ValueError, KeyError):
                malformed += 1
    assert 0 < malformed <= gen.counts["malformed"]
    inversions = sum(1 for a, b in zip(times, times[1:], strict=False) if b < a)
    assert inversions > len(times) // 10, "events should arrive out of order"
    assert max(times) - min(times) > 5 * 60_000, "some events should be minutes late"


def test_replay_of_demo_stream_loses_nothing(tmp_path: Path) -> None:
    _, landed = _land(tmp_path, 30)
    lines: list[str] = []
    for at, path in landed:
        if path.parent.name == "team_scores":
            lines.append(json.dumps({"$processing_time": at}))
            lines += path.read_text().splitlines()
    defn = load_definition((SPECS / "team_scores.yaml").read_text())
    out = list(replay_lines(defn, lines))
    panes = [o for o in out if o["type"] == "pane"]
    late = [o for o in out if o["type"] == "late"]
    dead = [o for o in out if o["type"] == "dead_letter"]
    n_good = 0
    for x in lines:
        if x.startswith('{"$'):
            continue
        try:
            obj = json.loads(x)
            parse_instant(obj["et"])
            n_good += obj.get("team") is not None
        except (ValueError, KeyError):
            pass
    assert n_good and dead, "the stream carries malformed lines and they are dead-lettered"
    assert {p["timing"] for p in panes} >= {"EARLY", "ON_TIME", "LATE"}
    # every event is counted exactly once in the last pane of its window, or reported late
    last = {}
    for p in panes:
        last[(p["key"], p["window_start"])] = p
    counted = sum(p["values"]["events"] for p in last.values())
    assert counted + len(late) == n_good
    assert len(dead) == len(lines) - len([x for x in lines if x.startswith('{"$')]) - n_good


def test_sensor_sessions_end_and_are_emitted(tmp_path: Path) -> None:
    """Sensors go quiet for longer than the session gap, so sessions close and the session
    job has something to show within a few minutes (a sensor that never pauses would hold one
    session forever)."""
    _, landed = _land(tmp_path, 100)  # 100 ticks of 5 s: 8 minutes 20 s
    lines: list[str] = []
    for at, path in landed:
        if path.parent.name == "sensor_readings":
            lines.append(json.dumps({"$processing_time": at}))
            lines += path.read_text().splitlines()
    defn = load_definition((SPECS / "sensor_sessions.yaml").read_text())
    gap = 60_000
    panes = [o for o in replay_lines(defn, lines) if o["type"] == "pane"]
    assert panes, "closed sessions are emitted"
    per_sensor: dict[str, list[dict[str, object]]] = {}
    for p in panes:
        per_sensor.setdefault(str(p["key"]), []).append(p)
    assert len(per_sensor) >= 4, per_sensor.keys()
    assert any(len(ps) >= 2 for ps in per_sensor.values()), "a sensor reports again after a pause"
    for ps in per_sensor.values():
        ends = sorted((int(str(p["window_start"])), int(str(p["window_end"]))) for p in ps)
        for (_, end), (start, _) in zip(ends, ends[1:], strict=False):
            assert start >= end, "sessions of one sensor do not overlap"
        assert all(end - start >= gap for start, end in ends)
