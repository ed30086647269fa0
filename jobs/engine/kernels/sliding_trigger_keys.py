"""The per-key state of :class:`~.sliding_triggers.SlidingTriggerEngine` (:class:`KeyArrays`)
and the limits its arrays hold exactly."""

from __future__ import annotations

from typing import Any

import numpy as np

from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.records import Key, LateReason

FN_CODES = {"count": K.COUNT, "sum": K.SUM, "min": K.MIN, "max": K.MAX, "mean": K.MEAN,
            "first": K.FIRST, "last": K.LAST, "collect": K.SIDE, "count_distinct": K.SIDE}
REASONS: tuple[LateReason, LateReason] = ("before_watermark", "expired")
FAR = 2**62
"""Watermarks are clamped to +-FAR for the kernels (times and sizes are below 2**60)."""
TIME_LIMIT = 2**60
EXACT_INT = 2**53
SUM_LIMIT = 2**61
"""Int inputs of sums and means, in absolute value, may add up to this over the engine's
life (every window's int sum then fits 64 bits)."""


class KeyArrays:
    """One key's state: held records ``RT``/``RF`` (``n_h`` rows), windows ``W``/``WF``
    (``n_w`` rows, sorted by start; the rows' object refs point into the engine's ``objs``),
    the last pane
    of each window (retracting: start -> the general engine's ``last_pane`` dict), max event
    time and late totals."""

    __slots__ = ("RF", "RT", "W", "WF", "born_next", "code", "deadline", "ib", "ibpt", "key", "kj",
                 "late_acc", "late_drop", "lp", "max_t", "n_h", "n_w", "timer", "wm")

    def __init__(self, key: Key, kj: str, m: int) -> None:
        self.key, self.kj = key, kj
        self.code = -1
        """The key's code in the engine's output key table (-1: not given yet)."""
        self.RT = np.zeros((4, K.R_AGG + K.R_WIDTH * m), dtype=np.int64)
        self.RF = np.zeros((4, max(m, 1)), dtype=np.float64)
        self.W = np.zeros((4, K.W_AGG + K.A_WIDTH * m), dtype=np.int64)
        self.WF = np.zeros((4, max(2 * m, 1)), dtype=np.float64)
        self.n_h = self.n_w = self.born_next = 0
        self.lp: dict[int, dict[str, Any]] = {}
        self.max_t: int | None = None
        self.late_acc = self.late_drop = 0
        self.deadline = FAR
        self.timer = K.NO_TIMER
        """The due time of this key's entry in the engine's timer heap (``NO_TIMER``: none)."""
        self.wm: int | None = None
        self.ib: int | None = None
        self.ibpt: int | None = None
        """The key's own watermark and idle base (processing time) under ``scope: key``."""

    def empty(self) -> bool:
        return not (self.n_w or self.n_h or self.late_acc or self.late_drop)


