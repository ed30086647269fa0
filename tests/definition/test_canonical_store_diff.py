"""Canonical JSON, spec hashes, state-store names and diffs: what the catalog stores and how
it decides between restarting a job in place and migrating it to a new store."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from jobs.definition import (
    INFINITE,
    canonical_json,
    diff_definitions,
    effective_trigger,
    load_definition,
    spec_hash,
    store_name,
    to_canonical,
)
from jobs.definition.model import EarlyTrigger, LateTrigger
from tests.definition.helpers import DELETE, base

TEAM_SCORES_YAML = """
name: team_scores
description: Team scores, 2 minute windows
source:
  kind: files
  path: data/landing/team_scores
  format: json
  schema: "team STRING, score INT, et TIMESTAMP"
key: team
event_time: et
window: {type: tumbling, size: 2m}
aggregations:
  - {name: total, fn: sum, of: score}
  - {name: n, fn: count}
sink: {kind: parquet, path: data/results/team_scores}
"""

# the same definition: other key order, other duration spellings, defaults written out
TEAM_SCORES_REORDERED = """
aggregations:
  - {of: score, fn: sum, name: total}
  - {fn: count, name: n}
window: {size: PT2M, type: tumbling, align_to: 0}
sink: {path: data/results/team_scores, kind: parquet}
event_time: et
key: team
watermark: {delay: 0, strategy: bounded, scope: global, idle_advance: false}
allowed_lateness: 0ms
lateness_basis: window
trigger: {emit: final}
accumulation: accumulating
source:
  schema: "team STRING, score INT, et TIMESTAMP"
  format: json
  path: data/landing/team_scores
  kind: files
description: Team scores, 2 minute windows
name: team_scores
"""


def test_canonical_json_is_sorted_compact_with_defaults_in_ms() -> None:
    d = load_definition(TEAM_SCORES_YAML)
    text = canonical_json(d)
    expected = {
        "accumulation": "accumulating",
        "aggregations": [{"fn": "sum", "name": "total", "of": "score"},
                         {"fn": "count", "name": "n", "of": None}],
        "allowed_lateness": 0,
        "description": "Team scores, 2 minute windows",
        "event_time": "et",
        "key": "team",
        "lateness_basis": "window",
        "name": "team_scores",
        "sink": {"kind": "parquet", "path": "data/results/team_scores"},
        "source": {"format": "json", "kind": "files", "options": {},
                   "path": "data/landing/team_scores",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "trigger": {"emit": "final"},
        "watermark": {"delay": 0, "idle_advance": False, "scope": "global",
                      "strategy": "bounded"},
        "window": {"align_to": 0, "size": 120000, "type": "tumbling"},
    }
    assert json.loads(text) == expected
    assert text == json.dumps(expected, sort_keys=True, separators=(",", ":"))
    assert spec_hash(d) == hashlib.sha256(text.encode()).hexdigest()


def test_equivalent_spellings_give_identical_canonical_form() -> None:
    a, b = load_definition(TEAM_SCORES_YAML), load_definition(TEAM_SCORES_REORDERED)
    assert a == b
    assert canonical_json(a) == canonical_json(b)
    assert spec_hash(a) == spec_hash(b)
    assert store_name(a) == store_name(b)


ROUND_TRIP = [
    base(),
    base(window={"type": "hopping", "size": "10m", "step": "1m", "align_to": 5000}),
    base(window={"type": "sliding", "size": "30s"}),
    base(window={"type": "session", "gap": "5m"}, accumulation="retracting"),
    base(window={"type": "global"}, key=DELETE),
    base(allowed_lateness="infinite", **{"watermark.delay": "infinite"}),
    base(trigger={"emit": "custom", "early": {"every": "1m", "align_to": 30000},
                  "on_time": False, "late": {"after": "10s"}}, allowed_lateness="5m"),
    base(trigger={"emit": "custom", "late": False}, allowed_lateness="5m"),
    base(trigger={"emit": "custom"}, allowed_lateness="5m"),
    base(trigger={"emit": "custom", "early": {"count": 3}}),
    base(trigger="current", lateness_basis="event", **{"watermark.scope": "key"}),
    base(event_time="processing", source=DELETE, key="lower(team)"),
    base(source={"kind": "rate", "options": {"rowsPerSecond": 10}}, key="value % 3",
         event_time="timestamp", aggregations=[{"name": "v", "fn": "collect", "of": "value"}]),
    base(sink={"kind": "console"}, description="ünïcödé ✓"),
]


@pytest.mark.parametrize("doc", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_canonical_round_trip(doc: dict[str, Any]) -> None:
    d = load_definition(doc)
    again = load_definition(canonical_json(d))
    assert again == d
    assert canonical_json(again) == canonical_json(d)
    assert load_definition(to_canonical(d)) == d


def test_infinite_is_written_as_the_word() -> None:
    c = to_canonical(load_definition(base(allowed_lateness="infinite")))
    assert c["allowed_lateness"] == "infinite"
    assert load_definition(c).allowed_lateness == INFINITE


def test_window_params_of_other_types_are_omitted() -> None:
    c = to_canonical(load_definition(base(window={"type": "session", "gap": "1m"})))
    assert c["window"] == {"type": "session", "gap": 60000}
    c = to_canonical(load_definition(base(window={"type": "sliding", "size": "1m"})))
    assert c["window"] == {"type": "sliding", "size": 60000}


def test_trigger_shorthand_kept_parts_only_for_custom() -> None:
    assert to_canonical(load_definition(base(trigger="current")))["trigger"] == {
        "emit": "current"}
    c = to_canonical(load_definition(base(trigger={"emit": "custom", "early": {"after": "1m"}},
                                          allowed_lateness="1m")))
    assert c["trigger"] == {"emit": "custom", "early": {"after": 60000}, "on_time": True,
                            "late": {"count": 1}}


# ---------------------------------------------------------------------------- store names


def test_store_name_shape_of_the_spec_example() -> None:
    name = store_name(load_definition(TEAM_SCORES_YAML))
    assert re.fullmatch(r"team_scores__tumbling_window_120000_sum_count__[0-9a-f]{8}", name)


def test_store_name_prefix_for_each_window_type() -> None:
    def prefix(window: dict[str, Any]) -> str:
        return store_name(load_definition(base(window=window))).rsplit("__", 1)[0]

    assert prefix({"type": "hopping", "size": "10m", "step": "1m"}) == (
        "team_scores__hopping_window_600000_60000_sum_count")
    assert prefix({"type": "session", "gap": "30s"}) == "team_scores__session_window_30000_sum_count"
    assert prefix({"type": "sliding", "size": "5s"}) == "team_scores__sliding_window_5000_sum_count"
    assert prefix({"type": "global"}) == "team_scores__global_window_sum_count"


def test_store_name_is_short_and_filesystem_safe_even_for_long_definitions() -> None:
    aggs = [{"name": f"agg_{i}_" + "x" * 50, "fn": "count_distinct", "of": "team"}
            for i in range(20)]
    d = load_definition(base(name="n" * 63, aggregations=aggs))
    name = store_name(d)
    assert len(name) <= 100
    assert re.fullmatch(r"[a-z0-9_]+__[0-9a-f]{8}", name)
    assert name.startswith("n" * 63 + "__tumbling_window_120000")


def test_store_name_is_stable_for_equivalent_durations() -> None:
    names = {store_name(load_definition(base(**{"window.size": v})))
             for v in ("2m", 120000, "PT2M", "120s", "120000")}
    assert len(names) == 1


def test_store_name_ignores_sql_spelling_and_equivalent_alignment() -> None:
    a = store_name(load_definition(base(key="lower(team)")))
    assert a == store_name(load_definition(base(key="LOWER( Team )")))
    assert a != store_name(load_definition(base(key="lower(concat(team, 'X'))")))
    # 2026-01-01T00:00Z is a multiple of 2 minutes since 1970: the same windows
    assert store_name(load_definition(base())) == store_name(
        load_definition(base(**{"window.align_to": "2026-01-01T00:00:00Z"})))
    assert store_name(load_definition(base())) != store_name(
        load_definition(base(**{"window.align_to": "2026-01-01T00:00:30Z"})))


# (id, change, keeps the store?)
STORE_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("description", {"description": "new text"}, True),
    ("sink kind", {"sink": {"kind": "console"}}, True),
    ("sink path", {"sink.path": "elsewhere"}, True),
    ("source path", {"source.path": "other/dir"}, True),
    ("source options", {"source.options": {"maxFilesPerTrigger": 5}}, True),
    ("watermark delay", {"watermark.delay": "30s"}, True),
    ("allowed lateness", {"allowed_lateness": "10m"}, True),
    # base() runs on Spark's native aggregation; these move it to the engine, whose state is
    # of another kind, so they need a new store (jobs/definition/execution.py)
    ("trigger emit (to engine)", {"trigger": {"emit": "current"}}, False),
    ("trigger early (to engine)", {"trigger": {"emit": "custom", "early": {"after": "30s"}}},
     False),
    ("watermark strategy (to engine)", {"watermark.strategy": "source"}, False),
    ("idle advance (to engine)", {"watermark.idle_advance": True}, False),
    ("infinite delay (to engine)", {"watermark.delay": "infinite"}, False),
    ("same size other spelling", {"window.size": "PT120S"}, True),
    ("key", {"key": "lower(team)"}, False),
    ("no key", {"key": DELETE}, False),
    ("event time", {"event_time": "to_timestamp(et)"}, False),
    ("window size", {"window.size": "5m"}, False),
    ("window type", {"window": {"type": "sliding", "size": "2m"}}, False),
    ("window alignment", {"window.align_to": 1000}, False),
    ("aggregation fn", {"aggregations[0].fn": "max"}, False),
    ("aggregation of", {"aggregations[0].of": "score * 2"}, False),
    ("aggregation name", {"aggregations[0].name": "sum_score"}, False),
    ("aggregation added", {"aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                                            {"name": "n", "fn": "count"},
                                            {"name": "hi", "fn": "max", "of": "score"}]}, False),
    ("accumulation", {"accumulation": "discarding"}, False),
    ("watermark scope", {"watermark.scope": "key"}, False),
    ("lateness basis", {"lateness_basis": "event"}, False),
    ("name", {"name": "team_scores_v2"}, False),
]


@pytest.mark.parametrize(("change", "keeps"), [c[1:] for c in STORE_CASES],
                         ids=[c[0] for c in STORE_CASES])
def test_change_classification(change: dict[str, Any], keeps: bool) -> None:
    old = load_definition(base())
    new = load_definition(base(**change))
    assert (store_name(old) == store_name(new)) is keeps
    diff = diff_definitions(old, new)
    assert diff.same_store is keeps
    if new == old:
        assert diff.kind == "unchanged"
    else:
        assert diff.kind == ("same_store" if keeps else "new_store")
        assert diff.changes


ENGINE_BASE: dict[str, Any] = {"trigger": {"emit": "custom", "early": {"count": 2}}}
"""An engine-path definition woken by records and watermark advances (early count firings)."""
CLOCK_BASE: dict[str, Any] = {"trigger": {"emit": "custom", "early": {"after": "30s"}}}
"""An engine-path definition woken by the clock (early firings 30 s after a window's first
record)."""

# (id, base, change on top of it, keeps the store?)
ENGINE_STORE_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("trigger emit", ENGINE_BASE, {"trigger": {"emit": "current"}}, True),
    ("early count cadence", ENGINE_BASE, {"trigger": {"emit": "custom", "early": {"count": 5}}},
     True),
    ("watermark strategy", ENGINE_BASE, {"watermark.strategy": "source"}, True),
    ("infinite delay", ENGINE_BASE, {"watermark.delay": "infinite"}, True),
    ("watermark delay", ENGINE_BASE, {"watermark.delay": "30s"}, True),
    ("late count", ENGINE_BASE | {"allowed_lateness": "1m"},
     {"trigger": {"emit": "custom", "early": {"count": 2}, "late": {"count": 3}}}, True),
    ("back to emit final (to native)", ENGINE_BASE, {"trigger": {"emit": "final"}}, False),
    ("early count -> after (to the clock)", ENGINE_BASE, CLOCK_BASE, False),
    ("idle advance (to the clock)", ENGINE_BASE, {"watermark.idle_advance": True}, False),
    ("early after cadence", CLOCK_BASE, {"trigger": {"emit": "custom", "early": {"after": "1m"}}},
     True),
    ("early after -> every", CLOCK_BASE,
     {"trigger": {"emit": "custom", "early": {"every": "1m"}}}, True),
    ("idle advance on a clocked job", CLOCK_BASE, {"watermark.idle_advance": True}, True),
    ("early after -> count (off the clock)", CLOCK_BASE, ENGINE_BASE, False),
]


@pytest.mark.parametrize(("start", "change", "keeps"), [c[1:] for c in ENGINE_STORE_CASES],
                         ids=[c[0] for c in ENGINE_STORE_CASES])
def test_change_classification_on_the_engine_path(start: dict[str, Any], change: dict[str, Any],
                                                  keeps: bool) -> None:
    old = load_definition(base(**start))
    new = load_definition(base(**(start | change)))
    diff = diff_definitions(old, new)
    assert diff.changes
    assert diff.same_store is keeps
    assert (diff.path_change is None) is keeps


def test_a_path_change_is_named_in_the_summary() -> None:
    native = load_definition(base())
    engine = load_definition(base(**ENGINE_BASE))
    diff = diff_definitions(native, engine)
    assert diff.kind == "new_store" and diff.path_change == ("native", "engine")
    lines = diff.summary().splitlines()
    assert lines[0].endswith(
        f"new state store {store_name(engine)} (migration from {store_name(native)})")
    assert lines[-1] == "  execution path on Spark: native -> engine  [state]"
    assert diff_definitions(engine, native).path_change == ("engine", "native")
    clocked = load_definition(base(**CLOCK_BASE))
    assert diff_definitions(engine, clocked).summary().splitlines()[-1] == (
        "  execution path on Spark: engine -> engine+clock  [state]")
    # the path is what differs: the state-shaping fields are the same
    assert not any(c.state_shaping for c in diff.changes)


# ------------------------------------------------------------------------------------- diffs


def test_diff_lists_changed_paths_over_canonical_forms() -> None:
    old = load_definition(base())
    new = load_definition(base(description="v2", **{"window.size": "5m",
                                                    "aggregations[0].of": "score * 2"}))
    diff = diff_definitions(old, new)
    assert [(c.path, c.old, c.new, c.state_shaping) for c in diff.changes] == [
        ("aggregations[0].of", "score", "score * 2", True),
        ("description", "Team scores, 2 minute windows", "v2", False),
        ("window.size", 120000, 300000, True),
    ]
    assert diff.kind == "new_store"
    text = diff.summary()
    assert text.splitlines()[0].startswith("3 changes; new state store team_scores__")
    assert "  window.size: 2m -> 5m  [state]" in text.splitlines()
    assert '  description: "Team scores, 2 minute windows" -> "v2"' in text.splitlines()


def test_diff_of_equivalent_definitions_is_unchanged() -> None:
    diff = diff_definitions(load_definition(TEAM_SCORES_YAML),
                            load_definition(TEAM_SCORES_REORDERED))
    assert diff.changes == [] and diff.kind == "unchanged" and diff.same_store
    assert diff.summary() == "no changes"


def test_diff_same_store_summary_and_added_aggregation_path() -> None:
    old = load_definition(base())
    same = diff_definitions(old, load_definition(base(allowed_lateness="1m")))
    assert same.kind == "same_store"
    assert same.summary().splitlines() == [
        f"1 change; same state store {store_name(old)} (restart in place)",
        "  allowed_lateness: 0s -> 1m",
    ]
    added = diff_definitions(old, load_definition(base(aggregations=[
        {"name": "total", "fn": "sum", "of": "score"}, {"name": "n", "fn": "count"},
        {"name": "hi", "fn": "max", "of": "score"}])))
    assert [c.path for c in added.changes] == ["aggregations[2]"]
    assert added.changes[0].old is None
    assert added.changes[0].new == {"name": "hi", "fn": "max", "of": "score"}


# ------------------------------------------------------------------------------------ triggers


def test_effective_trigger_final() -> None:
    t = effective_trigger(load_definition(base(allowed_lateness="1m")))
    assert (t.emit, t.early, t.at_window_end, t.late, t.at_expiry) == (
        "final", None, False, None, True)
    assert t.has_on_time_pane and not t.needs_clock and not t.fires_on_count


def test_effective_trigger_current() -> None:
    t = effective_trigger(load_definition(base(trigger="current")))
    assert t.early == EarlyTrigger(kind="count", count=1)
    assert t.late == LateTrigger(kind="count", count=1)
    assert t.at_window_end is False and t.at_expiry is False
    assert not t.has_on_time_pane and t.fires_on_count and not t.needs_clock


def test_effective_trigger_custom_as_written_with_late_default() -> None:
    t = effective_trigger(load_definition(base(
        trigger={"emit": "custom", "early": {"after": "10s"}}, allowed_lateness="1m")))
    assert t.early == EarlyTrigger(kind="after", duration=10_000)
    assert t.at_window_end is True
    assert t.late == LateTrigger(kind="count", count=1)
    assert t.at_expiry is False
    assert t.needs_clock and t.fires_on_count
