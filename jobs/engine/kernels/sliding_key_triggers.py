"""The per-key watermark parts of :class:`~.sliding_triggers.SlidingTriggerEngine`
(``watermark.scope: key``, bounded, event time; with or without idle advance).

Each key keeps its own watermark (and idle base) on its :class:`~.sliding_triggers.KeyArrays`.
An arrival unit runs all its keys in one kernel pass
(:func:`._sliding_key_trigger_kernels.ingest_keys_scoped`), per key: per record its late
lines and the panes it fires at the watermark it met, then what its raise of the key's
watermark fires, each pane showing the key's watermark as it was then. The unit's closing firing then runs
the unit's keys at their own watermarks (which prunes their held records), and no global
deadline exists. Idle advance moves each key with an idle base on a processing-time tick and
runs those keys' windows; panes come out by window end, key JSON, start. Keys are never
forgotten (their watermark is state), as in the general engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.records import Emission
from jobs.engine.vectorized.emission_columns import PaneColumns

if TYPE_CHECKING:
    pass

I64 = NDArray[np.int64]
NO_TIME = np.iinfo(np.int64).min
"""A pane row's watermark when the key has none yet (shown as None)."""


class KeyScopedSlidingTriggers:
    """Per-key watermarks of the sliding trigger engine (see the module docstring)."""

    _key_scope: bool
    _idle: bool
    _delay: int
    _kinds: I64
    _event_basis: bool
    _size: int
    _al: int
    _early_n: int
    _late_n: int
    _at_end: bool
    _at_expiry: bool
    _discarding: bool
    processing_time: int
    keys: dict[str, Any]

    def _timer_values(self) -> tuple[int, int]:
        raise NotImplementedError  # the engine's

    def _fire(self, touched: list[Any]) -> PaneColumns:
        raise NotImplementedError  # the engine's

    def _idle_advance(self, now_ms: int) -> list[Emission]:
        """Every key with an idle base moves its watermark to it plus the processing time
        since; those keys' windows run at it."""
        moved = []
        for ka in self.keys.values():
            if ka.ib is not None and ka.ibpt is not None:
                ka.wm = ka.ib + (now_ms - ka.ibpt)
                moved.append(ka)
        out: list[Emission] = [*self._fire(moved).to_panes()] if moved else []
        return out
