"""Properties over many generated definitions: the canonical form round-trips, does not depend
on how a duration is spelled or on key order, and the store name is always a safe directory
name of at most 100 characters."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.definition import (
    canonical_json,
    diff_definitions,
    format_duration,
    load_definition,
    spec_hash,
    store_name,
)

SCHEMA = "team STRING, score INT, et TIMESTAMP, price DOUBLE"
ms = st.integers(min_value=1, max_value=10 * 86_400_000)


def spellings(value: int) -> st.SearchStrategy[Any]:
    """Equivalent ways of writing ``value`` milliseconds."""
    options: list[Any] = [value, str(value), format_duration(value)]
    if value % 1000 == 0:
        options.append(f"PT{value // 1000}S")
    else:
        options.append(f"PT{value / 1000:.3f}S")
    return st.sampled_from(options)


@st.composite
def documents(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two spellings of one valid definition (durations written differently, keys reversed)."""
    picks: dict[str, Any] = {}

    def dur(name: str, value: int) -> tuple[Any, Any]:
        picks[name] = value
        return draw(spellings(value)), draw(spellings(value))

    wtype = draw(st.sampled_from(["tumbling", "hopping", "sliding", "session", "global"]))
    wa: dict[str, Any] = {"type": wtype}
    wb: dict[str, Any] = {"type": wtype}
    if wtype in ("tumbling", "hopping", "sliding"):
        size = draw(ms)
        wa["size"], wb["size"] = dur("size", size)
        if wtype == "hopping":
            wa["step"], wb["step"] = dur("step", draw(st.integers(1, size)))
    if wtype == "session":
        wa["gap"], wb["gap"] = dur("gap", draw(ms))
    if wtype in ("tumbling", "hopping") and draw(st.booleans()):
        align = draw(st.integers(0, 2_000_000_000_000))
        wa["align_to"], wb["align_to"] = align, align
    n_aggs = draw(st.integers(1, 4))
    fns = draw(st.lists(st.sampled_from(
        ["count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct"]),
        min_size=n_aggs, max_size=n_aggs))
    aggs = [{"name": f"a{i}", "fn": fn, **({} if fn == "count" else
                                           {"of": draw(st.sampled_from(
                                               ["score", "price * 2", "coalesce(score, 0)"]))})}
            for i, fn in enumerate(fns)]
    lateness = draw(st.integers(0, 600_000))
    delay = draw(st.integers(0, 600_000))
    la, lb = dur("lateness", lateness) if lateness else (0, "0s")
    da, db = dur("delay", delay) if delay else ("0ms", 0)
    emit = draw(st.sampled_from(["final", "current", "custom"]))
    trigger: dict[str, Any] = {"emit": emit}
    if emit == "custom":
        early = draw(st.sampled_from([None, {"count": 5}, {"after": "1m"},
                                      {"every": "30s", "align_to": 0}]))
        if early:
            trigger["early"] = early
        trigger["on_time"] = draw(st.booleans()) if early else True
    a: dict[str, Any] = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)),
        "source": {"kind": "files", "path": "in", "format": "json", "schema": SCHEMA},
        "key": draw(st.sampled_from([None, "team", "lower(team)"])),
        "event_time": draw(st.sampled_from(["et", "to_timestamp(et)"])),
        "watermark": {"delay": da, "scope": draw(st.sampled_from(["global", "key"]))},
        "window": wa,
        "allowed_lateness": la,
        "lateness_basis": draw(st.sampled_from(["window", "event"])),
        "trigger": trigger,
        "accumulation": draw(st.sampled_from(["discarding", "accumulating", "retracting"])),
        "aggregations": aggs,
    }
    b = dict(reversed(list(a.items())))
    b["window"], b["allowed_lateness"] = wb, lb
    b["watermark"] = {"scope": a["watermark"]["scope"], "delay": db}
    return a, b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_canonical_form_is_spelling_independent_and_round_trips(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a_doc, b_doc = pair
    a, b = load_definition(a_doc), load_definition(b_doc)
    assert a == b
    assert canonical_json(a) == canonical_json(b)
    assert spec_hash(a) == spec_hash(b)
    assert load_definition(canonical_json(a)) == a
    name = store_name(a)
    assert name == store_name(b)
    assert len(name) <= 100
    assert name.replace("_", "").isalnum() and name == name.lower()
    assert diff_definitions(a, b).kind == "unchanged"
