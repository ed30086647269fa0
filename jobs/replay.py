"""Run a definition over a bounded JSONL input, deterministically, with no Spark and no catalog.

This is ``tidemark replay`` (and the engine of the transcript tests and the UI preview). Input
is one JSON object a line: records, and control lines ``{"$processing_time": T}`` /
``{"$watermark": T}``. Output is one JSON object a line, in emission order: panes, late
records, dead letters (docs/semantics.md, "Replay").

Records are fed to the engine in *arrival units* (docs/semantics.md, "Arrival model"): by
default every record is its own unit, as in a plain event log; ``arrival=Arrival("batch")``
makes the records between two control lines one micro-batch (``batch:N``: every N records), to
mirror a Spark job's micro-batches. Control lines always end a unit. The processing time before the first ``$processing_time`` line is that line's time (so a file that
starts with records does not "wait" from 1970 until its first clock line), or 0 when the file
has no such line. Malformed lines never stop the run: they become ``dead_letter`` lines,
emitted in line order just before the output of the unit whose records follow them. Malformed means:
not UTF-8 (a raw invalid byte), not JSON, not a JSON object, a string with a lone surrogate
(``"\\ud800"``: not Unicode text, and not writable as UTF-8), nested deeper than
:data:`MAX_RECORD_DEPTH`, a control line that is not exactly one known ``$`` key, an instant
outside the representable range, or a ``$processing_time`` that goes backwards (that one is
reported and ignored: it does not end the arrival unit it stands in).

With the vectorized engine the fired windows come out as columns
(:class:`jobs.engine.vectorized.columns.FinalPanes`): ``replay_file`` formats their output lines
straight from the columns (no ``Pane`` or dict per window; byte-identical to ``json.dumps`` of
``to_json()``, which the tests check), ``replay_lines`` builds the panes' dicts from
``to_panes()``. Both go through one driver, :func:`_replay_chunks`, typed against the engine
protocol (:class:`~jobs.engine.WindowingEngine`) and, for that columnar output,
:class:`ColumnarEngine`: replay never names an engine class.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard

from jobs.definition.limits import nesting_of
from jobs.definition.model import Definition
from jobs.engine import Engine, WindowingEngine, make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.extract import RecordExtractor, instant_problem
from jobs.engine.records import DeadLetter, Emission, RecordBatch
from jobs.timeutil import TimeParseError, parse_instant

EngineChoice = Literal["general", "auto", "vectorized"]
CONTROL_KEYS = ("$processing_time", "$watermark")
PROGRESS_EVERY = 10_000
"""``replay_file`` reports progress every this many input lines (if asked to)."""
MAX_RECORD_DEPTH = 64
"""Nesting of objects and arrays in one input line; a deeper line is a dead letter."""
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
RECORD_AT_A_TIME = Arrival("record")


class ColumnChunk(Protocol):
    """The output rows of one engine call as columns, in emission order: the final panes of
    the vectorized engine (``jobs.engine.vectorized.columns.FinalPanes``), or every pane and
    late record of an engine with triggers or merging / sliding windows
    (``jobs.engine.vectorized.emission_columns.EmissionColumns``)."""

    def __len__(self) -> int:
        """Output lines."""
        ...

    @property
    def pane_count(self) -> int: ...

    @property
    def late_count(self) -> int: ...

    def to_emissions(self) -> list[Emission]:
        """The same rows as the object API's emissions."""
        ...

    def json_lines(self) -> list[str]:
        """Per row, the output line ``json.dumps(e.to_json(), separators=(",", ":"),
        ensure_ascii=False)`` would write, formatted from the columns."""
        ...


class ColumnarOutput(Protocol):
    """The output of one call of a columnar engine: ``before`` (objects: late records, rare),
    then ``panes``; emission order is ``before`` then ``panes``."""

    @property
    def before(self) -> list[Emission]: ...

    @property
    def panes(self) -> ColumnChunk: ...


class ColumnarEngine(WindowingEngine, Protocol):
    """An engine that can also return its fired windows as columns (the vectorized engine):
    the same calls as :class:`~jobs.engine.WindowingEngine`, the same output in the same
    order, without a ``Pane`` per window."""

    def ingest_columns(self, batch: RecordBatch) -> ColumnarOutput: ...

    def advance_watermark_columns(self, wm_ms: int) -> ColumnarOutput: ...

    def end_of_input_columns(self) -> ColumnarOutput: ...


if TYPE_CHECKING:
    from jobs.engine.vectorized.engine import VectorizedEngine

    def _vectorized_is_columnar(eng: VectorizedEngine) -> ColumnarEngine:
        return eng  # mypy proves the vectorized engine implements the protocol


def is_columnar(eng: WindowingEngine) -> TypeGuard[ColumnarEngine]:
    """Whether ``eng`` offers the columnar calls of :class:`ColumnarEngine`."""
    return all(hasattr(eng, name) for name in (
        "ingest_columns", "advance_watermark_columns", "end_of_input_columns"))


@dataclass
class ReplayStats:
    """Counts a replay run reports (``tidemark replay`` prints them on stderr)."""

    lines: int = 0
    records: int = 0
    panes: int = 0
    late: int = 0
    dead_letters: int = 0
    ignored_watermarks: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"{self.lines} input lines, {self.records} records: {self.panes} panes, "
            f"{self.late} late records, {self.dead_letters} dead letters"
        )
        if self.ignored_watermarks:
            text += (
                f"; {self.ignored_watermarks} $watermark lines ignored "
                "(watermark.strategy is not source)"
            )
        return text


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    kind: Literal["record", "bad", "processing_time", "watermark"]
    value: Any
    """record: the object; bad: the DeadLetter; control: the instant in ms."""


def _parse(number: int, text: str) -> _Line | None:
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return _Line(number, "bad", DeadLetter(f"line is not JSON: {exc.msg}", text, number))
    except RecursionError:
        return _bad_text(number, text, f"line nests deeper than {MAX_RECORD_DEPTH} levels")
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        return _bad_text(number, text, f"line is not usable JSON: {exc}")
    if text.count("[") + text.count("{") > MAX_RECORD_DEPTH and (
            nesting_of(obj, MAX_RECORD_DEPTH) > MAX_RECORD_DEPTH):
        return _bad_text(number, text, f"line nests deeper than {MAX_RECORD_DEPTH} levels")
    if _SURROGATE.search(text) and _has_lone_surrogate(obj):
        return _bad_text(number, text, "line holds a lone UTF-16 surrogate (such as \\ud800): "
                                       "not Unicode text")
    if not isinstance(obj, dict):
        return _Line(number, "bad",
                     DeadLetter("line is not a JSON object", obj, number))
    dollars = [k for k in obj if isinstance(k, str) and k.startswith("$")]
    if not dollars:
        return _Line(number, "record", obj)
    if len(obj) != 1 or dollars[0] not in CONTROL_KEYS:
        return _Line(number, "bad", DeadLetter(
            "control line must be exactly one of {\"$processing_time\": T} or "
            "{\"$watermark\": T}", obj, number))
    name = dollars[0]
    try:
        instant = parse_instant(obj[name])
    except TimeParseError as exc:
        return _Line(number, "bad", DeadLetter(f"{name}: {exc}", obj, number, name))
    problem = instant_problem(instant)
    if problem:
        return _Line(number, "bad", DeadLetter(f"{name}: {problem}", obj, number, name))
    kind: Literal["processing_time", "watermark"] = (
        "processing_time" if name == "$processing_time" else "watermark"
    )
    return _Line(number, kind, instant)


def _bad_text(number: int, text: str, reason: str) -> _Line:
    """A dead letter whose record is the line's text (the parsed value cannot be written)."""
    shown = text if len(text) <= 1000 else text[:997] + "..."
    return _Line(number, "bad", DeadLetter(reason, shown, number))


def _has_lone_surrogate(obj: Any) -> bool:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _decode(number: int, raw: bytes) -> str | _Line:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _bad_text(number, raw.decode("utf-8", "replace"),
                         f"line is not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte "
                         f"{exc.start + 1})")


def _parsed(lines: Iterable[str | bytes | dict[str, Any]]) -> Iterator[_Line]:
    for number, item in enumerate(lines, start=1):
        if isinstance(item, bytes):
            text = _decode(number, item)
            if isinstance(text, _Line):
                yield text
                continue
        elif isinstance(item, str):
            text = item
        else:
            try:
                text = json.dumps(item)
            except (ValueError, TypeError, RecursionError) as exc:
                yield _Line(number, "bad", DeadLetter(f"line is not JSON: {exc}", repr(item)[:1000],
                                                      number))
                continue
        parsed = _parse(number, text)
        if parsed is not None:
            yield parsed


def replay_lines(
    defn: Definition,
    lines: Iterable[str | bytes | dict[str, Any]],
    *,
    eof_flush: bool = True,
    stats: ReplayStats | None = None,
    engine: EngineChoice = "general",
    arrival: Arrival = RECORD_AT_A_TIME,
) -> Iterator[dict[str, Any]]:
    """The replay output objects of ``lines`` (JSON text, or already parsed objects)."""
    for chunk in _replay_chunks(defn, lines, eof_flush=eof_flush, stats=stats, engine=engine,
                                arrival=arrival):
        if isinstance(chunk, list):
            for e in chunk:
                yield e.to_json()
        else:
            for e in chunk.to_emissions():
                yield e.to_json()


def _replay_chunks(
    defn: Definition,
    lines: Iterable[str | bytes | dict[str, Any]],
    *,
    eof_flush: bool,
    stats: ReplayStats | None,
    engine: EngineChoice,
    arrival: Arrival = RECORD_AT_A_TIME,
) -> Iterator[list[Emission] | ColumnChunk]:
    """The replay output in order, as chunks: lists of emissions (objects) and, from an engine
    with columnar output (the vectorized one), the fired windows of a call as columns. Counts
    go to ``stats`` as the chunks are produced."""
    st = stats if stats is not None else ReplayStats()
    eng: WindowingEngine = Engine(defn) if engine == "general" else make_engine(
        defn, vectorized=True if engine == "vectorized" else None)
    columns: ColumnarEngine | None = eng if is_columnar(eng) else None
    extractor = RecordExtractor(defn)
    source = defn.watermark.strategy == "source"
    it = _parsed(lines)

    # look ahead to the first processing-time line: it is the clock's starting point
    head: list[_Line] = []
    for parsed in it:
        head.append(parsed)
        if parsed.kind == "processing_time":
            break
    start = next((p.value for p in head if p.kind == "processing_time"), None)
    if start is not None:
        eng.advance_processing_time(start)

    pending: list[_Line] = []

    def count(emissions: Sequence[Emission]) -> Iterator[list[Emission]]:
        for e in emissions:
            if e.type == "pane":
                st.panes += 1
            elif e.type == "late":
                st.late += 1
            else:
                st.dead_letters += 1
        if emissions:
            yield list(emissions)

    def count_columns(out: ColumnarOutput) -> Iterator[list[Emission] | ColumnChunk]:
        """A columnar engine output: its objects, then its columns."""
        yield from count(out.before)
        if len(out.panes):
            st.panes += out.panes.pane_count
            st.late += out.panes.late_count
            yield out.panes

    def flush() -> Iterator[list[Emission] | ColumnChunk]:
        """Feed the records since the last control line as arrival units (``arrival``); a
        dead letter goes out just before the unit its line precedes."""
        if not pending:
            return
        recs = [p for p in pending if p.kind == "record"]
        bad: list[DeadLetter] = [p.value for p in pending if p.kind == "bad"]
        pending.clear()
        batch, dead = extractor.extract(
            [p.value for p in recs], _processing_time(eng), lines=[p.number for p in recs],
        )
        st.records += len(batch)
        letters = sorted([*bad, *dead], key=lambda d: d.line or 0)
        dead_lines = {d.line for d in dead}
        rows = [p.number for p in recs if p.number not in dead_lines]  # line of each row
        batch.processing_time = None  # arrives at the engine's current processing time
        cuts = (_plain_log_units(defn, eng, batch, rows, {d.line for d in letters})
                if arrival.kind == "record" else arrival.cuts(len(batch)))
        for lo, hi in cuts:
            last = rows[hi - 1]
            before = [d for d in letters if (d.line or 0) < last]
            letters = letters[len(before):]
            yield from count(before)
            unit = batch if (lo, hi) == (0, len(batch)) else batch.take(lo, hi)
            if columns is not None:
                yield from count_columns(columns.ingest_columns(unit))
            else:
                yield from count(eng.ingest(unit))
        yield from count(letters)

    for parsed in _chain(head, it):
        st.lines = parsed.number
        if parsed.kind == "processing_time":
            current = _processing_time(eng)
            if current is not None and parsed.value < current:
                # reported, and ignored: it does not end the arrival instant it stands in
                pending.append(_Line(parsed.number, "bad", DeadLetter(
                    f"$processing_time: goes back from {current} to {parsed.value}; ignored",
                    {"$processing_time": parsed.value}, parsed.number, "$processing_time")))
                continue
        if parsed.kind in ("record", "bad"):
            pending.append(parsed)
            continue
        yield from flush()
        if parsed.kind == "processing_time":
            yield from count(eng.advance_processing_time(parsed.value))
        elif source:
            if columns is not None:
                yield from count_columns(columns.advance_watermark_columns(parsed.value))
            else:
                yield from count(eng.advance_watermark(parsed.value))
        else:
            st.ignored_watermarks += 1
    yield from flush()
    if eof_flush:
        if columns is not None:
            yield from count_columns(columns.end_of_input_columns())
        else:
            yield from count(eng.end_of_input())


def _plain_log_units(defn: Definition, eng: WindowingEngine, batch: RecordBatch,
                     rows: list[int], dead_lines: set[int | None]) -> list[tuple[int, int]]:
    """The records of a plain log, one unit each, merged where that cannot change anything:
    a run of records that do not move the global watermark meets one watermark either way
    (and the engine fires count triggers after each record of a key inside a unit), so the
    run and the record that ends it (moving the watermark once, last) are one unit. Under
    ``scope: key``, a ``source`` watermark or the processing clock no record moves a
    watermark another record meets, so the whole run is one unit. Units still end at dead
    letters, which keep their place in the output. Only the speed differs from feeding one
    record at a time (the transcripts run both ways)."""
    n = len(batch)
    wmd = defn.watermark
    per_record = wmd.strategy == "bounded" and wmd.scope == "global" and (
        not defn.uses_processing_time)
    wm = eng.watermark
    times = batch.event_times.tolist()
    dead = sorted(d for d in dead_lines if d is not None)
    cuts: list[tuple[int, int]] = []
    lo = 0
    for i in range(n):
        end = i + 1 == n
        if per_record:
            cand = times[i] - wmd.delay
            if wm is None or cand > wm:
                wm = cand
                end = True
        if not end and dead:
            j = bisect.bisect_right(dead, rows[i])  # a dead letter between this row and the next
            end = j < len(dead) and dead[j] < rows[i + 1]
        if end:
            cuts.append((lo, i + 1))
            lo = i + 1
    return cuts


def _processing_time(eng: WindowingEngine) -> int | None:
    """The engine's processing time: the general engine keeps it in its state, the compiled
    and vectorized engines on themselves (the protocol does not name it)."""
    pt = getattr(eng.state, "processing_time", None)
    if pt is None:
        pt = getattr(eng, "processing_time", None)
    return pt if isinstance(pt, int) else None


def _chain(head: list[_Line], rest: Iterator[_Line]) -> Iterator[_Line]:
    yield from head
    yield from rest


def _read_lines(src: Iterable[bytes], progress: Callable[[int], None] | None) -> Iterator[bytes]:
    if progress is None:
        yield from (line.rstrip(b"\n") for line in src)
        return
    for n, line in enumerate(src, start=1):
        if n % PROGRESS_EVERY == 0:
            progress(n)
        yield line.rstrip(b"\n")


def replay_file(
    defn: Definition,
    input_path: str,
    output_path: str,
    *,
    eof_flush: bool = True,
    engine: EngineChoice = "general",
    progress: Callable[[int], None] | None = None,
    arrival: Arrival = RECORD_AT_A_TIME,
) -> ReplayStats:
    """Replay ``input_path`` into ``output_path`` (``-`` is stdin / stdout). ``progress`` is
    called with the number of input lines read, every :data:`PROGRESS_EVERY` lines."""
    import sys

    stats = ReplayStats()
    # bytes: a line that is not UTF-8 is one dead letter, not the end of the run
    src = sys.stdin.buffer if input_path == "-" else open(input_path, "rb")  # noqa: SIM115
    dst = sys.stdout if output_path == "-" else open(output_path, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for chunk in _replay_chunks(defn, _read_lines(src, progress),
                                    eof_flush=eof_flush, stats=stats, engine=engine,
                                    arrival=arrival):
            if isinstance(chunk, list):
                for e in chunk:
                    dst.write(json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False))
                    dst.write("\n")
            else:  # columns: the same lines, formatted without building panes
                dst.writelines(line + "\n" for line in chunk.json_lines())
    finally:
        if src is not sys.stdin.buffer:
            src.close()
        if dst is not sys.stdout:
            dst.close()
    return stats
