"""The canonical form of a definition: what the catalog stores and what hashes are taken of.

Two definitions that mean the same thing have the same canonical JSON, whatever their YAML
looked like (key order, ``2m`` vs ``120000`` vs ``PT2M``, omitted defaults). And
``load_definition(canonical_json(d)) == d`` for every valid ``d``, so the stored form is a
definition in its own right. Rules:

* sorted keys, compact separators, UTF-8 (``ensure_ascii=False``);
* every default filled in; durations and instants as ``int`` milliseconds, ``INFINITE`` as
  the string ``"infinite"``;
* the window holds its type and that kind's parameters only (``jobs.definition.windows``);
* the trigger keeps its shorthand as written (``{"emit": "final"}``); only ``custom`` lists
  ``early``, ``on_time`` and ``late`` (``false`` where there is none, so the ``late`` default
  is not re-applied on reload);
* a definition written without a ``source`` has ``"source": null``;
* SQL expressions are kept as written (trimmed); the store hash normalises them instead.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from jobs.definition.model import INFINITE, Definition, EarlyTrigger, LateTrigger, Sink, Source
from jobs.definition.windows import window_kind


def _ms(value: int) -> int | str:
    return "infinite" if value == INFINITE else value


def _early(early: EarlyTrigger | None) -> dict[str, Any] | bool:
    if early is None:
        return False
    if early.kind == "count":
        return {"count": early.count}
    if early.kind == "every":
        return {"every": early.duration, "align_to": early.align_to}
    return {"after": early.duration}


def _late(late: LateTrigger | None) -> dict[str, Any] | bool:
    if late is None:
        return False
    if late.kind == "count":
        return {"count": late.count}
    return {"after": late.duration}


def _source(source: Source) -> dict[str, Any] | None:
    if source == Source():
        return None
    out: dict[str, Any] = {"kind": source.kind, "options": dict(source.options)}
    if source.kind == "files":
        out.update(path=source.path, format=source.format, schema=source.schema)
    elif source.kind == "kafka":
        out.update(format=source.format, schema=source.schema)
    return out


def _sink(sink: Sink) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": sink.kind, "path": sink.path}
    if sink.kind == "kafka":
        out.update(topic=sink.topic, options=dict(sink.options), late_topic=sink.late_topic,
                   dead_letter_topic=sink.dead_letter_topic)
    return out


def to_canonical(defn: Definition) -> dict[str, Any]:
    """The canonical mapping (JSON types only)."""
    window = window_kind(defn.window).canonical()
    t = defn.trigger
    trigger: dict[str, Any] = {"emit": t.emit}
    if t.emit == "custom":
        trigger.update(early=_early(t.early), on_time=t.on_time, late=_late(t.late))
    return {
        "name": defn.name,
        "description": defn.description,
        "source": _source(defn.source),
        "key": defn.key,
        "event_time": defn.event_time,
        "watermark": {
            "strategy": defn.watermark.strategy,
            "delay": _ms(defn.watermark.delay),
            "scope": defn.watermark.scope,
            "idle_advance": defn.watermark.idle_advance,
        },
        "window": window,
        "allowed_lateness": _ms(defn.allowed_lateness),
        "lateness_basis": defn.lateness_basis,
        "trigger": trigger,
        "accumulation": defn.accumulation,
        "aggregations": [{"name": a.name, "fn": a.fn, "of": a.of} for a in defn.aggregations],
        "sink": _sink(defn.sink),
    }


def dumps(value: Any) -> str:
    """The one JSON spelling used for canonical text and hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(defn: Definition) -> str:
    return dumps(to_canonical(defn))


def spec_hash(defn: Definition) -> str:
    """sha256 hex of :func:`canonical_json` (identifies one exact version of a definition)."""
    return hashlib.sha256(canonical_json(defn).encode("utf-8")).hexdigest()
