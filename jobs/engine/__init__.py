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
    """An engine for ``defn``: by default (``vectorized=None``) a compiled engine
    (``jobs.engine.kernels`` for sessions, the triggered fixed-window engine of
    ``jobs.engine.vectorized``) or the vectorized one when the definition qualifies for it, the
    general :class:`Engine` otherwise; ``True`` forces the vectorized engine, ``False`` the
    general one. ``state`` must be a state of the engine kind that is picked (a snapshot
    restored by that kind's ``restore``)."""
    if vectorized is None:
        kernel = _kernel_engine(defn, state, watermark)
        if kernel is not None:
            return kernel
    if vectorized is not False:
        try:
            from jobs.engine.vectorized import VectorizedEngine, qualifies
        except ImportError:  # pragma: no cover - the fast path is optional
            if vectorized:
                raise
        else:
            from jobs.engine.vectorized.engine import VectorizedState
            from jobs.engine.vectorized.triggered import TriggeredEngine, qualifies_triggered

            # a vectorized state stays with its engine (it hands over to the general engine
            # by itself where the arrays cannot model the input)
            if vectorized or qualifies(defn) or isinstance(state, VectorizedState):
                if not isinstance(state, VectorizedState) and qualifies_triggered(defn):
                    # early / late triggers on fixed windows: compiled, general-engine state format
                    return TriggeredEngine(defn, state=state, watermark=watermark)
                return VectorizedEngine(defn, state=state, watermark=watermark)
            if qualifies_triggered(defn):
                return TriggeredEngine(defn, state=state, watermark=watermark)
    return Engine(defn, state=state, watermark=watermark)


def _kernel_engine(
    defn: Definition, state: Any, watermark: WatermarkMode
) -> WindowingEngine | None:
    """The compiled engine (``jobs.engine.kernels``: session windows) when ``defn`` qualifies
    for it; it reads and writes the general engine's state format, so any general state (or
    its own) resumes there. ``None``: not this engine."""
    try:
        from jobs.engine.kernels import kernel_engine, qualifies
    except ImportError:  # pragma: no cover - numba missing: the other engines run
        return None
    if not qualifies(defn) or type(state).__name__ == "VectorizedState":
        return None
    return kernel_engine(defn, state=state, watermark=watermark)
