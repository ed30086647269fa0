"""The definition form's model: what the widgets hold, and how it maps to a definition.

The form edits a flat model (field path -> text/bool, plus a list of aggregation rows) rather
than a :class:`~jobs.definition.model.Definition`, because while someone types, the content is
usually *not* a valid definition yet, and we still want to show every field error next to its
field. The model is turned into the documented YAML shape (``raw_from_form``) and validated by
``jobs.definition``; field paths in the model are the same paths the validator reports
(``window.size``, ``aggregations[1].of``), so errors land next to the right widget.

Loading goes the other way: a stored version (canonical JSON, durations in ms) is loaded with
``load_definition`` and rendered back in human units (``raw_from_definition``) so that an editor
sees ``2m`` and not ``120000``.

Pure: no Streamlit here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

from jobs.definition.durations import format_duration
from jobs.definition.errors import FieldError
from jobs.definition.model import PROCESSING, Definition
from jobs.definition.windows import WINDOW_TYPES, kind_class, param_names
from jobs.timeutil import ms_to_iso

Model = dict[str, Any]

CHOICES: dict[str, list[str]] = {
    "source.kind": ["files", "kafka", "rate"],
    "source.format": ["json", "csv", "parquet"],
    "watermark.strategy": ["bounded", "source"],
    "watermark.scope": ["global", "key"],
    "window.type": list(WINDOW_TYPES),
    "lateness_basis": ["window", "event"],
    "trigger.emit": ["final", "current", "custom"],
    "trigger.early.kind": ["none", "after", "every", "count"],
    "trigger.late.kind": ["none", "count", "after"],
    "accumulation": ["discarding", "accumulating", "retracting"],
    "sink.kind": ["parquet", "catalog", "console", "kafka"],
    "fn": ["count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct"],
}

WINDOW_PARAMS: dict[str, tuple[str, ...]] = {t: param_names(t) for t in WINDOW_TYPES}
"""Which window parameters each window type takes (the form shows only these): the kinds'
own lists (``jobs.definition.windows``)."""

AGGS = "aggregations"


def new_model() -> Model:
    """The form of a new job: a 1-minute tumbling count, the smallest thing that runs."""
    return {
        "name": "",
        "description": "",
        "source.kind": "files",
        "source.path": "",
        "source.format": "json",
        "source.schema": "",
        "source.options": "",
        "key": "",
        "event_time": "",
        "watermark.strategy": "bounded",
        "watermark.delay": "0s",
        "watermark.scope": "global",
        "watermark.idle_advance": False,
        "window.type": "tumbling",
        "window.size": "1m",
        "window.step": "",
        "window.gap": "",
        "window.align_to": "",
        "allowed_lateness": "0s",
        "lateness_basis": "window",
        "trigger.emit": "final",
        "trigger.early.kind": "none",
        "trigger.early.value": "",
        "trigger.early.align_to": "",
        "trigger.on_time": True,
        "trigger.late.kind": "none",
        "trigger.late.value": "",
        "accumulation": "accumulating",
        AGGS: [{"name": "n", "fn": "count", "of": ""}],
        "sink.kind": "parquet",
        "sink.path": "",
        "sink.topic": "",
        "sink.options": "",
        "sink.late_topic": "",
        "sink.dead_letter_topic": "",
    }


def _text(model: Mapping[str, Any], path: str) -> str:
    value = model.get(path)
    return "" if value is None else str(value).strip()


def _count_or_text(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def parse_options(text: str, field: str = "source.options"
                  ) -> tuple[dict[str, str], list[FieldError]]:
    """``name=value`` lines (blank lines and ``#`` comments ignored)."""
    options: dict[str, str] = {}
    errors: list[FieldError] = []
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            errors.append((field, f"line {n}: expected name=value, got {line!r}"))
            continue
        options[name.strip()] = value.strip()
    return options, errors


def raw_from_form(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
    """The documented definition shape for the form's content, plus errors only the form can
    see (e.g. an options line without ``=``). Empty optional fields are left out so the
    definition's defaults apply."""
    errors: list[FieldError] = []
    raw: dict[str, Any] = {"name": _text(model, "name")}
    if _text(model, "description"):
        raw["description"] = _text(model, "description")

    kind = _text(model, "source.kind") or "files"
    source: dict[str, Any] = {"kind": kind}
    for part in ("path", "schema"):
        if _text(model, f"source.{part}"):
            source[part] = _text(model, f"source.{part}")
    if kind in ("files", "kafka"):
        source["format"] = _text(model, "source.format") or "json"
    options, option_errors = parse_options(str(model.get("source.options") or ""))
    errors += option_errors
    if options:
        source["options"] = options
    raw["source"] = source

    if _text(model, "key"):
        raw["key"] = _text(model, "key")
    if _text(model, "event_time"):
        raw["event_time"] = _text(model, "event_time")

    watermark: dict[str, Any] = {
        "strategy": _text(model, "watermark.strategy") or "bounded",
        "scope": _text(model, "watermark.scope") or "global",
        "idle_advance": bool(model.get("watermark.idle_advance")),
    }
    if _text(model, "watermark.delay"):
        watermark["delay"] = _text(model, "watermark.delay")
    raw["watermark"] = watermark

    wtype = _text(model, "window.type") or "tumbling"
    window: dict[str, Any] = {"type": wtype}
    for param in WINDOW_PARAMS.get(wtype, ()):
        if _text(model, f"window.{param}"):
            window[param] = _text(model, f"window.{param}")
    raw["window"] = window

    if _text(model, "allowed_lateness"):
        raw["allowed_lateness"] = _text(model, "allowed_lateness")
    raw["lateness_basis"] = _text(model, "lateness_basis") or "window"

    emit = _text(model, "trigger.emit") or "final"
    trigger: dict[str, Any] = {"emit": emit}
    if emit == "custom":
        early_kind = _text(model, "trigger.early.kind")
        if early_kind and early_kind != "none":
            value = _text(model, "trigger.early.value")
            early: dict[str, Any] = {
                early_kind: _count_or_text(value) if early_kind == "count" else value
            }
            if early_kind == "every" and _text(model, "trigger.early.align_to"):
                early["align_to"] = _text(model, "trigger.early.align_to")
            trigger["early"] = early
        trigger["on_time"] = bool(model.get("trigger.on_time", True))
        late_kind = _text(model, "trigger.late.kind")
        if late_kind and late_kind != "none":
            value = _text(model, "trigger.late.value")
            trigger["late"] = {late_kind: _count_or_text(value) if late_kind == "count" else value}
    raw["trigger"] = trigger

    raw["accumulation"] = _text(model, "accumulation") or "accumulating"

    aggregations: list[dict[str, Any]] = []
    for row in model.get(AGGS) or []:
        agg: dict[str, Any] = {
            "name": str(row.get("name") or "").strip(),
            "fn": str(row.get("fn") or "").strip(),
        }
        if str(row.get("of") or "").strip():
            agg["of"] = str(row["of"]).strip()
        aggregations.append(agg)
    raw[AGGS] = aggregations

    sink: dict[str, Any] = {"kind": _text(model, "sink.kind") or "parquet"}
    if _text(model, "sink.path"):
        sink["path"] = _text(model, "sink.path")
    if sink["kind"] == "kafka":
        for part in ("topic", "late_topic", "dead_letter_topic"):
            if _text(model, f"sink.{part}"):
                sink[part] = _text(model, f"sink.{part}")
        sink_options, sink_errors = parse_options(str(model.get("sink.options") or ""),
                                                  "sink.options")
        errors += sink_errors
        sink["options"] = sink_options
    raw["sink"] = sink
    return raw, errors


def _dur(ms: int | None) -> str:
    return "" if ms is None else format_duration(ms)


def raw_from_definition(defn: Definition) -> dict[str, Any]:
    """A definition in the documented shape with human durations (for the form and YAML)."""
    raw: dict[str, Any] = {"name": defn.name}
    if defn.description:
        raw["description"] = defn.description
    source: dict[str, Any] = {"kind": defn.source.kind}
    if defn.source.path:
        source["path"] = defn.source.path
    if defn.source.format and defn.source.kind in ("files", "kafka"):
        source["format"] = defn.source.format
    if defn.source.schema:
        source["schema"] = defn.source.schema
    if defn.source.options:
        source["options"] = dict(defn.source.options)
    raw["source"] = source
    if defn.key is not None:
        raw["key"] = defn.key
    raw["event_time"] = defn.event_time
    raw["watermark"] = {
        "strategy": defn.watermark.strategy,
        "delay": _dur(defn.watermark.delay),
        "scope": defn.watermark.scope,
        "idle_advance": defn.watermark.idle_advance,
    }
    w = defn.window
    window: dict[str, Any] = {"type": w.type}
    for param in kind_class(w.type).params:
        value = getattr(w, param.name)
        if param.unit == "duration":
            window[param.name] = _dur(value)
        elif value:  # an instant: 1970 (the default) is left blank
            window[param.name] = ms_to_iso(value)
    raw["window"] = window
    raw["allowed_lateness"] = _dur(defn.allowed_lateness)
    raw["lateness_basis"] = defn.lateness_basis
    t = defn.trigger
    trigger: dict[str, Any] = {"emit": t.emit}
    if t.emit == "custom":
        if t.early is not None:
            if t.early.kind == "count":
                trigger["early"] = {"count": t.early.count}
            else:
                early: dict[str, Any] = {t.early.kind: _dur(t.early.duration)}
                if t.early.kind == "every" and t.early.align_to:
                    early["align_to"] = ms_to_iso(t.early.align_to)
                trigger["early"] = early
        trigger["on_time"] = t.on_time
        if t.late is not None:
            trigger["late"] = (
                {"count": t.late.count} if t.late.kind == "count" else {"after": _dur(t.late.duration)}
            )
    raw["trigger"] = trigger
    raw["accumulation"] = defn.accumulation
    aggs: list[dict[str, Any]] = []
    for a in defn.aggregations:
        agg: dict[str, Any] = {"name": a.name, "fn": a.fn}
        if a.of is not None:
            agg["of"] = a.of
        aggs.append(agg)
    raw[AGGS] = aggs
    sink: dict[str, Any] = {"kind": defn.sink.kind}
    if defn.sink.path:
        sink["path"] = defn.sink.path
    for part in ("topic", "late_topic", "dead_letter_topic"):
        if getattr(defn.sink, part):
            sink[part] = getattr(defn.sink, part)
    if defn.sink.options:
        sink["options"] = dict(defn.sink.options)
    raw["sink"] = sink
    return raw


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return str(value)


def form_from_raw(raw: Mapping[str, Any]) -> tuple[Model, list[str]]:
    """Fill the form from a (possibly invalid) documented-shape mapping.

    Returns the model and the top-level/known-section keys the form cannot show (so the import
    can say what it dropped instead of losing it silently).
    """
    model = new_model()
    dropped: list[str] = []
    known_top = {
        "name", "description", "source", "key", "event_time", "watermark", "window",
        "allowed_lateness", "lateness_basis", "trigger", "accumulation", AGGS, "sink",
    }
    for k in raw:
        if k not in known_top:
            dropped.append(str(k))
    for k in ("name", "description", "key", "event_time", "allowed_lateness",
              "lateness_basis", "accumulation"):
        if k in raw and raw[k] is not None:
            model[k] = _show(raw[k])
    if raw.get("event_time") == PROCESSING:
        model["event_time"] = PROCESSING

    def section(name: str) -> Mapping[str, Any]:
        value = raw.get(name)
        return value if isinstance(value, Mapping) else {}

    src = section("source")
    for part in ("kind", "path", "format", "schema"):
        if src.get(part) is not None:
            model[f"source.{part}"] = _show(src[part])
    options = src.get("options")
    if isinstance(options, Mapping):
        model["source.options"] = "\n".join(f"{k}={_show(v)}" for k, v in options.items())
    dropped += [f"source.{k}" for k in src if k not in ("kind", "path", "format", "schema", "options")]

    wm = section("watermark")
    for part in ("strategy", "delay", "scope"):
        if wm.get(part) is not None:
            model[f"watermark.{part}"] = _show(wm[part])
    if "idle_advance" in wm:
        model["watermark.idle_advance"] = bool(wm["idle_advance"])
    dropped += [f"watermark.{k}" for k in wm if k not in ("strategy", "delay", "scope", "idle_advance")]

    win = section("window")
    for part in ("type", "size", "step", "gap", "align_to"):
        model[f"window.{part}"] = _show(win.get(part)) if part in win else (
            model[f"window.{part}"] if part == "type" else ""
        )
    dropped += [f"window.{k}" for k in win if k not in ("type", "size", "step", "gap", "align_to")]

    trig = section("trigger")
    if trig.get("emit") is not None:
        model["trigger.emit"] = _show(trig["emit"])
    early = trig.get("early")
    if isinstance(early, Mapping):
        for kind in ("after", "every", "count"):
            if kind in early:
                model["trigger.early.kind"] = kind
                model["trigger.early.value"] = _show(early[kind])
        if early.get("align_to") is not None:
            model["trigger.early.align_to"] = _show(early["align_to"])
    if "on_time" in trig:
        model["trigger.on_time"] = bool(trig["on_time"])
    late = trig.get("late")
    if isinstance(late, Mapping):
        for kind in ("count", "after"):
            if kind in late:
                model["trigger.late.kind"] = kind
                model["trigger.late.value"] = _show(late[kind])

    aggs = raw.get(AGGS)
    if isinstance(aggs, list):
        model[AGGS] = [
            {"name": _show(a.get("name")), "fn": _show(a.get("fn")) or "count", "of": _show(a.get("of"))}
            for a in aggs
            if isinstance(a, Mapping)
        ]

    snk = section("sink")
    for part in ("kind", "path", "topic", "late_topic", "dead_letter_topic"):
        if snk.get(part) is not None:
            model[f"sink.{part}"] = _show(snk[part])
    sink_options = snk.get("options")
    if isinstance(sink_options, Mapping):
        model["sink.options"] = "\n".join(f"{k}={_show(v)}" for k, v in sink_options.items())
    dropped += [f"sink.{k}" for k in snk
                if k not in ("kind", "path", "topic", "options", "late_topic", "dead_letter_topic")]
    return model, dropped


def form_from_definition(defn: Definition) -> Model:
    model, _ = form_from_raw(raw_from_definition(defn))
    return model


def to_yaml(raw: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(raw), sort_keys=False, allow_unicode=True, default_flow_style=False)


def parse_yaml(text: str) -> tuple[dict[str, Any] | None, list[FieldError]]:
    """A mapping from YAML/JSON text, or the reason it is not one (read as the definition
    package reads it: size and nesting limits first, duplicate keys refused)."""
    from jobs.definition import DefinitionError, read_document

    try:
        data = read_document(text)
    except DefinitionError as exc:
        return None, list(exc.errors)
    if not isinstance(data, dict):
        return None, [("", "a definition must be a YAML mapping (name: ..., window: ...)")]
    return data, []


def field_matches(error_field: str, path: str) -> bool:
    """Does an error reported at ``error_field`` belong under the widget for ``path``?"""
    return (
        error_field == path
        or error_field.startswith(path + ".")
        or error_field.startswith(path + "[")
    )


_NEW_AGG = {"name": "", "fn": "sum", "of": ""}
"""A row the "add aggregation" button appends (untouched until one of its fields changes)."""


def touched_paths(model: Mapping[str, Any], initial: Mapping[str, Any]) -> set[str]:
    """The field paths whose value differs from the form as it was loaded (``initial``)."""
    touched = {k for k, v in model.items() if k != AGGS and v != initial.get(k)}
    rows, before = list(model.get(AGGS) or []), list(initial.get(AGGS) or [])
    for i, row in enumerate(rows):
        base = before[i] if i < len(before) else _NEW_AGG
        touched |= {f"{AGGS}[{i}].{f}" for f, v in row.items() if v != base.get(f, "")}
    if len(rows) < len(before):
        touched.add(AGGS)
    return touched


def error_shown(error_field: str, touched: set[str]) -> bool:
    """Whether a new job's form shows an error yet: only once the user changed its field, a
    field under it, or the field it is under -- a form nobody typed in shows no "must not be
    empty" (an error of the whole document always shows)."""
    return not error_field or any(
        field_matches(error_field, t) or field_matches(t, error_field) for t in touched)


def copy_model(model: Mapping[str, Any]) -> Model:
    return copy.deepcopy(dict(model))
