"""Compiled (numba) engines for the window kinds the vectorized engine does not cover:
session windows (:class:`SessionKernelEngine`) and KIP-450 sliding windows
(:class:`SlidingKernelEngine`; with triggers or on the processing clock
:class:`SlidingTriggerEngine`), with the
general engine's API, output and snapshot format.
``qualifies(defn)`` says whether ``make_engine`` may pick one."""

from __future__ import annotations

from typing import Any

from jobs.definition.model import Definition
from jobs.definition.windows import Sliding, kind_class
from jobs.engine.engine import WatermarkMode
from jobs.engine.kernels.qualify import qualification_problems, qualifies
from jobs.engine.kernels.session import SessionKernelEngine, SessionKernelState
from jobs.engine.kernels.sliding import SlidingKernelEngine, SlidingKernelState
from jobs.engine.kernels.sliding_triggers import SlidingTriggerEngine

__all__ = [
    "SessionKernelEngine", "SessionKernelState", "SlidingKernelEngine", "SlidingKernelState",
    "SlidingTriggerEngine",
    "kernel_engine", "qualification_problems", "qualifies",
]


def kernel_engine(
    defn: Definition, state: Any = None, watermark: WatermarkMode = "internal"
) -> SessionKernelEngine | SlidingKernelEngine | SlidingTriggerEngine:
    """The kernel engine for a qualifying ``defn`` (the caller checked ``qualifies``)."""
    if kind_class(defn.window.type) is Sliding and (defn.trigger.emit != "final"
                                                    or defn.uses_processing_time):
        return SlidingTriggerEngine(defn, state=state, watermark=watermark)
    if kind_class(defn.window.type) is Sliding:
        return SlidingKernelEngine(defn, state=state, watermark=watermark)
    return SessionKernelEngine(defn, state=state, watermark=watermark)
