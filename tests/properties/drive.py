"""Driving the real engine from property tests, and the hypothesis strategies they share.

The property tests feed the engine through its public Python API (``Engine`` / ``make_engine``,
``RecordBatch``, ``to_json()``) exactly as a host would: one ``advance_processing_time`` and one
``ingest`` per arrival instant, ``end_of_input`` at the end. Outputs are compared as the replay
JSON objects, the contract users see. Nothing here knows how the engine works inside.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from jobs.definition import load_definition
from jobs.definition.model import Definition
from jobs.engine import Engine, EngineState, RecordBatch, make_engine

from .oracle import OracleRecord


@dataclass(frozen=True)
class Rec:
    """One generated record. ``id`` is unique, so ``collect`` of it shows exactly which records
    a pane holds; ``x`` is the (nullable) value the other aggregations read."""

    id: int
    key: str | None
    t: int
    x: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "k": self.key, "t": self.t, "x": self.x}


Instant = tuple[int, list[Rec]]
"""(processing time, the records arriving then)."""

ALL_FNS = ("count", "sum", "min", "max", "mean", "first", "last", "collect", "count_distinct")


def all_aggregations() -> list[dict[str, Any]]:
    """Every function over ``x`` (nulls included), a record count, and the record ids."""
    aggs: list[dict[str, Any]] = [{"name": "n", "fn": "count"}]
    aggs += [{"name": f"x_{fn}", "fn": fn, "of": "x"} for fn in ALL_FNS]
    aggs.append({"name": "ids", "fn": "collect", "of": "id"})
    return aggs


def definition(
    window: dict[str, Any],
    *,
    delay: int | str = "infinite",
    lateness: int | str = 0,
    trigger: dict[str, Any] | None = None,
    accumulation: str = "accumulating",
    aggregations: list[dict[str, Any]] | None = None,
    basis: str = "window",
    scope: str = "global",
    strategy: str = "bounded",
    event_time: str = "t",
    idle_advance: bool = False,
) -> Definition:
    watermark: dict[str, Any] = {"strategy": strategy, "scope": scope}
    if strategy == "bounded" and event_time != "processing":
        watermark["delay"] = delay
        watermark["idle_advance"] = idle_advance
    return load_definition(
        {
            "name": "prop",
            "key": "k",
            "event_time": event_time,
            "watermark": watermark,
            "window": window,
            "allowed_lateness": lateness,
            "lateness_basis": basis,
            "trigger": trigger or {"emit": "final"},
            "accumulation": accumulation,
            "aggregations": aggregations or all_aggregations(),
        }
    )


def batch(defn: Definition, recs: Sequence[Rec], pt: int) -> RecordBatch:
    cols: dict[str, Sequence[Any]] = {}
    for agg in defn.aggregations:
        if agg.of is not None:
            cols[agg.name] = [getattr(r, agg.of) for r in recs]
    return RecordBatch(
        keys=[r.key for r in recs],
        event_times=np.array([r.t for r in recs], dtype=np.int64),
        columns=cols,
        records=[r.as_dict() for r in recs],
        processing_time=pt,
    )


def new_engine(defn: Definition, kind: str, state: Any = None) -> Any:
    if kind == "general":
        return Engine(defn, state=state)
    if kind == "vectorized":
        return make_engine(defn, state=state, vectorized=True)
    raise ValueError(kind)


def run(
    defn: Definition,
    instants: Sequence[Instant],
    *,
    kind: str = "general",
    restore_before: int | None = None,
    watermarks: Sequence[int | None] | None = None,
) -> list[dict[str, Any]]:
    """Replay ``instants`` then end of input; with ``restore_before = i`` the engine is
    snapshotted, sent through JSON text and replaced by a fresh engine just before instant
    ``i`` (``len(instants)``: just before end of input). ``watermarks[i]``, when given and not
    None, is passed to ``advance_watermark`` after instant ``i`` (``strategy: source``)."""
    eng = new_engine(defn, kind)
    out: list[Any] = []
    for i, (pt, recs) in enumerate(instants):
        if restore_before == i:
            eng = _round_trip(defn, kind, eng)
        out += eng.advance_processing_time(pt)
        out += eng.ingest(batch(defn, recs, pt))
        if watermarks is not None and watermarks[i] is not None:
            out += eng.advance_watermark(watermarks[i])
    if restore_before == len(instants):
        eng = _round_trip(defn, kind, eng)
    out += eng.end_of_input()
    return [e.to_json() for e in out]


def _round_trip(defn: Definition, kind: str, eng: Any) -> Any:
    text = json.dumps(eng.state.snapshot())
    state_cls = EngineState if kind == "general" else type(eng.state)
    return new_engine(defn, kind, state_cls.restore(json.loads(text)))


def oracle_records(
    instants: Sequence[Instant], processing_clock: bool = False
) -> list[OracleRecord]:
    """The records in arrival order (instant order, then position), for the oracle; with the
    processing clock a record's event time is its arrival time."""
    out = []
    seq = 0
    for pt, recs in instants:
        for r in recs:
            out.append(
                OracleRecord(
                    key=r.key, event_time=pt if processing_clock else r.t, arrival=seq,
                    values={**{f"x_{fn}": r.x for fn in ALL_FNS}, "ids": r.id},
                )
            )
            seq += 1
    return out


# --------------------------------------------------------------------------- strategies


@st.composite
def records(draw: st.DrawFn, max_size: int = 10, t_max: int = 40) -> list[Rec]:
    n = draw(st.integers(1, max_size))
    return [
        Rec(
            id=i,
            key=draw(st.sampled_from(["a", "b"])),
            t=draw(st.integers(0, t_max)),
            x=draw(st.one_of(st.none(), st.integers(0, 5))),
        )
        for i in range(n)
    ]


@st.composite
def windows(draw: st.DrawFn, types: Sequence[str] = ("tumbling", "hopping", "sliding",
                                                        "session", "global")) -> dict[str, Any]:
    kind = draw(st.sampled_from(list(types)))
    if kind == "tumbling":
        return {"type": "tumbling", "size": draw(st.integers(1, 20)),
                "align_to": draw(st.integers(-15, 15))}
    if kind == "hopping":
        size = draw(st.integers(2, 20))
        return {"type": "hopping", "size": size, "step": draw(st.integers(1, size)),
                "align_to": draw(st.integers(-15, 15))}
    if kind == "sliding":
        return {"type": "sliding", "size": draw(st.integers(1, 15))}
    if kind == "session":
        return {"type": "session", "gap": draw(st.integers(1, 15))}
    return {"type": "global"}


@st.composite
def arrivals(draw: st.DrawFn, recs: list[Rec]) -> list[Instant]:
    """An arrival order (a permutation) and a split of it into instants at increasing
    processing times 1000, 2000, ..."""
    order = draw(st.permutations(recs))
    cuts = [draw(st.booleans()) for _ in range(len(order) - 1)]
    instants: list[Instant] = []
    current: list[Rec] = []
    for i, r in enumerate(order):
        current.append(r)
        if i == len(order) - 1 or cuts[i]:
            instants.append((1000 * (len(instants) + 1), current))
            current = []
    return instants


def panes(out: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in out if o["type"] == "pane"]


def window_id(o: dict[str, Any]) -> tuple[str, int | None, int | None]:
    return (json.dumps(o["key"]), o["window_start"], o["window_end"])
