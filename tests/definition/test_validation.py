"""Every rule of the definition format, one bad definition at a time: the error must name the
exact field path and say what is wrong (what a user reads in the form or the CLI)."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.definition import (
    INFINITE,
    PROCESSING,
    DefinitionError,
    EarlyTrigger,
    LateTrigger,
    load_definition,
    validate_raw,
)
from tests.definition.helpers import DELETE, base

# (id, document, field path, words the message must contain)
BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("unknown top key", base(windw={"type": "global"}), "windw", "did you mean 'window'"),
    ("unknown nested key", base(**{"window.sizee": "1m"}), "window.sizee", "unknown field"),
    ("unknown agg key", base(**{"aggregations[0]": {"name": "t", "fn": "sum", "of": "score",
                                                    "as": "x"}}), "aggregations[0].as",
     "unknown field"),
    ("name missing", base(name=DELETE), "name", "is required"),
    ("name upper case", base(name="TeamScores"), "name", "[a-z][a-z0-9_]{0,62}"),
    ("name too long", base(name="a" * 64), "name", "at most 63"),
    ("name starts with digit", base(name="1team"), "name", "lower case letter first"),
    ("step exceeds size", base(**{"window": {"type": "hopping", "size": "10m", "step": "11m"}}),
     "window.step", "must not exceed window.size (10m)"),
    ("gap on tumbling", base(**{"window.gap": "1m"}), "window.gap",
     "not a parameter of tumbling windows"),
    ("step on tumbling", base(**{"window.step": "1m"}), "window.step",
     "not a parameter of tumbling windows (only of hopping)"),
    ("size on session", base(window={"type": "session", "gap": "1m", "size": "2m"}),
     "window.size", "not a parameter of session windows"),
    ("align_to on sliding", base(window={"type": "sliding", "size": "1m", "align_to": 0}),
     "window.align_to", "not a parameter of sliding windows"),
    ("size on global", base(window={"type": "global", "size": "1m"}), "window.size",
     "not a parameter of global windows"),
    ("window type unknown", base(**{"window.type": "tumbeling"}), "window.type",
     "did you mean 'tumbling'"),
    ("window missing", base(window=DELETE), "window", "is required"),
    ("size zero", base(**{"window.size": "0s"}), "window.size", "greater than 0"),
    ("size negative", base(**{"window.size": "-2m"}), "window.size", "must not be negative"),
    ("size fractional ms", base(**{"window.size": "0.5ms"}), "window.size",
     "not a whole number of milliseconds"),
    ("size boolean", base(**{"window.size": True}), "window.size", "boolean true"),
    ("size garbage", base(**{"window.size": "two minutes"}), "window.size",
     "cannot read 'two minutes' as a duration"),
    ("size infinite", base(**{"window.size": "infinite"}), "window.size",
     "infinite is not allowed here"),
    ("session gap missing", base(window={"type": "session"}), "window.gap", "is required"),
    ("hopping step missing", base(window={"type": "hopping", "size": "2m"}), "window.step",
     "is required"),
    ("align_to garbage", base(**{"window.align_to": "yesterday"}), "window.align_to",
     "ISO-8601"),
    ("delay negative", base(**{"watermark.delay": -5}), "watermark.delay",
     "must not be negative"),
    ("lateness months", base(allowed_lateness="P1M"), "allowed_lateness",
     "months and years have no fixed length"),
    ("early without custom", base(trigger={"emit": "final", "early": {"after": "1m"}}),
     "trigger.early", "only allowed with trigger.emit: custom"),
    ("on_time without custom", base(trigger={"emit": "current", "on_time": False}),
     "trigger.on_time", "only allowed with trigger.emit: custom"),
    ("early two kinds", base(trigger={"emit": "custom", "early": {"after": "1m", "count": 3}}),
     "trigger.early", "exactly one of after, every or count"),
    ("early align without every", base(trigger={"emit": "custom",
                                                "early": {"after": "1m", "align_to": 0}}),
     "trigger.early.align_to", "only allowed with every"),
    ("early count zero", base(trigger={"emit": "custom", "early": {"count": 0}}),
     "trigger.early.count", "at least 1"),
    ("early after zero", base(trigger={"emit": "custom", "early": {"after": 0}}),
     "trigger.early.after", "greater than 0"),
    ("late bad kind", base(trigger={"emit": "custom", "late": {"every": "1m"}}),
     "trigger.late.every", "unknown field"),
    ("custom emits nothing", base(trigger={"emit": "custom", "on_time": False}), "trigger",
     "emits nothing"),
    ("emit unknown", base(trigger={"emit": "sometimes"}), "trigger.emit",
     "one of final, current, custom"),
    ("no aggregations", base(aggregations=[]), "aggregations", "at least one"),
    ("aggregations not a list", base(aggregations={"name": "n", "fn": "count"}),
     "aggregations", "must be a list"),
    ("duplicate agg name", base(aggregations=[{"name": "total", "fn": "sum", "of": "score"},
                                              {"name": "total", "fn": "count"}]),
     "aggregations[1].name", "duplicate name 'total'"),
    ("reserved agg name", base(**{"aggregations[1]": {"name": "window_start", "fn": "count"}}),
     "aggregations[1].name", "'window_start' is reserved"),
    ("agg name not identifier", base(**{"aggregations[1]": {"name": "my total", "fn": "count"}}),
     "aggregations[1].name", "lower-case identifier"),
    ("agg fn unknown", base(**{"aggregations[0].fn": "median"}), "aggregations[0].fn",
     "must be one of count, sum"),
    ("agg fn avg hint", base(**{"aggregations[0].fn": "avg"}), "aggregations[0].fn", "use mean"),
    ("agg of missing", base(**{"aggregations[0]": {"name": "total", "fn": "sum"}}),
     "aggregations[0].of", "is required for sum"),
    ("agg of unknown column", base(**{"aggregations[0].of": "points"}), "aggregations[0].of",
     "unknown column 'points'"),
    ("agg of aggregate fn", base(**{"aggregations[0].of": "sum(score)"}), "aggregations[0].of",
     "aggregate function sum is not allowed"),
    ("key reflect", base(key="reflect('java.lang.Runtime', 'getRuntime')"), "key",
     "function reflect is not allowed"),
    ("key subquery", base(key="(select 1)"), "key", "subqueries are not allowed"),
    ("key nested struct field unknown", base(key="meta.country"), "key",
     "column 'meta' has no field 'country'"),
    ("key field on scalar", base(key="team.x"), "key", "column 'team' is string"),
    ("event_time rand", base(event_time="rand()"), "event_time", "not deterministic"),
    ("event_time statement", base(event_time="et; drop table x"), "event_time", "';'"),
    ("key not text", base(key=5), "key", "must be an SQL expression (text)"),
    ("source strategy with processing", base(event_time="processing",
                                             **{"watermark.strategy": "source"}),
     "watermark.strategy", "needs event times"),
    ("delay with processing", base(event_time="processing", **{"watermark.delay": "5s"}),
     "watermark.delay", "no effect with event_time: processing"),
    ("lateness with processing", base(event_time="processing", allowed_lateness="1m"),
     "allowed_lateness", "no effect with event_time: processing"),
    ("idle_advance with source", base(**{"watermark.strategy": "source",
                                          "watermark.idle_advance": True}),
     "watermark.idle_advance", "only allowed with strategy bounded"),
    ("delay with source", base(**{"watermark.strategy": "source", "watermark.delay": "5s"}),
     "watermark.delay", "only used with strategy bounded"),
    ("idle_advance not bool", base(**{"watermark.idle_advance": "sometimes"}),
     "watermark.idle_advance", "true or false"),
    ("scope unknown", base(**{"watermark.scope": "partition"}), "watermark.scope",
     "one of global, key"),
    ("lateness basis unknown", base(lateness_basis="record"), "lateness_basis",
     "one of window, event"),
    ("accumulation unknown", base(accumulation="accumulate"), "accumulation",
     "did you mean 'accumulating'"),
    ("source kind unknown", base(**{"source.kind": "s3"}), "source.kind",
     "one of files, kafka, rate"),
    ("files path missing", base(**{"source.path": DELETE}), "source.path", "is required"),
    ("files format missing", base(**{"source.format": DELETE}), "source.format", "is required"),
    ("format unknown", base(**{"source.format": "avro"}), "source.format",
     "one of json, csv, parquet"),
    ("csv without schema", base(**{"source.format": "csv", "source.schema": DELETE}),
     "source.schema", "is required for csv input"),
    ("schema bad type", base(**{"source.schema": "team STRNG, score INT"}), "source.schema",
     "unknown type 'STRNG'"),
    ("schema duplicate column", base(**{"source.schema": "a INT, A STRING"}), "source.schema",
     "duplicate column 'A'"),
    ("rate with path", base(source={"kind": "rate", "path": "x"}, key=DELETE, event_time="timestamp",
                            **{"aggregations": [{"name": "n", "fn": "count"}]}),
     "source.path", "not used by a rate source"),
    ("kafka without servers", base(source={"kind": "kafka", "schema": "team STRING, score INT, "
                                           "et TIMESTAMP", "options": {"subscribe": "t"}}),
     "source.options", "kafka.bootstrap.servers"),
    ("options nested", base(**{"source.options": {"a": {"b": 1}}}), "source.options.a",
     "must be text, a number or a boolean"),
    ("sink kind unknown", base(**{"sink.kind": "s3"}), "sink.kind",
     "one of parquet, catalog, console"),
    ("console sink with path", base(sink={"kind": "console", "path": "x"}), "sink.path",
     "only used by a parquet sink"),
    ("description not text", base(description=["a"]), "description", "must be text"),
    ("window not mapping", base(window="tumbling"), "window", "must be a mapping"),
]


@pytest.mark.parametrize(
    ("document", "field", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_definition_names_field_and_reason(document: dict[str, Any], field: str,
                                                words: str) -> None:
    errors = validate_raw(document)
    matching = [msg for f, msg in errors if f == field]
    assert matching, f"no error for {field}; got {errors}"
    assert any(words in msg for msg in matching), f"{field}: {matching}"
    with pytest.raises(DefinitionError) as info:
        load_definition(document)
    assert (field, matching[0]) in info.value.errors


def test_there_are_at_least_25_kinds_of_bad_definitions() -> None:
    assert len({b[2] for b in BAD}) >= 25


def test_error_string_starts_with_first_field_and_counts_the_rest() -> None:
    doc = base(name="Bad Name", **{"window.size": "0s"}, accumulation="x")
    with pytest.raises(DefinitionError) as info:
        load_definition(doc)
    err = info.value
    assert [f for f, _ in err.errors] == ["name", "window.size", "accumulation"]
    assert str(err).startswith("name: 'Bad Name' must match")
    assert str(err).endswith("(and 2 more errors)")
    assert err.field == "name"


def test_step_message_reads_as_documented() -> None:
    doc = base(window={"type": "hopping", "size": "10m", "step": "15m"})
    with pytest.raises(DefinitionError) as info:
        load_definition(doc)
    assert str(info.value).startswith("window.step: must not exceed window.size (10m)")


def test_valid_definition_has_no_errors_and_fills_defaults() -> None:
    assert validate_raw(base()) == []
    minimal = {"name": "m", "window": {"type": "tumbling", "size": "1m"},
               "aggregations": [{"name": "n", "fn": "count"}]}
    d = load_definition(minimal)
    assert d.event_time == PROCESSING
    assert d.key is None
    assert d.window.align_to == 0
    assert d.watermark.strategy == "bounded" and d.watermark.delay == 0
    assert d.trigger.emit == "final" and d.accumulation == "accumulating"
    assert d.sink.kind == "parquet" and d.sink.path is None
    assert d.source.path is None  # no source: a replay-only definition


def test_yaml_and_json_text_and_bytes_are_accepted() -> None:
    yaml_text = """
name: t
event_time: et
window: {type: session, gap: 30s}
aggregations:
  - {name: n, fn: count}
"""
    json_text = ('{"name": "t", "event_time": "et", "window": {"type": "session", "gap": 30000},'
                 ' "aggregations": [{"name": "n", "fn": "count"}]}')
    a = load_definition(yaml_text)
    assert a == load_definition(json_text) == load_definition(yaml_text.encode())
    assert a.window.gap == 30_000


def test_yaml_problems_are_reported_not_raised_raw() -> None:
    assert validate_raw("name: [unclosed") [0][1].startswith("not valid YAML or JSON")
    assert validate_raw("- a\n- b") == [("", "a definition is a mapping of fields (name, "
                                             "window, ...), got a list")]
    assert validate_raw("") == [("", "the definition is empty")]
    dup = "name: a\nname: b\nwindow: {type: global}\naggregations: [{name: n, fn: count}]"
    assert "duplicate key 'name'" in validate_raw(dup)[0][1]


def test_yaml_timestamp_for_align_to_is_read_as_utc() -> None:
    text = ("name: t\nwindow: {type: tumbling, size: 1h, align_to: 2026-01-01T00:30:00Z}\n"
            "aggregations: [{name: n, fn: count}]")
    assert load_definition(text).window.align_to == 1767227400000  # 2026-01-01T00:30Z


def test_all_errors_are_collected_in_document_order() -> None:
    doc = base(**{"window.size": "x", "aggregations[0].fn": "nope", "sink.kind": "s3"},
               key="rand()")
    fields = [f for f, _ in validate_raw(doc)]
    assert fields == ["key", "window.size", "aggregations[0].fn", "sink.kind"]


def test_custom_trigger_late_defaults_to_count_1_only_with_lateness() -> None:
    with_lateness = load_definition(base(allowed_lateness="5m", trigger={"emit": "custom"}))
    assert with_lateness.trigger.late == LateTrigger(kind="count", count=1)
    assert with_lateness.trigger.on_time is True
    without = load_definition(base(trigger={"emit": "custom", "early": {"count": 10}}))
    assert without.trigger.late is None
    assert without.trigger.early == EarlyTrigger(kind="count", count=10)
    explicit_none = load_definition(base(allowed_lateness="5m",
                                         trigger={"emit": "custom", "late": False}))
    assert explicit_none.trigger.late is None


def test_early_every_with_align_to() -> None:
    d = load_definition(base(trigger={"emit": "custom",
                                      "early": {"every": "PT30S", "align_to": "1970-01-01T00:00:10Z"},
                                      "late": {"after": "10s"}}, allowed_lateness="1m"))
    assert d.trigger.early == EarlyTrigger(kind="every", duration=30_000, align_to=10_000)
    assert d.trigger.late == LateTrigger(kind="after", duration=10_000)


def test_infinite_delay_and_lateness() -> None:
    d = load_definition(base(allowed_lateness="infinite", **{"watermark.delay": "infinite"}))
    assert d.allowed_lateness == INFINITE and d.watermark.delay == INFINITE


def test_scope_key_without_key_is_allowed() -> None:
    d = load_definition(base(key=DELETE, **{"watermark.scope": "key"}))
    assert d.key is None and d.watermark.scope == "key"


def test_processing_time_definition_is_valid_with_defaults() -> None:
    d = load_definition(base(event_time="processing", **{"watermark.delay": "0s"}))
    assert d.uses_processing_time


def test_expressions_checked_against_schema_case_insensitively() -> None:
    d = load_definition(base(key="upper(TEAM)", **{"aggregations[0].of": "Score * 2"}))
    assert d.key == "upper(TEAM)"


def test_parquet_without_schema_skips_column_checks() -> None:
    d = load_definition(base(**{"source.format": "parquet", "source.schema": DELETE},
                             key="anything"))
    assert d.source.schema is None and d.key == "anything"


def test_kafka_and_rate_sources() -> None:
    kafka = load_definition(base(source={
        "kind": "kafka", "schema": "team STRING, score INT, et TIMESTAMP, meta STRUCT<region: STRING>",
        "options": {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "scores"}}))
    assert kafka.source.format == "json" and kafka.source.path is None
    assert dict(kafka.source.options)["subscribe"] == "scores"
    rate = load_definition(base(source={"kind": "rate", "options": {"rowsPerSecond": 5}},
                                key="value % 3", event_time="timestamp",
                                aggregations=[{"name": "total", "fn": "sum", "of": "value"}]))
    assert rate.source.options == (("rowsPerSecond", "5"),)
    assert validate_raw(base(source={"kind": "rate"}))[0] == (
        "key", "unknown column 'team' (source.schema has timestamp, value)")


def test_options_are_strings_sorted() -> None:
    d = load_definition(base(**{"source.options": {"maxFilesPerTrigger": 1, "header": True,
                                                   "sep": ";"}}))
    assert d.source.options == (("header", "true"), ("maxFilesPerTrigger", "1"), ("sep", ";"))


def test_trigger_string_shorthand() -> None:
    assert load_definition(base(trigger="current")).trigger.emit == "current"
