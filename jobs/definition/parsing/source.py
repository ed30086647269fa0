"""The ``source``, ``key``/``event_time`` expressions and ``sink`` sections of a definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jobs.definition.errors import DefinitionError
from jobs.definition.model import (
    PROCESSING,
    Sink,
    Source,
)
from jobs.definition.parsing.fields import (
    Collector,
    check_keys,
    enum_field,
    kind_of,
    section_of,
    text_field,
)
from jobs.definition.schema import Schema, parse_schema
from jobs.definition.sql import check_expression
from jobs.kafka.columns import METADATA_DDL as KAFKA_METADATA_DDL
from jobs.kafka.columns import METADATA_NAMES as KAFKA_METADATA_NAMES
from jobs.kafka.secrets import check_options as check_secret_options

SOURCE_KINDS = ("files", "kafka", "rate")


SOURCE_FORMATS = ("json", "csv", "parquet")


RATE_SCHEMA = "timestamp TIMESTAMP, value BIGINT"
"""The fixed columns of Spark's rate source (used to check expressions)."""


KAFKA_SUBSCRIBE = ("subscribe", "subscribePattern", "assign")


SINK_KINDS = ("parquet", "catalog", "console", "kafka", "delta")


KAFKA_SINK_FIELDS = ("topic", "options", "late_topic", "dead_letter_topic")


SINK_FIELDS = ("kind", "path", *KAFKA_SINK_FIELDS)


KAFKA_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


def parse_source(c: Collector, raw: Mapping[str, Any]) -> tuple[Source | None, Schema | None]:
    if raw.get("source") is None:
        return Source(), None  # a replay-only definition: no source yet (see docs)
    section = section_of(c, raw, "source")
    if section is None:
        return None, None
    check_keys(c, section, ("kind", "path", "format", "schema", "options"), "source")
    kind = enum_field(c, "source.kind", section.get("kind"), SOURCE_KINDS, "files")
    path: str | None = None
    fmt: str | None = None
    schema_text: str | None = None
    schema: Schema | None = None

    if kind == "files":
        path = text_field(c, "source.path", section.get("path"))
        if path is None and section.get("path") is None:
            c.add("source.path", "is required for a files source (the directory new files land in)")
        if section.get("format") is None:
            c.add("source.format", "is required for a files source (json, csv or parquet)")
        else:
            fmt = enum_field(c, "source.format", section.get("format"), SOURCE_FORMATS, None)
    elif kind == "kafka":
        if section.get("path") is not None:
            c.add("source.path", "is not used by a kafka source (set options.subscribe)")
        fmt = enum_field(c, "source.format", section.get("format"), ("json", "csv"), "json")
    elif kind == "rate":
        for extra in ("path", "format", "schema"):
            if section.get(extra) is not None:
                c.add(f"source.{extra}", "is not used by a rate source (its columns are "
                                         f"{RATE_SCHEMA})")
        schema = parse_schema(RATE_SCHEMA)

    if kind in ("files", "kafka"):
        raw_schema = section.get("schema")
        if raw_schema is None:
            if fmt in ("json", "csv"):
                c.add("source.schema", f"is required for {fmt} input (Spark DDL, e.g. "
                                       "'team STRING, score INT, et TIMESTAMP')")
        else:
            schema_text = text_field(c, "source.schema", raw_schema)
            if schema_text is not None:
                text = schema_text
                schema = c.take(lambda: _schema(text))
                if schema is None:
                    schema_text = None
                elif kind == "kafka":
                    schema = _kafka_schema(c, text, schema)

    options = _options(c, section.get("options"))
    if kind == "kafka" and options is not None:
        names = {k for k, _ in options}
        if "kafka.bootstrap.servers" not in names:
            c.add("source.options", "a kafka source needs kafka.bootstrap.servers")
        chosen = [k for k in KAFKA_SUBSCRIBE if k in names]
        if len(chosen) != 1:
            c.add("source.options", "a kafka source needs exactly one of subscribe, "
                                    "subscribePattern or assign")
        for error in check_secret_options(dict(options), "source.options"):
            c.add(*error)
    if kind is None or options is None:
        return None, schema
    return (
        Source(kind=kind, path=path, format=fmt, schema=schema_text, options=options),  # type: ignore[arg-type]
        schema,
    )


def _kafka_schema(c: Collector, text: str, schema: Schema) -> Schema | None:
    """The value's columns plus the Kafka metadata columns expressions may use."""
    clash = [n for n in KAFKA_METADATA_NAMES if schema.field(n) is not None]
    if clash:
        c.add("source.schema", f"{', '.join(clash)} is a Kafka metadata column; rename it")
        return None
    return c.take(lambda: _schema(f"{text}, {KAFKA_METADATA_DDL}"))


def _schema(text: str) -> Schema:
    try:
        return parse_schema(text)
    except DefinitionError as exc:
        raise DefinitionError([("source.schema", exc.message)]) from None


def _options(c: Collector, value: Any,
             where: str = "source.options") -> tuple[tuple[str, str], ...] | None:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        c.add(where, f"must be a mapping of option name to value, got {kind_of(value)}")
        return None
    pairs: list[tuple[str, str]] = []
    ok = True
    for k, v in value.items():
        field = f"{where}.{k}"
        if not isinstance(k, str) or not k.strip():
            c.add(where, f"option names must be text, got {kind_of(k)}")
            ok = False
        elif isinstance(v, bool):
            pairs.append((k, "true" if v else "false"))
        elif isinstance(v, str | int | float):
            pairs.append((k, str(v)))
        else:
            c.add(field, f"must be text, a number or a boolean, got {kind_of(v)}")
            ok = False
    return tuple(sorted(pairs)) if ok else None


def parse_expression(
    c: Collector, field: str, value: Any, schema: Schema | None, inferred: bool = False
) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        c.add(field, f"must be an SQL expression (text), got {kind_of(value)}")
        return None
    problems = check_expression(value, field, schema, inferred_schema=inferred)
    for problem in problems:
        c.add(*problem)
    return None if problems else value.strip()


def parse_event_time(c: Collector, value: Any, schema: Schema | None, inferred: bool) -> str | None:
    if value is None:
        return PROCESSING
    if isinstance(value, str) and value.strip() == PROCESSING:
        return PROCESSING
    return parse_expression(c, "event_time", value, schema, inferred)


def parse_sink(c: Collector, raw: Mapping[str, Any]) -> Sink | None:
    if raw.get("sink") is None:
        return Sink()
    section = section_of(c, raw, "sink")
    if section is None:
        return None
    check_keys(c, section, SINK_FIELDS, "sink")
    kind = enum_field(c, "sink.kind", section.get("kind"), SINK_KINDS, "parquet")
    path = None
    if kind != "kafka":
        for extra in KAFKA_SINK_FIELDS:
            if section.get(extra) is not None:
                c.add(f"sink.{extra}", f"is only used by a kafka sink, not {kind}")
                return None
    if kind in ("parquet", "delta"):
        if section.get("path") is not None:
            path = text_field(c, "sink.path", section.get("path"))
            if path is None:
                return None
    elif kind is not None and section.get("path") is not None:
        c.add("sink.path", f"is only used by a parquet sink or a delta sink, not {kind}")
        return None
    if kind == "kafka":
        return _kafka_sink(c, section)
    return None if kind is None else Sink(kind=kind, path=path)


def _kafka_sink(c: Collector, section: Mapping[str, Any]) -> Sink | None:
    """A kafka sink: a topic, and producer options with the bootstrap servers."""
    topic = text_field(c, "sink.topic", section.get("topic"))
    if section.get("topic") is None:
        c.add("sink.topic", "is required for a kafka sink (the topic panes are written to)")
    elif topic is not None and not KAFKA_TOPIC_RE.fullmatch(topic):
        c.add("sink.topic", "must be a Kafka topic name (letters, digits, '.', '_', '-')")
        topic = None
    side: dict[str, str | None] = {}
    for name in ("late_topic", "dead_letter_topic"):
        side[name] = None
        if section.get(name) is not None:
            value = text_field(c, f"sink.{name}", section.get(name))
            if value is not None and not KAFKA_TOPIC_RE.fullmatch(value):
                c.add(f"sink.{name}", "must be a Kafka topic name (letters, digits, '.', '_', '-')")
                return None
            side[name] = value
    options = _options(c, section.get("options"), "sink.options")
    if options is not None:
        if "kafka.bootstrap.servers" not in dict(options):
            c.add("sink.options", "a kafka sink needs kafka.bootstrap.servers")
            return None
        for error in check_secret_options(dict(options), "sink.options"):
            c.add(*error)
    if topic is None or options is None:
        return None
    return Sink(kind="kafka", topic=topic, options=options, late_topic=side["late_topic"],
                dead_letter_topic=side["dead_letter_topic"])
