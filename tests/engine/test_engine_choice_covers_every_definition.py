"""Every valid definition runs on a compiled or vectorized engine: the general engine is the
readable reference, and ``make_engine`` picks it for no combination of window type, trigger,
accumulation, watermark (strategy, scope, idle advance), clock, lateness basis and aggregation
(it still takes over mid-stream from a compiled engine for values the arrays cannot hold)."""

from __future__ import annotations

import itertools

from jobs.definition import DefinitionError, load_definition, to_canonical
from jobs.definition.model import (
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Trigger,
    Watermark,
    Window,
)
from jobs.engine import Engine, make_engine

WINDOWS = (Window("tumbling", size=10_000), Window("hopping", size=10_000, step=5_000),
           Window("global"), Window("sliding", size=10_000), Window("session", gap=10_000))
TRIGGERS = (
    Trigger(emit="final"),
    Trigger(emit="current"),
    Trigger(emit="custom", early=EarlyTrigger("count", count=2), late=LateTrigger("count", count=1)),
    Trigger(emit="custom", early=EarlyTrigger("after", duration=5_000),
            late=LateTrigger("after", duration=5_000)),
    Trigger(emit="custom", early=EarlyTrigger("every", duration=5_000), on_time=False),
)
AGGREGATIONS = (
    (Aggregation("n", "count"), Aggregation("s", "sum", "x"), Aggregation("lo", "min", "x"),
     Aggregation("m", "mean", "x"), Aggregation("f", "first", "x"), Aggregation("l", "last", "x")),
    (Aggregation("c", "collect", "x"), Aggregation("d", "count_distinct", "x")),
)


def _valid_definitions() -> list[Definition]:
    """The product of the choices above, each through the definition parser (the combinations
    it refuses, such as per-key watermarks on the processing clock, are left out)."""
    out = []
    for window, trigger, accumulation, scope, idle, strategy, clock, aggs, basis in itertools.product(
            WINDOWS, TRIGGERS, ("discarding", "accumulating", "retracting"), ("global", "key"),
            (False, True), ("bounded", "source"), ("t", "processing"), AGGREGATIONS,
            ("window", "event")):
        built = Definition(
            name="cover", key="k", event_time=clock, window=window, aggregations=aggs,
            trigger=trigger, accumulation=accumulation,
            watermark=Watermark(strategy=strategy, scope=scope, idle_advance=idle,
                                delay=1_000 if strategy == "bounded" and clock == "t" else 0),
            allowed_lateness=2_000 if clock == "t" else 0, lateness_basis=basis)
        try:
            out.append(load_definition(to_canonical(built)))
        except DefinitionError:
            continue
    return out


def test_no_valid_definition_falls_back_to_the_general_engine() -> None:
    defns = _valid_definitions()
    assert len(defns) > 1_500  # the parser refused only the invalid combinations
    general = [(d.window.type, d.trigger, d.accumulation, d.watermark, d.event_time,
                [a.fn for a in d.aggregations])
               for d in defns if type(make_engine(d)) is Engine]
    assert general == []
