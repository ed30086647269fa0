"""The global window: one window per key holding every record, closed only by the end of
input (useful with early triggers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from jobs.definition.model import Window, WindowType
from jobs.definition.windows.base import WindowKind, WindowParam


@dataclass(frozen=True)
class Global(WindowKind):
    type: ClassVar[WindowType] = "global"
    params: ClassVar[tuple[WindowParam, ...]] = ()
    spark_native: ClassVar[bool] = False
    fixed_by_arithmetic: ClassVar[bool] = True
    bounds_from_records: ClassVar[bool] = False
    note: ClassVar[str] = "The global window spans all of time: it closes only at the end of input."

    @classmethod
    def of(cls, window: Window) -> Global:
        return cls()

    def window(self) -> Window:
        return Window(type=self.type)
