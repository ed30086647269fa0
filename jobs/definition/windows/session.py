"""Session windows: a key's records closer than ``gap`` to each other form one window, which
ends ``gap`` after its last record. Sessions grow and merge as records arrive, so the engine
finds them by overlap with what the key already holds (``jobs/engine/assign.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from jobs.definition.model import Window, WindowType
from jobs.definition.windows.base import GAP, WindowKind, WindowParam


@dataclass(frozen=True)
class Session(WindowKind):
    gap_ms: int

    type: ClassVar[WindowType] = "session"
    params: ClassVar[tuple[WindowParam, ...]] = (GAP,)
    spark_native: ClassVar[bool] = False
    fixed_by_arithmetic: ClassVar[bool] = False
    bounds_from_records: ClassVar[bool] = True
    merges: ClassVar[bool] = True

    @classmethod
    def of(cls, window: Window) -> Session:
        assert window.gap is not None
        return cls(gap_ms=window.gap)

    def window(self) -> Window:
        return Window(type=self.type, gap=self.gap_ms)
