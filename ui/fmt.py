"""How instants, durations and JSON values read on screen.

Stream instants are epoch ms (UTC) everywhere in tidemark; people read ISO times and "3m 20s".
Kept free of Streamlit so the rules are unit-testable.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from jobs.definition.durations import format_duration
from jobs.definition.model import INFINITE
from jobs.engine.records import key_json
from jobs.timeutil import ms_to_iso

NONE = "—"


def instant(ms: int | None) -> str:
    """``2026-01-01T00:00:00.000Z``; the dash for no value; "end of input" for +infinity."""
    if ms is None:
        return NONE
    if ms >= INFINITE:
        return "end of input"
    return ms_to_iso(ms)


def when(dt: datetime | None) -> str:
    if dt is None:
        return NONE
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(ms: int | None) -> str:
    if ms is None:
        return NONE
    if ms < 0:
        return "-" + format_duration(-ms)
    return format_duration(ms)


def lag(ms: int | None) -> str:
    """Watermark lag, rounded to what a person cares about (seconds once above a minute)."""
    if ms is None:
        return NONE
    if abs(ms) >= 60_000:
        ms = (ms // 1000) * 1000
    return duration(ms)


def key(value: Any) -> str:
    """A window key as JSON text, so ``None`` (the global key), ``"1"`` and ``1`` stay apart:
    the one key text (:func:`jobs.engine.records.key_json`) the job and the catalog use."""
    return key_json(value)


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def rate(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:,.1f}/s"


def size(n_bytes: int | None) -> str:
    if n_bytes is None:
        return NONE
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n_bytes} B"


_DURATION_LEAVES = frozenset({"size", "step", "gap", "delay", "allowed_lateness", "after",
                              "every", "duration"})


def change_value(path: str, value: Any) -> str:
    """A changed definition value as a person reads it: canonical definitions hold durations
    and alignments in ms, so ``window.size`` 120000 reads ``2m`` and ``align_to`` an ISO time."""
    leaf = path.rsplit(".", 1)[-1]
    if isinstance(value, int) and not isinstance(value, bool):
        if leaf in _DURATION_LEAVES:
            return duration(value)
        if leaf == "align_to":
            return instant(value)
    return compact_json(value)
