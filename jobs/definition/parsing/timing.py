"""The sections that say when panes fire: ``watermark``, ``window`` and ``trigger``, and the
rules for ``event_time: processing``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.definition.model import (
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.definition.parsing.fields import (
    Collector,
    bool_field,
    check_keys,
    duration_field,
    enum_field,
    instant_field,
    kind_of,
    positive_int_field,
    section_of,
)
from jobs.definition.windows import (
    PARAM_NAMES,
    WINDOW_TYPES,
    ParamName,
    kind_class,
    kinds_with,
    param_names,
)

ALL_WINDOW_PARAMS: tuple[str, ...] = PARAM_NAMES


def parse_watermark(c: Collector, raw: Mapping[str, Any]) -> Watermark | None:
    section = section_of(c, raw, "watermark")
    if section is None:
        return Watermark() if raw.get("watermark") is None else None
    check_keys(c, section, ("strategy", "delay", "scope", "idle_advance"), "watermark")
    strategy = enum_field(c, "watermark.strategy", section.get("strategy"), ("bounded", "source"),
                     "bounded")
    delay = duration_field(c, "watermark.delay", section.get("delay"), default=0, allow_infinite=True)
    scope = enum_field(c, "watermark.scope", section.get("scope"), ("global", "key"), "global")
    idle = bool_field(c, "watermark.idle_advance", section.get("idle_advance"), False)
    if strategy == "source":
        if delay:
            c.add("watermark.delay", "is only used with strategy bounded (a source watermark "
                                     "is taken as given)")
        if idle:
            c.add("watermark.idle_advance", "is only allowed with strategy bounded")
        if scope == "key":
            c.add("watermark.scope", "key is only allowed with strategy bounded (a source "
                                     "watermark is one for the whole input)")
    if strategy is None or delay is None or scope is None or idle is None:
        return None
    return Watermark(strategy=strategy, delay=delay, scope=scope, idle_advance=idle)


def check_processing_rules(
    c: Collector, raw: Mapping[str, Any], watermark: Watermark | None,
    allowed_lateness: int | None, lateness_basis: str | None,
) -> None:
    """With the processing clock event time is arrival time and the watermark is "now": no
    record is ever late, so settings about lateness or watermarks would be silently ignored."""
    why = "has no effect with event_time: processing (the watermark is the current time)"
    if watermark is not None:
        if watermark.strategy != "bounded":
            c.add("watermark.strategy", "source needs event times (event_time is processing)")
        if watermark.delay:
            c.add("watermark.delay", why)
        if watermark.scope != "global":
            c.add("watermark.scope", why)
        if watermark.idle_advance:
            c.add("watermark.idle_advance", why)
    if allowed_lateness:
        c.add("allowed_lateness", why)
    if lateness_basis == "event" and raw.get("lateness_basis") is not None:
        c.add("lateness_basis", why)


def parse_window(c: Collector, raw: Mapping[str, Any]) -> Window | None:
    if raw.get("window") is None:
        c.add("window", "is required (e.g. {type: tumbling, size: 2m})")
        return None
    section = section_of(c, raw, "window")
    if section is None:
        return None
    check_keys(c, section, ("type",) + ALL_WINDOW_PARAMS, "window")
    wtype = enum_field(c, "window.type", section.get("type"), WINDOW_TYPES, None)
    if wtype is None:
        return None
    kind = kind_class(wtype)
    allowed = param_names(wtype)
    for name in PARAM_NAMES:
        if name not in allowed and section.get(name) is not None:
            c.add(f"window.{name}", f"is not a parameter of {wtype} windows (only of "
                                    f"{' and '.join(kinds_with(name))})")
    values: dict[ParamName, int] = {}
    ok = True
    for param in kind.params:
        value = section.get(param.name)
        parsed = (duration_field(c, param.field, value, default=None, positive=True)
                  if param.unit == "duration" else instant_field(c, param.field, value))
        if parsed is None:
            ok = False
        else:
            values[param.name] = parsed
    if ok:
        problems = kind.cross_field_problems(values)
        for problem in problems:
            c.add(*problem)
        ok = not problems
    if not ok:
        return None
    return Window(type=wtype, **values)


def parse_trigger(c: Collector, raw: Mapping[str, Any], allowed_lateness: int | None) -> Trigger | None:
    value = raw.get("trigger")
    if value is None:
        return Trigger()
    if isinstance(value, str):  # shorthand: `trigger: final`
        emit = enum_field(c, "trigger", value, ("final", "current", "custom"), None)
        if emit == "custom":
            return _custom_trigger(c, {}, allowed_lateness)
        return Trigger(emit=emit) if emit else None
    section = section_of(c, raw, "trigger")
    if section is None:
        return None
    check_keys(c, section, ("emit", "early", "on_time", "late"), "trigger")
    emit = enum_field(c, "trigger.emit", section.get("emit"), ("final", "current", "custom"), "final")
    if emit is None:
        return None
    if emit != "custom":
        bad = False
        for part in ("early", "on_time", "late"):
            if part in section and section[part] is not None:
                c.add(f"trigger.{part}", f"is only allowed with trigger.emit: custom (emit: {emit} "
                                         "fixes when panes fire)")
                bad = True
        return None if bad else Trigger(emit=emit)
    return _custom_trigger(c, section, allowed_lateness)


def _custom_trigger(
    c: Collector, section: Mapping[str, Any], allowed_lateness: int | None
) -> Trigger | None:
    early = _early(c, section.get("early"))
    on_time = bool_field(c, "trigger.on_time", section.get("on_time"), True)
    late_raw = section.get("late")
    late: LateTrigger | None | bool
    if late_raw is None:
        late = LateTrigger(kind="count", count=1) if allowed_lateness else None
    else:
        late = _late(c, late_raw)
    if early is False or on_time is None or late is False:
        return None
    assert not isinstance(early, bool) and not isinstance(late, bool)
    if early is None and on_time is False and late is None:
        c.add("trigger", "emits nothing: give early or late, or keep on_time: true")
        return None
    return Trigger(emit="custom", early=early, on_time=on_time, late=late)


def _early(c: Collector, value: Any) -> EarlyTrigger | None | bool:
    """None: no early firing; False: invalid (errors recorded)."""
    field = "trigger.early"
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        c.add(field, "must be one of {after: D}, {every: D, align_to: T} or {count: N}, got "
                     f"{kind_of(value)}")
        return False
    check_keys(c, value, ("after", "every", "align_to", "count"), field)
    kinds = [k for k in ("after", "every", "count") if value.get(k) is not None]
    if len(kinds) != 1:
        c.add(field, "must have exactly one of after, every or count")
        return False
    kind = kinds[0]
    if value.get("align_to") is not None and kind != "every":
        c.add(f"{field}.align_to", "is only allowed with every")
        return False
    if kind == "count":
        count = positive_int_field(c, f"{field}.count", value["count"])
        return False if count is None else EarlyTrigger(kind="count", count=count)
    duration = duration_field(c, f"{field}.{kind}", value[kind], default=None, positive=True)
    align = instant_field(c, f"{field}.align_to", value.get("align_to")) if kind == "every" else 0
    if duration is None or align is None:
        return False
    if kind == "every":
        return EarlyTrigger(kind="every", duration=duration, align_to=align)
    return EarlyTrigger(kind="after", duration=duration)


def _late(c: Collector, value: Any) -> LateTrigger | None | bool:
    field = "trigger.late"
    if value is False:
        return None  # explicit "no late panes"
    if not isinstance(value, Mapping):
        c.add(field, f"must be {{count: N}} or {{after: D}} (or false), got {kind_of(value)}")
        return False
    check_keys(c, value, ("count", "after"), field)
    kinds = [k for k in ("count", "after") if value.get(k) is not None]
    if len(kinds) != 1:
        c.add(field, "must have exactly one of count or after")
        return False
    if kinds[0] == "count":
        count = positive_int_field(c, f"{field}.count", value["count"])
        return False if count is None else LateTrigger(kind="count", count=count)
    duration = duration_field(c, f"{field}.after", value["after"], default=None, positive=True)
    return False if duration is None else LateTrigger(kind="after", duration=duration)
