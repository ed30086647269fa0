"""The windowing engine (pure: no pyspark, airflow or streamlit).

``Engine`` runs every definition; ``make_engine`` is what hosts call: it picks the vectorized
fast path (``jobs.engine.vectorized``) when the definition qualifies for it and the general
engine otherwise. Every engine implements :class:`~jobs.engine.protocol.WindowingEngine`, the
API hosts are typed against (docs/architecture.md, "Engine API").
"""

from __future__ import annotations

from typing import Any

from jobs.definition.model import Definition
from jobs.engine.engine import Engine, WatermarkMode
from jobs.engine.errors import EngineError
from jobs.engine.protocol import EngineSnapshot, WindowingEngine
from jobs.engine.records import DeadLetter, Emission, Key, LateRecord, Pane, RecordBatch
from jobs.engine.state import EngineState

__all__ = [
    "DeadLetter",
    "Emission",
    "Engine",
    "EngineError",
    "EngineSnapshot",
    "EngineState",
    "Key",
    "LateRecord",
    "Pane",
    "RecordBatch",
    "WindowingEngine",
    "make_engine",
]


def make_engine(
    defn: Definition,
    state: Any = None,
    watermark: WatermarkMode = "internal",
    *,
    vectorized: bool | None = None,
) -> WindowingEngine:
    """An engine for ``defn``: the vectorized one when it qualifies (``vectorized=None``, the
    default) or is forced (``True``), the general :class:`Engine` otherwise (``False`` forces
    it). ``state`` must be a state of the engine kind that is picked (a snapshot restored by
    that kind's ``restore``)."""
    if vectorized is not False:
        try:
            from jobs.engine.vectorized import VectorizedEngine, qualifies
        except ImportError:  # pragma: no cover - the fast path is optional
            if vectorized:
                raise
        else:
            from jobs.engine.vectorized.engine import VectorizedState

            # a vectorized state stays with its engine (it hands over to the general engine
            # by itself where the arrays cannot model the input)
            if vectorized or qualifies(defn) or isinstance(state, VectorizedState):
                return VectorizedEngine(defn, state=state, watermark=watermark)
    return Engine(defn, state=state, watermark=watermark)
