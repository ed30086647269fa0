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
emitted in line order just before the output of the unit whose records follow them.

With the vectorized engine the fired windows come out as columns
(:class:`jobs.engine.vectorized.columns.FinalPanes`): ``replay_file`` formats their output lines
straight from the columns (no ``Pane`` or dict per window; byte-identical to ``json.dumps`` of
``to_json()``, which the tests check), ``replay_lines`` builds the panes' dicts from
``to_panes()``. Both go through one driver, :func:`_replay_chunks`.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from jobs.definition.model import Definition
from jobs.engine import Engine, make_engine
from jobs.engine.arrival import Arrival
from jobs.engine.extract import RecordExtractor
from jobs.engine.records import DeadLetter, Emission
from jobs.timeutil import TimeParseError, parse_instant

if TYPE_CHECKING:
    from jobs.engine.vectorized.columns import FinalPanes

EngineChoice = Literal["general", "auto", "vectorized"]
CONTROL_KEYS = ("$processing_time", "$watermark")
RECORD_AT_A_TIME = Arrival("record")


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
    kind: Literal["processing_time", "watermark"] = (
        "processing_time" if name == "$processing_time" else "watermark"
    )
    return _Line(number, kind, instant)


def _parsed(lines: Iterable[str | dict[str, Any]]) -> Iterator[_Line]:
    for number, item in enumerate(lines, start=1):
        parsed = _parse(number, item if isinstance(item, str) else json.dumps(item))
        if parsed is not None:
            yield parsed


def replay_lines(
    defn: Definition,
    lines: Iterable[str | dict[str, Any]],
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
            for p in chunk.to_panes():
                yield p.to_json()


def _replay_chunks(
    defn: Definition,
    lines: Iterable[str | dict[str, Any]],
    *,
    eof_flush: bool,
    stats: ReplayStats | None,
    engine: EngineChoice,
    arrival: Arrival = RECORD_AT_A_TIME,
) -> Iterator[list[Emission] | FinalPanes]:
    """The replay output in order, as chunks: lists of emissions (objects) and, from an engine
    with columnar output (the vectorized one), the fired windows of a call as columns. Counts
    go to ``stats`` as the chunks are produced."""
    st = stats if stats is not None else ReplayStats()
    eng: Any = Engine(defn) if engine == "general" else make_engine(
        defn, vectorized=True if engine == "vectorized" else None)
    columnar = hasattr(eng, "ingest_columns")
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

    def count_columns(out: Any) -> Iterator[list[Emission] | FinalPanes]:
        """A columnar engine output (``ColumnarOutput``): its objects, then its panes."""
        yield from count(out.before)
        if len(out.panes):
            st.panes += len(out.panes)
            yield out.panes

    def flush() -> Iterator[list[Emission] | FinalPanes]:
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
            if columnar:
                yield from count_columns(eng.ingest_columns(unit))
            else:
                yield from count(eng.ingest(unit))
        yield from count(letters)

    for parsed in _chain(head, it):
        st.lines = parsed.number
        if parsed.kind in ("record", "bad"):
            pending.append(parsed)
            continue
        yield from flush()
        if parsed.kind == "processing_time":
            current = _processing_time(eng)
            if current is not None and parsed.value < current:
                yield from count([DeadLetter(
                    f"$processing_time: goes back from {current} to {parsed.value}; ignored",
                    {"$processing_time": parsed.value}, parsed.number, "$processing_time")])
                continue
            yield from count(eng.advance_processing_time(parsed.value))
        elif source:
            if columnar:
                yield from count_columns(eng.advance_watermark_columns(parsed.value))
            else:
                yield from count(eng.advance_watermark(parsed.value))
        else:
            st.ignored_watermarks += 1
    yield from flush()
    if eof_flush:
        if columnar:
            yield from count_columns(eng.end_of_input_columns())
        else:
            yield from count(eng.end_of_input())


def _plain_log_units(defn: Definition, eng: Any, batch: Any, rows: list[int],
                     dead_lines: set[int | None]) -> list[tuple[int, int]]:
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
    wm = getattr(eng, "watermark", None)
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


def _processing_time(eng: Any) -> int | None:
    state = getattr(eng, "state", None)
    pt = getattr(state, "processing_time", None)
    if pt is None:
        pt = getattr(eng, "processing_time", None)
    return pt if isinstance(pt, int) else None


def _chain(head: list[_Line], rest: Iterator[_Line]) -> Iterator[_Line]:
    yield from head
    yield from rest


def replay_file(
    defn: Definition,
    input_path: str,
    output_path: str,
    *,
    eof_flush: bool = True,
    engine: EngineChoice = "general",
    arrival: Arrival = RECORD_AT_A_TIME,
) -> ReplayStats:
    """Replay ``input_path`` into ``output_path`` (``-`` is stdin / stdout)."""
    import sys

    stats = ReplayStats()
    src = sys.stdin if input_path == "-" else open(input_path, encoding="utf-8")  # noqa: SIM115
    dst = sys.stdout if output_path == "-" else open(output_path, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for chunk in _replay_chunks(defn, (line.rstrip("\n") for line in src),
                                    eof_flush=eof_flush, stats=stats, engine=engine,
                                    arrival=arrival):
            if isinstance(chunk, list):
                for e in chunk:
                    dst.write(json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False))
                    dst.write("\n")
            else:  # columns: the same lines, formatted without building panes
                dst.writelines(line + "\n" for line in chunk.json_lines())
    finally:
        if src is not sys.stdin:
            src.close()
        if dst is not sys.stdout:
            dst.close()
    return stats
