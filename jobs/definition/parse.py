"""Reading a definition: YAML/JSON text (or an already parsed mapping) -> :class:`Definition`.

Validation collects every problem it can find instead of stopping at the first, because the UI
shows them next to their fields as the user types (:func:`validate_raw`) and a CLI user wants
to fix a file in one go. A section whose own fields are broken is skipped by the cross-field
rules that need it (so one typo does not produce five follow-on errors).

Rules that docs/semantics.md leaves open are decided here and written down in
``docs/definition.md``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any, TypeVar

import yaml

from jobs.definition.durations import parse_duration
from jobs.definition.errors import DefinitionError, FieldError
from jobs.definition.limits import (
    MAX_AGGREGATIONS,
    MAX_DOCUMENT_CHARS,
    MAX_DOCUMENT_DEPTH,
    MAX_DOCUMENT_NODES,
    MAX_NUMBER_DIGITS,
    nesting_of,
)
from jobs.definition.model import (
    INFINITE,
    PROCESSING,
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Sink,
    Source,
    Trigger,
    Watermark,
    Window,
)
from jobs.definition.schema import Schema, parse_schema
from jobs.definition.sql import check_expression
from jobs.definition.windows import (
    PARAM_NAMES,
    WINDOW_TYPES,
    ParamName,
    kind_class,
    kinds_with,
    param_names,
)
from jobs.kafka.columns import METADATA_DDL as KAFKA_METADATA_DDL
from jobs.kafka.columns import METADATA_NAMES as KAFKA_METADATA_NAMES
from jobs.kafka.secrets import check_options as check_secret_options
from jobs.timeutil import TimeParseError, parse_instant

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,62}")
AGG_NAME_RE = re.compile(r"[a-z_][a-z0-9_]{0,62}")

TOP_FIELDS = (
    "name", "description", "source", "key", "event_time", "watermark", "window",
    "allowed_lateness", "lateness_basis", "trigger", "accumulation", "aggregations", "sink",
)
SOURCE_KINDS = ("files", "kafka", "rate")
SOURCE_FORMATS = ("json", "csv", "parquet")
WINDOW_PARAMS: dict[str, tuple[str, ...]] = {t: param_names(t) for t in WINDOW_TYPES}
ALL_WINDOW_PARAMS: tuple[str, ...] = PARAM_NAMES
AGG_FNS = ("count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct")
AGG_FN_HINTS = {
    "avg": "mean", "average": "mean", "cnt": "count", "distinct": "count_distinct",
    "count_unique": "count_distinct", "list": "collect", "collect_list": "collect",
    "approx_count_distinct": "count_distinct",
}
RESERVED_OUTPUT_NAMES = frozenset({
    "type", "key", "window_start", "window_end", "timing", "pane_index", "is_first", "is_last",
    "retraction", "values", "emitted_at", "watermark", "first_event_time", "last_event_time",
    "event_time", "reason", "record", "line", "job", "definition", "store",
})
"""Output fields of a pane / late / dead-letter line: an aggregation may not shadow them (the
Spark sinks write panes flat, one column per aggregation next to these)."""

RATE_SCHEMA = "timestamp TIMESTAMP, value BIGINT"
"""The fixed columns of Spark's rate source (used to check expressions)."""
KAFKA_SUBSCRIBE = ("subscribe", "subscribePattern", "assign")
SINK_KINDS = ("parquet", "catalog", "console", "kafka", "delta")
KAFKA_SINK_FIELDS = ("topic", "options", "late_topic", "dead_letter_topic")
SINK_FIELDS = ("kind", "path", *KAFKA_SINK_FIELDS)
KAFKA_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")

T = TypeVar("T")


class _Collector:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self._seen: set[FieldError] = set()

    def add(self, field: str, message: str) -> None:
        if (field, message) not in self._seen:
            self._seen.add((field, message))
            self.errors.append((field, message))

    def take(self, fn: Callable[[], T]) -> T | None:
        """Run a parser that raises DefinitionError; record its errors and return None."""
        try:
            return fn()
        except DefinitionError as exc:
            for error in exc.errors:
                self.add(*error)
            return None


# ------------------------------------------------------------------------------------ entry points


def load_definition(source: str | bytes | Mapping[str, Any]) -> Definition:
    """A validated :class:`Definition` from YAML or JSON text, bytes or a parsed mapping.

    Raises :class:`DefinitionError` holding every problem found."""
    raw = read_document(source)
    definition, errors = _build(raw)
    if errors or definition is None:
        raise DefinitionError(errors)
    return definition


def validate_raw(raw: Mapping[str, Any] | str | bytes) -> list[FieldError]:
    """Every ``(field path, message)`` problem of a definition, without raising (for the UI)."""
    try:
        document = read_document(raw)
    except DefinitionError as exc:
        return list(exc.errors)
    return _build(document)[1]


def read_document(source: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    """Parse YAML/JSON text (duplicate keys are an error) or pass a mapping through.

    The size, nesting and number limits of :mod:`jobs.definition.limits` are checked first, on
    the text's event stream (libyaml's parser does not recurse), before YAML builds objects."""
    if isinstance(source, Mapping):
        if nesting_of(source, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH:
            raise DefinitionError(f"nests mappings and lists more than {MAX_DOCUMENT_DEPTH} deep")
        _check_numbers(source)
        return source
    if isinstance(source, bytes | str) and len(source) > MAX_DOCUMENT_CHARS:
        raise DefinitionError(f"the definition is {len(source)} characters long; at most "
                              f"{MAX_DOCUMENT_CHARS} are read")
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DefinitionError(f"the definition is not UTF-8 text ({exc.reason})") from None
    if not isinstance(source, str):
        raise DefinitionError(
            f"expected YAML/JSON text or a mapping, got {type(source).__name__}"
        )
    try:
        _check_shape(source)
        document = yaml.load(source, Loader=_StrictLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        raise DefinitionError(_yaml_message(exc)) from None
    except yaml.YAMLError as exc:
        raise DefinitionError(f"not valid YAML or JSON: {exc}") from None
    if document is None:
        raise DefinitionError("the definition is empty")
    if not isinstance(document, Mapping):
        raise DefinitionError(
            f"a definition is a mapping of fields (name, window, ...), got {_kind(document)}"
        )
    return document


_SafeBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x faster
_PLAIN_NUMBER = re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?")


def _check_numbers(document: Mapping[str, Any]) -> None:
    """A parsed document (already known to be shallow) holds no integer longer than the limit
    (the text path checks it on the event stream): messages print values, and Python cannot
    print an integer of more than 4300 digits."""
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
        elif type(value) is int and value.bit_length() > MAX_NUMBER_DIGITS * 3.33:
            raise DefinitionError(f"a number of more than {MAX_NUMBER_DIGITS} digits is too "
                                  "long", path)


def _check_shape(text: str) -> None:
    """Measure a document on its YAML event stream: nesting depth, node count (aliases count
    as what they expand to) and the length of unquoted numbers, naming the field that passes
    a limit. Linear in the text, and no recursion."""
    path: list[Any] = []  # per open container: its [key or index, expecting-key flag]
    nodes = 0
    sizes: dict[str, int] = {}
    opened: list[tuple[str | None, int]] = []  # anchor and node count where a container began

    def where() -> str:
        parts = []
        for frame in path:
            label = frame[0]
            if isinstance(label, int):
                parts.append(f"[{label}]")
            else:
                parts.append(("." if parts else "") + str(label))
        return "".join(parts)

    def value_done() -> None:
        if path:
            frame = path[-1]
            if isinstance(frame[0], int):
                frame[0] += 1
            else:
                frame[1] = True

    for event in yaml.parse(text, Loader=_SafeBase):
        if isinstance(event, yaml.CollectionStartEvent):
            nodes += 1
            is_key = bool(path) and path[-1][1] is True
            if is_key:  # a mapping or list used as a key: YAML allows it, a definition never
                path[-1][0], path[-1][1] = "?", False
            if len(path) >= MAX_DOCUMENT_DEPTH:
                raise DefinitionError(
                    f"nests mappings and lists more than {MAX_DOCUMENT_DEPTH} deep", where())
            opened.append((event.anchor, nodes))
            path.append([0, False] if isinstance(event, yaml.SequenceStartEvent) else ["", True])
        elif isinstance(event, yaml.CollectionEndEvent):
            path.pop()
            anchor, start = opened.pop()
            if anchor is not None:
                sizes[anchor] = nodes - start + 1
            value_done()
        elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            if path and path[-1][1] is True:  # a mapping key
                path[-1][0] = event.value if isinstance(event, yaml.ScalarEvent) else "*"
                path[-1][1] = False
            else:
                if isinstance(event, yaml.AliasEvent):
                    nodes += sizes.get(event.anchor or "", 1)
                else:
                    nodes += 1
                    if event.anchor is not None:
                        sizes[event.anchor] = 1
                if (isinstance(event, yaml.ScalarEvent) and event.implicit[0]
                        and len(event.value) > MAX_NUMBER_DIGITS
                        and _PLAIN_NUMBER.fullmatch(event.value)):
                    raise DefinitionError(
                        f"a number of {len(event.value)} characters is too long (at most "
                        f"{MAX_NUMBER_DIGITS})", where())
                value_done()
        if nodes > MAX_DOCUMENT_NODES:
            raise DefinitionError(
                f"has more than {MAX_DOCUMENT_NODES} values (YAML aliases count as expanded)",
                where())


class _StrictLoader(_SafeBase):
    """Safe loader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            continue
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = exc.problem or exc.context or "syntax error"
    return f"not valid YAML or JSON: {problem}{where}"


# --------------------------------------------------------------------------------------- helpers


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value!r}"
    return f"{type(value).__name__} {value!r}"


MAX_UNKNOWN_REPORTED = 20
"""Unknown fields of one section reported one by one (with a did-you-mean hint); the rest are
counted in one more error, so a flood of fields costs linear time and a readable report."""


def _check_keys(c: _Collector, raw: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    unknown = [key for key in raw if key not in allowed]
    if len(unknown) > MAX_UNKNOWN_REPORTED:
        more = len(unknown) - MAX_UNKNOWN_REPORTED
        c.add(prefix, f"{more} more unknown fields (allowed: {', '.join(allowed)})")
    for key in unknown[:MAX_UNKNOWN_REPORTED]:
        field = f"{prefix}.{key}" if prefix else str(key)
        close = difflib.get_close_matches(str(key), allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
        c.add(field, f"unknown field{hint}")


def _section(c: _Collector, raw: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        c.add(key, f"must be a mapping of fields, got {_kind(value)}")
        return None
    return value


def _enum(c: _Collector, field: str, value: Any, options: tuple[str, ...], default: str | None) -> Any:
    if value is None:
        if default is None:
            c.add(field, f"is required (one of {', '.join(options)})")
        return default
    if isinstance(value, str) and value in options:
        return value
    close = difflib.get_close_matches(str(value), options, n=1) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    c.add(field, f"must be one of {', '.join(options)}, got {_kind(value)}{hint}")
    return None


def _bool(c: _Collector, field: str, value: Any, default: bool) -> bool | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    c.add(field, f"must be true or false, got {_kind(value)}")
    return None


def _text(c: _Collector, field: str, value: Any, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            c.add(field, "is required")
        return None
    if not isinstance(value, str):
        c.add(field, f"must be text, got {_kind(value)}")
        return None
    if not value.strip():
        c.add(field, "must not be empty")
        return None
    return value


def _duration(
    c: _Collector, field: str, value: Any, *, default: int | None, positive: bool = False,
    allow_infinite: bool = False,
) -> int | None:
    if value is None:
        if default is None:
            c.add(field, "is required")
        return default
    ms = c.take(lambda: parse_duration(value, field, allow_infinite=allow_infinite))
    if ms is not None and positive and ms <= 0:
        c.add(field, "must be greater than 0")
        return None
    return ms


def _instant(c: _Collector, field: str, value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, date) and not isinstance(value, datetime):  # YAML `2026-01-01`
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, bool) or not isinstance(value, str | int | float | datetime):  # noqa: SIM114
        c.add(field, f"must be an ISO-8601 UTC time or epoch milliseconds, got {_kind(value)}")
        return None
    if isinstance(value, float) and not value.is_integer():
        c.add(field, f"{value!r} is not a whole number of milliseconds")
        return None
    try:
        return parse_instant(value)
    except TimeParseError:
        c.add(field, f"must be an ISO-8601 UTC time or epoch milliseconds, got {_kind(value)}")
        return None


def _positive_int(c: _Collector, field: str, value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and value >= 1:
            return int(value)
        c.add(field, f"must be a whole number of at least 1, got {_kind(value)}")
        return None
    if value < 1:
        c.add(field, f"must be at least 1, got {value}")
        return None
    return value


# --------------------------------------------------------------------------------------- sections


def _build(raw: Mapping[str, Any]) -> tuple[Definition | None, list[FieldError]]:
    c = _Collector()
    _check_keys(c, raw, TOP_FIELDS, "")

    name = _text(c, "name", raw.get("name"), required=True)
    if name is not None and not NAME_RE.fullmatch(name):
        c.add("name", f"{name!r} must match [a-z][a-z0-9_]{{0,62}} (lower case letter first, "
                      "then lower case letters, digits or _; at most 63 characters)")
        name = None
    description = raw.get("description")
    if description is None:
        description = ""
    elif not isinstance(description, str):
        c.add("description", f"must be text, got {_kind(description)}")

    source, schema = _source(c, raw)
    # a source without a declared schema (parquet) runs on the schema Spark infers, where a
    # name that is no column may be read as a function: such names are refused (sql.py)
    inferred = raw.get("source") is not None and schema is None
    key = _expression(c, "key", raw.get("key"), schema, inferred)
    event_time = _event_time(c, raw.get("event_time"), schema, inferred)
    watermark = _watermark(c, raw)
    window = _window(c, raw)
    allowed_lateness = _duration(
        c, "allowed_lateness", raw.get("allowed_lateness"), default=0, allow_infinite=True
    )
    lateness_basis = _enum(
        c, "lateness_basis", raw.get("lateness_basis"), ("window", "event"), "window"
    )
    trigger = _trigger(c, raw, allowed_lateness)
    accumulation = _enum(
        c, "accumulation", raw.get("accumulation"),
        ("discarding", "accumulating", "retracting"), "accumulating",
    )
    aggregations = _aggregations(c, raw.get("aggregations"), schema, inferred)
    sink = _sink(c, raw)

    if event_time == PROCESSING:
        _processing_rules(c, raw, watermark, allowed_lateness, lateness_basis)

    if c.errors:
        return None, c.errors
    assert name is not None and window is not None and aggregations is not None
    assert watermark is not None and trigger is not None and source is not None
    assert sink is not None and event_time is not None and allowed_lateness is not None
    definition = Definition(
        name=name,
        description=str(description),
        source=source,
        key=key,
        event_time=event_time,
        watermark=watermark,
        window=window,
        allowed_lateness=allowed_lateness,
        lateness_basis=lateness_basis,
        trigger=trigger,
        accumulation=accumulation,
        aggregations=aggregations,
        sink=sink,
    )
    return definition, []


def _source(c: _Collector, raw: Mapping[str, Any]) -> tuple[Source | None, Schema | None]:
    if raw.get("source") is None:
        return Source(), None  # a replay-only definition: no source yet (see docs)
    section = _section(c, raw, "source")
    if section is None:
        return None, None
    _check_keys(c, section, ("kind", "path", "format", "schema", "options"), "source")
    kind = _enum(c, "source.kind", section.get("kind"), SOURCE_KINDS, "files")
    path: str | None = None
    fmt: str | None = None
    schema_text: str | None = None
    schema: Schema | None = None

    if kind == "files":
        path = _text(c, "source.path", section.get("path"))
        if path is None and section.get("path") is None:
            c.add("source.path", "is required for a files source (the directory new files land in)")
        if section.get("format") is None:
            c.add("source.format", "is required for a files source (json, csv or parquet)")
        else:
            fmt = _enum(c, "source.format", section.get("format"), SOURCE_FORMATS, None)
    elif kind == "kafka":
        if section.get("path") is not None:
            c.add("source.path", "is not used by a kafka source (set options.subscribe)")
        fmt = _enum(c, "source.format", section.get("format"), ("json", "csv"), "json")
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
            schema_text = _text(c, "source.schema", raw_schema)
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


def _kafka_schema(c: _Collector, text: str, schema: Schema) -> Schema | None:
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


def _options(c: _Collector, value: Any,
             where: str = "source.options") -> tuple[tuple[str, str], ...] | None:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        c.add(where, f"must be a mapping of option name to value, got {_kind(value)}")
        return None
    pairs: list[tuple[str, str]] = []
    ok = True
    for k, v in value.items():
        field = f"{where}.{k}"
        if not isinstance(k, str) or not k.strip():
            c.add(where, f"option names must be text, got {_kind(k)}")
            ok = False
        elif isinstance(v, bool):
            pairs.append((k, "true" if v else "false"))
        elif isinstance(v, str | int | float):
            pairs.append((k, str(v)))
        else:
            c.add(field, f"must be text, a number or a boolean, got {_kind(v)}")
            ok = False
    return tuple(sorted(pairs)) if ok else None


def _expression(
    c: _Collector, field: str, value: Any, schema: Schema | None, inferred: bool = False
) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        c.add(field, f"must be an SQL expression (text), got {_kind(value)}")
        return None
    problems = check_expression(value, field, schema, inferred_schema=inferred)
    for problem in problems:
        c.add(*problem)
    return None if problems else value.strip()


def _event_time(c: _Collector, value: Any, schema: Schema | None, inferred: bool) -> str | None:
    if value is None:
        return PROCESSING
    if isinstance(value, str) and value.strip() == PROCESSING:
        return PROCESSING
    return _expression(c, "event_time", value, schema, inferred)


def _watermark(c: _Collector, raw: Mapping[str, Any]) -> Watermark | None:
    section = _section(c, raw, "watermark")
    if section is None:
        return Watermark() if raw.get("watermark") is None else None
    _check_keys(c, section, ("strategy", "delay", "scope", "idle_advance"), "watermark")
    strategy = _enum(c, "watermark.strategy", section.get("strategy"), ("bounded", "source"),
                     "bounded")
    delay = _duration(c, "watermark.delay", section.get("delay"), default=0, allow_infinite=True)
    scope = _enum(c, "watermark.scope", section.get("scope"), ("global", "key"), "global")
    idle = _bool(c, "watermark.idle_advance", section.get("idle_advance"), False)
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


def _processing_rules(
    c: _Collector, raw: Mapping[str, Any], watermark: Watermark | None,
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


def _window(c: _Collector, raw: Mapping[str, Any]) -> Window | None:
    if raw.get("window") is None:
        c.add("window", "is required (e.g. {type: tumbling, size: 2m})")
        return None
    section = _section(c, raw, "window")
    if section is None:
        return None
    _check_keys(c, section, ("type",) + ALL_WINDOW_PARAMS, "window")
    wtype = _enum(c, "window.type", section.get("type"), WINDOW_TYPES, None)
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
        parsed = (_duration(c, param.field, value, default=None, positive=True)
                  if param.unit == "duration" else _instant(c, param.field, value))
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


def _trigger(c: _Collector, raw: Mapping[str, Any], allowed_lateness: int | None) -> Trigger | None:
    value = raw.get("trigger")
    if value is None:
        return Trigger()
    if isinstance(value, str):  # shorthand: `trigger: final`
        emit = _enum(c, "trigger", value, ("final", "current", "custom"), None)
        if emit == "custom":
            return _custom_trigger(c, {}, allowed_lateness)
        return Trigger(emit=emit) if emit else None
    section = _section(c, raw, "trigger")
    if section is None:
        return None
    _check_keys(c, section, ("emit", "early", "on_time", "late"), "trigger")
    emit = _enum(c, "trigger.emit", section.get("emit"), ("final", "current", "custom"), "final")
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
    c: _Collector, section: Mapping[str, Any], allowed_lateness: int | None
) -> Trigger | None:
    early = _early(c, section.get("early"))
    on_time = _bool(c, "trigger.on_time", section.get("on_time"), True)
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


def _early(c: _Collector, value: Any) -> EarlyTrigger | None | bool:
    """None: no early firing; False: invalid (errors recorded)."""
    field = "trigger.early"
    if value is None or value is False:
        return None
    if not isinstance(value, Mapping):
        c.add(field, "must be one of {after: D}, {every: D, align_to: T} or {count: N}, got "
                     f"{_kind(value)}")
        return False
    _check_keys(c, value, ("after", "every", "align_to", "count"), field)
    kinds = [k for k in ("after", "every", "count") if value.get(k) is not None]
    if len(kinds) != 1:
        c.add(field, "must have exactly one of after, every or count")
        return False
    kind = kinds[0]
    if value.get("align_to") is not None and kind != "every":
        c.add(f"{field}.align_to", "is only allowed with every")
        return False
    if kind == "count":
        count = _positive_int(c, f"{field}.count", value["count"])
        return False if count is None else EarlyTrigger(kind="count", count=count)
    duration = _duration(c, f"{field}.{kind}", value[kind], default=None, positive=True)
    align = _instant(c, f"{field}.align_to", value.get("align_to")) if kind == "every" else 0
    if duration is None or align is None:
        return False
    if kind == "every":
        return EarlyTrigger(kind="every", duration=duration, align_to=align)
    return EarlyTrigger(kind="after", duration=duration)


def _late(c: _Collector, value: Any) -> LateTrigger | None | bool:
    field = "trigger.late"
    if value is False:
        return None  # explicit "no late panes"
    if not isinstance(value, Mapping):
        c.add(field, f"must be {{count: N}} or {{after: D}} (or false), got {_kind(value)}")
        return False
    _check_keys(c, value, ("count", "after"), field)
    kinds = [k for k in ("count", "after") if value.get(k) is not None]
    if len(kinds) != 1:
        c.add(field, "must have exactly one of count or after")
        return False
    if kinds[0] == "count":
        count = _positive_int(c, f"{field}.count", value["count"])
        return False if count is None else LateTrigger(kind="count", count=count)
    duration = _duration(c, f"{field}.after", value["after"], default=None, positive=True)
    return False if duration is None else LateTrigger(kind="after", duration=duration)


def _aggregations(
    c: _Collector, value: Any, schema: Schema | None, inferred: bool
) -> tuple[Aggregation, ...] | None:
    if value is None:
        c.add("aggregations", "is required: at least one, e.g. [{name: n, fn: count}]")
        return None
    if not isinstance(value, list):
        c.add("aggregations", f"must be a list, got {_kind(value)}")
        return None
    if not value:
        c.add("aggregations", "must have at least one aggregation")
        return None
    if len(value) > MAX_AGGREGATIONS:
        c.add("aggregations", f"has {len(value)} entries; at most {MAX_AGGREGATIONS} are allowed")
        return None
    result: list[Aggregation] = []
    seen: dict[str, int] = {}
    ok = True
    for i, item in enumerate(value):
        prefix = f"aggregations[{i}]"
        if not isinstance(item, Mapping):
            c.add(prefix, f"must be a mapping {{name, fn, of}}, got {_kind(item)}")
            ok = False
            continue
        _check_keys(c, item, ("name", "fn", "of"), prefix)
        name = _text(c, f"{prefix}.name", item.get("name"), required=True)
        if name is not None:
            if not AGG_NAME_RE.fullmatch(name):
                c.add(f"{prefix}.name", f"{name!r} must be a lower-case identifier "
                                        "([a-z_][a-z0-9_]*, at most 63 characters)")
                name = None
            elif name in RESERVED_OUTPUT_NAMES:
                c.add(f"{prefix}.name", f"{name!r} is reserved (it is an output field)")
                name = None
            elif name in seen:
                c.add(f"{prefix}.name", f"duplicate name {name!r} (also aggregations[{seen[name]}])")
                name = None
            else:
                seen[name] = i
        fn_raw = item.get("fn")
        fn = None
        if isinstance(fn_raw, str) and fn_raw in AGG_FN_HINTS:
            c.add(f"{prefix}.fn", f"unknown function {fn_raw!r}; use {AGG_FN_HINTS[fn_raw]}")
        else:
            fn = _enum(c, f"{prefix}.fn", fn_raw, AGG_FNS, None)
        of = item.get("of")
        of_text: str | None = None
        of_ok = True
        if of is None:
            if fn is not None and fn != "count":
                c.add(f"{prefix}.of", f"is required for {fn} (the column or SQL expression to "
                                      "aggregate)")
                of_ok = False
        else:
            of_text = _expression(c, f"{prefix}.of", of, schema, inferred)
            of_ok = of_text is not None
        if name is None or fn is None or not of_ok:
            ok = False
            continue
        result.append(Aggregation(name=name, fn=fn, of=of_text))
    return tuple(result) if ok else None


def _sink(c: _Collector, raw: Mapping[str, Any]) -> Sink | None:
    if raw.get("sink") is None:
        return Sink()
    section = _section(c, raw, "sink")
    if section is None:
        return None
    _check_keys(c, section, SINK_FIELDS, "sink")
    kind = _enum(c, "sink.kind", section.get("kind"), SINK_KINDS, "parquet")
    path = None
    if kind != "kafka":
        for extra in KAFKA_SINK_FIELDS:
            if section.get(extra) is not None:
                c.add(f"sink.{extra}", f"is only used by a kafka sink, not {kind}")
                return None
    if kind in ("parquet", "delta"):
        if section.get("path") is not None:
            path = _text(c, "sink.path", section.get("path"))
            if path is None:
                return None
    elif kind is not None and section.get("path") is not None:
        c.add("sink.path", f"is only used by a parquet sink or a delta sink, not {kind}")
        return None
    if kind == "kafka":
        return _kafka_sink(c, section)
    return None if kind is None else Sink(kind=kind, path=path)


def _kafka_sink(c: _Collector, section: Mapping[str, Any]) -> Sink | None:
    """A kafka sink: a topic, and producer options with the bootstrap servers."""
    topic = _text(c, "sink.topic", section.get("topic"))
    if section.get("topic") is None:
        c.add("sink.topic", "is required for a kafka sink (the topic panes are written to)")
    elif topic is not None and not KAFKA_TOPIC_RE.fullmatch(topic):
        c.add("sink.topic", "must be a Kafka topic name (letters, digits, '.', '_', '-')")
        topic = None
    side: dict[str, str | None] = {}
    for name in ("late_topic", "dead_letter_topic"):
        side[name] = None
        if section.get(name) is not None:
            value = _text(c, f"sink.{name}", section.get(name))
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


__all__ = ["INFINITE", "load_definition", "read_document", "validate_raw"]
