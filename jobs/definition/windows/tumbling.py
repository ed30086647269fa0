"""Tumbling windows: fixed size, back to back, aligned to ``align_to`` (each instant in one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from jobs.definition.model import Window, WindowType
from jobs.definition.windows.base import ALIGN_TO, SIZE, WindowKind, WindowParam
from jobs.definition.windows.fixed import FixedStarts


@dataclass(frozen=True)
class Tumbling(WindowKind):
    size_ms: int
    align_to_ms: int = 0

    type: ClassVar[WindowType] = "tumbling"
    params: ClassVar[tuple[WindowParam, ...]] = (SIZE, ALIGN_TO)
    spark_native: ClassVar[bool] = True
    fixed_by_arithmetic: ClassVar[bool] = True
    bounds_from_records: ClassVar[bool] = False

    @classmethod
    def of(cls, window: Window) -> Tumbling:
        assert window.size is not None
        return cls(size_ms=window.size, align_to_ms=window.align_to)

    def window(self) -> Window:
        return Window(type=self.type, size=self.size_ms, align_to=self.align_to_ms)

    @property
    def starts(self) -> FixedStarts:
        """The window starts (``step == size``)."""
        return FixedStarts(self.size_ms, self.size_ms, self.align_to_ms)

    def store_align(self) -> int:
        """Alignment modulo the size: aligning to 1970 or to a whole number of windows later
        gives the same windows, hence the same store."""
        return self.align_to_ms % self.size_ms
