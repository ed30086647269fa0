"""A realistic stream of landing files for the demo and for end-to-end tests.

Real streams are not tidy: events arrive a little out of order, some arrive minutes late, a few
are malformed. The generator lands one JSON-lines file per tick into each job's landing
directory, writing to a hidden temporary name and renaming, so Spark's file source never reads a
half-written file; a stream named in ``publish`` goes to a Kafka topic instead. Randomness and time are injected, so tests get the same files every run.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from jobs.timeutil import Clock, ms_to_iso

Event = dict[str, object]


@dataclass(frozen=True)
class Disorder:
    """How late events arrive, as shares of all events."""

    jitter_ms: int = 5_000
    """Most events are up to this much behind the clock (ordinary out-of-orderness)."""
    straggler_share: float = 0.05
    straggler_ms: int = 90_000
    """Stragglers are up to this much behind: past a tight watermark, inside allowed lateness."""
    very_late_share: float = 0.01
    very_late_ms: int = 600_000
    """Very late events miss every window's allowed lateness and land in the late output."""
    malformed_share: float = 0.005


def _lag(rng: random.Random, d: Disorder) -> int:
    roll = rng.random()
    if roll < d.very_late_share:
        return rng.randint(d.straggler_ms, d.very_late_ms)
    if roll < d.very_late_share + d.straggler_share:
        return rng.randint(d.jitter_ms, d.straggler_ms)
    return rng.randint(0, d.jitter_ms)


def team_scores(rng: random.Random, t: int) -> Event:
    team = rng.choice(["red", "blue", "green", "gold", "teal"])
    return {"team": team, "user": f"{team}-{rng.randint(1, 8)}", "score": rng.randint(1, 20),
            "et": ms_to_iso(t)}


SENSORS = 6
SENSOR_CYCLE_MS = 180_000
SENSOR_ACTIVE_MS = 100_000
"""Each sensor reports for 100 s, then is quiet for 80 s (its phase shifted by 30 s per sensor,
so three or four report at any time). The quiet spell is longer than the demo's 1 minute
session gap: without it every sensor would hold one session that never ends, and a session
job would never emit anything."""


def active_sensors(t: int) -> list[str]:
    """The sensors reporting at event time ``t`` (never empty)."""
    shift = SENSOR_CYCLE_MS // SENSORS
    return [f"s{k + 1}" for k in range(SENSORS)
            if (t + k * shift) % SENSOR_CYCLE_MS < SENSOR_ACTIVE_MS]


def sensor_readings(rng: random.Random, t: int) -> Event:
    sensor = rng.choice(active_sensors(t))
    return {"sensor": sensor, "temp": round(rng.gauss(21.0, 2.5), 2), "et": ms_to_iso(t)}


def page_views(rng: random.Random, t: int) -> Event:
    page = rng.choice(["/", "/pricing", "/docs", "/blog", "/signup", "/login"])
    return {"page": page, "user": f"u{rng.randint(1, 500)}", "et": ms_to_iso(t)}


STREAMS: dict[str, Callable[[random.Random, int], Event]] = {
    "team_scores": team_scores,
    "sensor_readings": sensor_readings,
    "page_views": page_views,
}

_MALFORMED = (
    "{not json",
    '{"et": "yesterday-ish"}',
    '{"score": 3}',
)


@dataclass
class Generator:
    """Lands ``events_per_tick`` events per stream into ``root/<stream>/`` on every tick."""

    root: Path
    clock: Clock
    seed: int = 7
    events_per_tick: int = 50
    disorder: Disorder = field(default_factory=Disorder)
    streams: tuple[str, ...] = tuple(STREAMS)
    publish: dict[str, Callable[[list[str]], None]] = field(default_factory=dict)
    """Streams that go to a Kafka topic instead of files: stream -> the function that sends a
    tick's lines (the demo's producer, jobs/demo/kafka.py)."""
    _rng: random.Random = field(init=False)
    _ticks: int = field(init=False, default=0)
    counts: dict[str, int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def lines(self, stream: str, now_ms: int) -> Iterator[str]:
        make = STREAMS[stream]
        for _ in range(self.events_per_tick):
            if self._rng.random() < self.disorder.malformed_share:
                self.counts["malformed"] = self.counts.get("malformed", 0) + 1
                yield self._rng.choice(_MALFORMED)
                continue
            yield json.dumps(make(self._rng, now_ms - _lag(self._rng, self.disorder)))

    def tick(self) -> list[Path]:
        """Write one file per stream (or send its lines to its topic); return the files."""
        now = self.clock.now_ms()
        written = []
        for stream in self.streams:
            if stream in self.publish:
                self.publish[stream](list(self.lines(stream, now)))
                self.counts[stream] = self.counts.get(stream, 0) + self.events_per_tick
                continue
            directory = self.root / stream
            directory.mkdir(parents=True, exist_ok=True)
            name = f"{now:015d}-{self._ticks:06d}.json"
            tmp = directory / f".{name}.tmp"
            tmp.write_text("\n".join(self.lines(stream, now)) + "\n", encoding="utf-8")
            os.replace(tmp, directory / name)
            self.counts[stream] = self.counts.get(stream, 0) + self.events_per_tick
            written.append(directory / name)
        self._ticks += 1
        return written
