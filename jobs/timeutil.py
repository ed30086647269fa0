"""Time in tidemark: UTC epoch milliseconds everywhere, and injected clocks.

Instants are ``int`` epoch milliseconds; finer input is truncated toward minus infinity (so
``-0.5 ms`` is ``-1``). Datetimes are only ever UTC-aware. Clocks are injected so that replay,
tests and the lifecycle code are deterministic.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TimeParseError(ValueError):
    """A value that is not an ISO-8601 UTC instant nor epoch milliseconds."""


def parse_instant(value: object) -> int:
    """Epoch milliseconds from an ISO-8601 string, an int/float of epoch ms, or a datetime.

    Naive ISO strings and datetimes are taken as UTC (the definition format says all times are
    UTC); strings with another offset are converted. Sub-millisecond precision is truncated
    toward minus infinity.
    """
    if isinstance(value, bool):
        raise TimeParseError(f"{value!r} is not a time")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TimeParseError(f"{value!r} is not a time")
        return math.floor(value)
    if isinstance(value, datetime):
        return datetime_to_ms(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise TimeParseError("empty string is not a time")
        try:
            return int(text)
        except ValueError:
            pass
        iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
        try:
            dt = datetime.fromisoformat(iso)
        except ValueError as exc:
            raise TimeParseError(f"{value!r} is not an ISO-8601 time or epoch ms") from exc
        return datetime_to_ms(dt)
    raise TimeParseError(f"{value!r} is not a time")


def datetime_to_ms(dt: datetime) -> int:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - _EPOCH
    # exact integer arithmetic: floor division truncates toward minus infinity
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1000


def ms_to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def ms_to_iso(ms: int) -> str:
    """``2026-01-01T00:00:00.000Z`` for display and logs."""
    dt = ms_to_datetime(ms)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


class Clock(Protocol):
    """Wall-clock source, injected wherever "now" matters."""

    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass
class ManualClock:
    """A clock tests and replay move by hand."""

    now: int = 0

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms

    def set(self, ms: int) -> None:
        self.now = ms


def utcnow() -> datetime:
    return datetime.now(tz=UTC)
