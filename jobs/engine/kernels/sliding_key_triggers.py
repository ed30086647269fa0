"""The per-key watermark parts of :class:`~.sliding_triggers.SlidingTriggerEngine`
(``watermark.scope: key``, bounded, event time; with or without idle advance).

Each key keeps its own watermark (and idle base) on its :class:`~.sliding_triggers.KeyArrays`.
An arrival unit runs one kernel pass per key
(:func:`._sliding_key_trigger_kernels.ingest_key_scoped`): per record its late lines and the
panes it fires at the watermark it met, then what its raise of the key's watermark fires,
each pane showing the key's watermark as it was then. The unit's closing firing then runs
the unit's keys at their own watermarks (which prunes their held records), and no global
deadline exists. Idle advance moves each key with an idle base on a processing-time tick and
runs those keys' windows; panes come out by window end, key JSON, start. Keys are never
forgotten (their watermark is state), as in the general engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _sliding_key_trigger_kernels as KKT
from jobs.engine.records import Emission
from jobs.engine.vectorized.emission_columns import PaneColumns

if TYPE_CHECKING:
    from jobs.engine.kernels.sliding_triggers import KeyArrays

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

    def _key_pass(self, ka: KeyArrays, times: I64, seqs: I64, recs: I64, urt: I64,
                  urf: NDArray[np.float64]) -> tuple[Any, ...]:
        """One key's records of a unit under its own watermark: ``(LR, n_l, AR, n_a, PR, PW,
        PF, n_p, pane_wms, gone)`` as ``ingest_key`` gives them, with the watermark each pane
        shows and the starts of windows that went without a pane; the key's watermark (and
        idle base) move."""
        from jobs.engine.kernels.sliding_triggers import FAR

        ev, lv = self._timer_values()
        before = ka.wm
        (ka.RT, ka.RF, ka.n_h, ka.W, ka.WF, ka.n_w, ka.born_next, LR, n_l, AR, n_a, PR, PW, PF,
         n_p, PM, GONE, n_g, known, kwm) = KKT.ingest_key_scoped(
            times, seqs, recs, urt, urf, self._kinds, before is not None,
            before if before is not None else 0, self._delay, self._event_basis, self._size,
            self._al, self._early_n, self._late_n, self._at_end, self._at_expiry,
            self._discarding, ka.RT, ka.RF, ka.n_h, ka.W, ka.WF, ka.n_w, ka.born_next, ev,
            lv, FAR, NO_TIME)
        if known and (before is None or int(kwm) != before):
            ka.wm = int(kwm)
            if self._idle:
                ka.ib, ka.ibpt = ka.wm, self.processing_time
        pane_wms = [None if w == NO_TIME else w for w in PM[:n_p].tolist()]
        return LR, n_l, AR, n_a, PR, PW, PF, n_p, pane_wms, GONE[:n_g].tolist()

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
