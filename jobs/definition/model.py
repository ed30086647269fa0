"""The typed, validated form of a window definition.

These are configuration objects only (bytewax keeps `Clock`/`Windower` configuration apart from
their running logic and state; so do we): the engine, the Spark runtime, the catalog and the UI
all read them, none of them mutates them. Every duration is an ``int`` of milliseconds and every
instant an ``int`` of epoch milliseconds (UTC). ``INFINITE`` stands for the duration
``infinite`` (wait for the end of input); it is large enough that ``end + INFINITE`` is never
reached by a real watermark, yet still fits a signed 64-bit long for Spark.

Instances are produced by :func:`jobs.definition.parse.load_definition`, which fills every
default, so no field here is "unset" unless its docstring says it is optional for that kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

INFINITE: int = 2**62
"""Duration sentinel for ``infinite`` (``watermark.delay``, ``allowed_lateness``)."""

SourceKind = Literal["files", "kafka", "rate"]
SourceFormat = Literal["json", "csv", "parquet"]
WatermarkStrategy = Literal["bounded", "source"]
WatermarkScope = Literal["global", "key"]
WindowType = Literal["tumbling", "hopping", "sliding", "session", "global"]
LatenessBasis = Literal["window", "event"]
EmitMode = Literal["final", "current", "custom"]
EarlyKind = Literal["after", "every", "count"]
LateKind = Literal["count", "after"]
Accumulation = Literal["discarding", "accumulating", "retracting"]
AggFn = Literal[
    "count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct"
]
SinkKind = Literal["parquet", "catalog", "console", "kafka", "delta"]

PROCESSING = "processing"
"""The word that, as ``event_time``, selects the processing-time clock."""


@dataclass(frozen=True, slots=True)
class Source:
    kind: SourceKind = "files"
    path: str | None = None
    format: SourceFormat | None = "json"
    schema: str | None = None
    """Spark DDL, e.g. ``"team STRING, score INT, et TIMESTAMP"``."""
    options: tuple[tuple[str, str], ...] = ()
    """Extra reader options as sorted (name, value) pairs, e.g. maxFilesPerTrigger."""


@dataclass(frozen=True, slots=True)
class Watermark:
    strategy: WatermarkStrategy = "bounded"
    delay: int = 0
    scope: WatermarkScope = "global"
    idle_advance: bool = False


@dataclass(frozen=True, slots=True)
class Window:
    type: WindowType
    size: int | None = None
    """tumbling, hopping, sliding; None otherwise."""
    step: int | None = None
    """hopping only; None otherwise."""
    gap: int | None = None
    """session only; None otherwise."""
    align_to: int = 0
    """tumbling, hopping: epoch ms that window starts are aligned to (default 1970-01-01)."""


@dataclass(frozen=True, slots=True)
class EarlyTrigger:
    kind: EarlyKind
    duration: int | None = None
    """after / every: processing-time duration in ms."""
    count: int | None = None
    """count: number of elements in the pane."""
    align_to: int = 0
    """every: processing-time boundaries are align_to + k*duration."""


@dataclass(frozen=True, slots=True)
class LateTrigger:
    kind: LateKind
    count: int | None = None
    duration: int | None = None


@dataclass(frozen=True, slots=True)
class Trigger:
    """The trigger as written: only canonical JSON and diffs read it. What runs reads
    :func:`jobs.definition.trigger.effective_trigger`, which expands the ``final`` /
    ``current`` shorthands into the parts that fire."""

    emit: EmitMode = "final"
    early: EarlyTrigger | None = None
    on_time: bool = True
    late: LateTrigger | None = None


@dataclass(frozen=True, slots=True)
class Aggregation:
    name: str
    fn: AggFn
    of: str | None = None
    """SQL expression over source columns; None only for ``count`` (count records)."""


@dataclass(frozen=True, slots=True)
class Sink:
    kind: SinkKind = "parquet"
    path: str | None = None
    topic: str | None = None
    """kafka only: the topic panes are written to (one message per pane, docs/kafka.md)."""
    options: tuple[tuple[str, str], ...] = ()
    """kafka only: producer options as sorted (name, value) pairs; needs
    ``kafka.bootstrap.servers``; credentials only as ``${env:..}`` / ``${secret:..}``."""
    late_topic: str | None = None
    """kafka only, optional: where late records are sent too."""
    dead_letter_topic: str | None = None
    """kafka only, optional: where dead letters are sent too."""


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    window: Window
    aggregations: tuple[Aggregation, ...]
    description: str = ""
    source: Source = field(default_factory=Source)
    key: str | None = None
    """SQL expression; None = one global key (every record has the key null)."""
    event_time: str = PROCESSING
    """SQL expression (timestamp or epoch ms) or the word ``processing``."""
    watermark: Watermark = field(default_factory=Watermark)
    allowed_lateness: int = 0
    lateness_basis: LatenessBasis = "window"
    trigger: Trigger = field(default_factory=Trigger)
    accumulation: Accumulation = "accumulating"
    sink: Sink = field(default_factory=Sink)

    @property
    def uses_processing_time(self) -> bool:
        return self.event_time == PROCESSING
