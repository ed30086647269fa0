"""Hopping windows: fixed size, a new one every ``step`` (an instant is in ``ceil(size/step)``
of them at most), aligned to ``align_to``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from jobs.definition.durations import format_duration
from jobs.definition.errors import FieldError
from jobs.definition.model import Window, WindowType
from jobs.definition.windows.base import (
    ALIGN_TO,
    SIZE,
    STEP,
    ParamName,
    WindowKind,
    WindowParam,
)
from jobs.definition.windows.fixed import FixedStarts


@dataclass(frozen=True)
class Hopping(WindowKind):
    size_ms: int
    step_ms: int
    align_to_ms: int = 0

    type: ClassVar[WindowType] = "hopping"
    params: ClassVar[tuple[WindowParam, ...]] = (SIZE, STEP, ALIGN_TO)
    spark_native: ClassVar[bool] = True
    fixed_by_arithmetic: ClassVar[bool] = True
    bounds_from_records: ClassVar[bool] = False

    @classmethod
    def cross_field_problems(cls, values: Mapping[ParamName, int]) -> list[FieldError]:
        size, step = values.get("size"), values.get("step")
        if size is not None and step is not None and step > size:
            return [("window.step", f"must not exceed window.size ({format_duration(size)}); "
                                    "records in the gaps between windows would be lost")]
        return []

    @classmethod
    def of(cls, window: Window) -> Hopping:
        assert window.size is not None and window.step is not None
        return cls(size_ms=window.size, step_ms=window.step, align_to_ms=window.align_to)

    def window(self) -> Window:
        return Window(type=self.type, size=self.size_ms, step=self.step_ms,
                      align_to=self.align_to_ms)

    @property
    def starts(self) -> FixedStarts:
        return FixedStarts(self.size_ms, self.step_ms, self.align_to_ms)

    def store_align(self) -> int:
        """Alignment modulo the step (the period of the window starts)."""
        return self.align_to_ms % self.step_ms
