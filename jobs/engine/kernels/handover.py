"""What every compiled kernel engine does the same way: once it has handed over to the general
engine (``general`` set, for input its arrays cannot hold exactly), every call goes there; and
its state, as the Engine API exposes it, is a live view whose ``snapshot()`` is the general
engine's snapshot of the same state (one format, no converter)."""

from __future__ import annotations

from typing import Any

from jobs.engine.engine import Engine
from jobs.engine.errors import EngineError
from jobs.engine.late_rows import drain_window_rows
from jobs.engine.records import Emission
from jobs.engine.state import EngineState


class HandsOver:
    """The watermark, clock and hand-over parts shared by the kernel engines; the engine keeps
    ``max_t``, ``wm``, ``ended`` and ``processing_time`` while it runs on its own arrays."""

    general: Engine | None
    max_t: int | None
    wm: int | None
    ended: bool
    processing_time: int
    mode: str
    _source: bool
    late_deltas: dict[str, list[Any]]
    """Per (key, window) late counts since the last drain (engines that keep them as a dict)."""

    def drain_late_counts(self) -> list[dict[str, Any]]:
        """Accepted-late and dropped counts per (key, window) since the last drain."""
        if self.general is not None:
            return self.general.drain_late_counts()
        return drain_window_rows(self.late_deltas)

    @property
    def max_event_time(self) -> int | None:
        if self.general is not None:
            return self.general.max_event_time
        return self.max_t

    @property
    def watermark(self) -> int | None:
        """The (global) watermark; ``None`` when minus or plus infinity."""
        if self.general is not None:
            return self.general.watermark
        return None if self.ended else self.wm

    def advance_processing_time(self, now_ms: int) -> list[Emission]:
        """No processing-time timers or idle advance exist for qualifying definitions."""
        if self.general is not None:
            return self.general.advance_processing_time(now_ms)
        if not self.ended and now_ms > self.processing_time:
            self.processing_time = now_ms
        return []

    def advance_watermark(self, wm_ms: int) -> list[Emission]:
        """Move the watermark to ``wm_ms`` (never back): ``source`` strategy, or a host that
        drives the watermark (``watermark="external"``)."""
        if self.general is not None:
            return self.general.advance_watermark(wm_ms)
        if not (self._source or self.mode == "external"):
            raise EngineError(
                "advance_watermark: watermark.strategy is not 'source' and the engine computes "
                "its own watermark (use Engine(..., watermark='external') to drive it)"
            )
        if self.ended or (self.wm is not None and wm_ms <= self.wm):
            return []
        self.wm = int(wm_ms)
        return self._fire_watermark()

    def end_of_input(self) -> list[Emission]:
        """The watermark goes to +infinity: every window fires and closes."""
        if self.general is not None:
            return self.general.end_of_input()
        if self.ended:
            return []
        self.ended = True
        return self._fire_all()

    def _fire_watermark(self) -> list[Emission]:
        """Fire what the new watermark reached (no unit's keys involved)."""
        raise NotImplementedError

    def _fire_all(self) -> list[Emission]:
        """Fire every window of every key (end of input)."""
        raise NotImplementedError

    def to_engine_state(self) -> EngineState:
        """The general engine's state equal to this engine's."""
        raise NotImplementedError


class KernelState:
    """A kernel engine's state as the Engine API exposes it: a live view whose ``snapshot()``
    is the general engine's snapshot of the same state."""

    def __init__(self, engine: HandsOver) -> None:
        self._engine = engine

    @property
    def processing_time(self) -> int:
        return self._engine.processing_time

    def snapshot(self) -> dict[str, Any]:
        return self._engine.to_engine_state().snapshot()

    def to_engine_state(self) -> EngineState:
        return self._engine.to_engine_state()

    @classmethod
    def restore(cls, d: dict[str, Any], *, copy_data: bool = True) -> EngineState:
        """The state a snapshot describes (the general engine's format, which the kernel
        engines take as ``state=``)."""
        return EngineState.restore(d, copy_data=copy_data)
