"""What every window kind owns: its parameters and their validation, its part of the store
name, whether Spark can aggregate it natively.

A kind is a class (:mod:`jobs.definition.windows.registry` lists them); an instance is one
configured window, built from the definition's :class:`~jobs.definition.model.Window` by
:func:`~jobs.definition.windows.registry.window_kind`. The ``Window`` dataclass stays the
definition's as-written form (canonical JSON, diffs, the UI); code that needs to know what a
window *does* asks its kind instead of comparing ``Window.type`` with strings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from jobs.definition.errors import FieldError
from jobs.definition.model import Window, WindowType

ParamName = Literal["size", "step", "gap", "align_to"]
ParamUnit = Literal["duration", "instant"]
PARAM_NAMES: tuple[ParamName, ...] = ("size", "step", "gap", "align_to")
"""Every window parameter a definition can hold (``window.<name>``)."""


@dataclass(frozen=True, slots=True)
class WindowParam:
    """One parameter of a kind, as written in a definition (``window.<name>``)."""

    name: ParamName
    unit: ParamUnit
    """``duration``: a positive number of milliseconds, required; ``instant``: epoch
    milliseconds, optional (default 0, 1970-01-01T00:00Z)."""
    label: str
    """What a form shows next to the field."""
    help: str
    """A form's help text for the field."""

    @property
    def field(self) -> str:
        return f"window.{self.name}"

    @property
    def required(self) -> bool:
        return self.unit == "duration"


DURATION_HELP = "250ms, 10s, 2m, 1h, 1d, PT2M or milliseconds"
SIZE = WindowParam("size", "duration", "Size", DURATION_HELP)
STEP = WindowParam("step", "duration", "Step", f"hopping step, 0 < step <= size ({DURATION_HELP})")
GAP = WindowParam("gap", "duration", "Gap", f"session gap ({DURATION_HELP})")
ALIGN_TO = WindowParam("align_to", "instant", "Align to",
                       "ISO-8601 UTC instant that window starts align to (default 1970-01-01)")


class WindowKind(ABC):
    """One kind of window (class attributes) and one configured window (instance)."""

    type: ClassVar[WindowType]
    params: ClassVar[tuple[WindowParam, ...]]
    """The parameters of this kind, in the order a form shows them."""
    spark_native: ClassVar[bool]
    """Spark's own ``groupBy(window(...))`` computes these windows exactly as the engine does
    (docs/definition.md, "Execution path")."""
    fixed_by_arithmetic: ClassVar[bool]
    """A record's windows follow from its event time alone (no merging, no held records), so
    the engine can apply a key's records of one unit together."""
    bounds_from_records: ClassVar[bool]
    """The window's bounds depend on the records it holds (sessions, sliding windows): output
    shows where it currently starts and ends."""
    merges: ClassVar[bool] = False
    """A window's bounds change as records arrive and windows that come to overlap merge into
    one (sessions): a pane with new bounds replaces the key's window it overlaps."""
    note: ClassVar[str] = ""
    """What a form says about the kind beside its parameters (empty: nothing)."""

    @classmethod
    def cross_field_problems(cls, values: Mapping[ParamName, int]) -> list[FieldError]:
        """Rules between this kind's (individually valid) parameters; none by default."""
        return []

    @classmethod
    def problems_of(cls, window: Window) -> list[FieldError]:
        """Every problem of ``window``'s parameters for this kind (a ``Window`` built in code
        rather than parsed: the engine checks what it is given)."""
        errors: list[FieldError] = []
        values: dict[ParamName, int] = {}
        for p in cls.params:
            value = getattr(window, p.name)
            if p.required and value is None:
                errors.append((p.field, "is required"))
            elif p.unit == "duration" and value <= 0:
                errors.append((p.field, "must be greater than 0"))
            else:
                values[p.name] = value
        if not errors:
            errors.extend(cls.cross_field_problems(values))
        return errors

    @classmethod
    @abstractmethod
    def of(cls, window: Window) -> WindowKind:
        """The configured kind of a valid ``window`` of this type."""

    @abstractmethod
    def window(self) -> Window:
        """Back to the definition's as-written form."""

    def canonical(self) -> dict[str, Any]:
        """The ``window`` section of the canonical JSON: the type and this kind's parameters."""
        w = self.window()
        return {"type": self.type, **{p.name: getattr(w, p.name) for p in self.params}}

    def store_align(self) -> int | None:
        """The alignment as the store hash sees it (None: the kind has none)."""
        return None

    def store_shape(self) -> dict[str, Any]:
        """The window's part of the store hash (``jobs.definition.store.state_shape``)."""
        w = self.window()
        return {"type": self.type, "size": w.size, "step": w.step, "gap": w.gap,
                "align": self.store_align()}

    def store_label(self) -> list[str]:
        """The window's part of the store name's readable prefix: ``<type>_window`` and the
        durations in milliseconds (size, step, gap, those the kind has)."""
        w = self.window()
        return [f"{self.type}_window", *(str(v) for v in (w.size, w.step, w.gap) if v is not None)]
