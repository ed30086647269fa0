"""Definition mappings -> ``Definition`` for engine tests.

Uses the real :func:`jobs.definition.load_definition` once it exists (so transcripts also check
the definition format); until then a small builder reads the same mapping format with the
subset of forms transcripts use (durations like ``10s``/``2m``/``500ms``/ints, ISO instants).
"""

from __future__ import annotations

import re
from typing import Any

from jobs.definition.model import (
    INFINITE,
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.timeutil import parse_instant

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _dur(value: Any) -> int:
    if value == "infinite":
        return INFINITE
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)", str(value).strip())
    if not m:
        raise ValueError(f"unsupported duration {value!r} in test fallback")
    return int(m.group(1)) * _UNITS[m.group(2)]


def _fallback(m: dict[str, Any]) -> Definition:
    w = m["window"]
    window = Window(
        type=w["type"],
        size=_dur(w["size"]) if "size" in w else None,
        step=_dur(w["step"]) if "step" in w else None,
        gap=_dur(w["gap"]) if "gap" in w else None,
        align_to=parse_instant(w.get("align_to", 0)),
    )
    wm = m.get("watermark", {})
    watermark = Watermark(
        strategy=wm.get("strategy", "bounded"),
        delay=_dur(wm.get("delay", 0)),
        scope=wm.get("scope", "global"),
        idle_advance=bool(wm.get("idle_advance", False)),
    )
    t = m.get("trigger", {})
    early = None
    if t.get("early"):
        e = t["early"]
        if "after" in e:
            early = EarlyTrigger(kind="after", duration=_dur(e["after"]))
        elif "every" in e:
            early = EarlyTrigger(
                kind="every", duration=_dur(e["every"]), align_to=parse_instant(e.get("align_to", 0))
            )
        else:
            early = EarlyTrigger(kind="count", count=int(e["count"]))
    late = None
    if t.get("late"):
        lt = t["late"]
        late = (
            LateTrigger(kind="after", duration=_dur(lt["after"]))
            if "after" in lt
            else LateTrigger(kind="count", count=int(lt.get("count", 1)))
        )
    emit = t.get("emit", "custom" if ("early" in t or "late" in t or "on_time" in t) else "final")
    allowed = _dur(m.get("allowed_lateness", 0))
    if emit == "custom" and late is None and "late" not in t and allowed > 0:
        late = LateTrigger(kind="count", count=1)
    trigger = Trigger(emit=emit, early=early, on_time=bool(t.get("on_time", True)), late=late)
    aggs = tuple(
        Aggregation(name=a["name"], fn=a["fn"], of=a.get("of")) for a in m["aggregations"]
    )
    return Definition(
        name=m.get("name", "transcript"),
        window=window,
        aggregations=aggs,
        key=m.get("key"),
        event_time=m.get("event_time", "processing"),
        watermark=watermark,
        allowed_lateness=allowed,
        lateness_basis=m.get("lateness_basis", "window"),
        trigger=trigger,
        accumulation=m.get("accumulation", "accumulating"),
    )


def definition_from_mapping(mapping: dict[str, Any]) -> Definition:
    """The ``Definition`` a transcript's ``definition:`` mapping describes."""
    m = dict(mapping)
    m.setdefault("name", "transcript")
    try:
        from jobs.definition import load_definition  # type: ignore[attr-defined]
    except ImportError:
        return _fallback(m)
    result: Definition = load_definition(m)
    return result
