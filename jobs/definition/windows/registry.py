"""Every window kind, by the ``window.type`` that names it.

Adding a kind: a module here with a :class:`~jobs.definition.windows.base.WindowKind`
subclass, its name in ``WindowType`` (``jobs/definition/model.py``) and in :data:`KINDS`; the
parser, canonical JSON, store names, the Spark path choice and the UI's form then know it, and
the engine raises on it until ``jobs/engine/assign.py`` assigns records to it.
"""

from __future__ import annotations

from jobs.definition.errors import DefinitionError
from jobs.definition.model import Window, WindowType
from jobs.definition.windows.base import PARAM_NAMES, ParamName, WindowKind
from jobs.definition.windows.global_ import Global
from jobs.definition.windows.hopping import Hopping
from jobs.definition.windows.session import Session
from jobs.definition.windows.sliding import Sliding
from jobs.definition.windows.tumbling import Tumbling

KINDS: dict[WindowType, type[WindowKind]] = {
    k.type: k for k in (Tumbling, Hopping, Sliding, Session, Global)
}
WINDOW_TYPES: tuple[WindowType, ...] = tuple(KINDS)


def kind_class(window_type: str) -> type[WindowKind]:
    """The kind named ``window_type`` (DefinitionError on ``window.type`` otherwise)."""
    kind = KINDS.get(window_type)  # type: ignore[call-overload]
    if kind is None:
        raise DefinitionError(f"must be one of {', '.join(KINDS)}, got {window_type!r}",
                              "window.type")
    return kind


def window_kind(window: Window) -> WindowKind:
    """The configured kind of ``window``; DefinitionError naming the field if its parameters
    are not valid for its type."""
    kind = kind_class(window.type)
    problems = kind.problems_of(window)
    if problems:
        raise DefinitionError(problems)
    return kind.of(window)


def kinds_with(param: ParamName) -> list[WindowType]:
    """The kinds that have the parameter ``param``, in registry order."""
    return [t for t, k in KINDS.items() if any(p.name == param for p in k.params)]


def param_names(window_type: WindowType) -> tuple[ParamName, ...]:
    """The parameter names of a kind, in form order."""
    return tuple(p.name for p in KINDS[window_type].params)


__all__ = ["KINDS", "PARAM_NAMES", "WINDOW_TYPES", "kind_class", "kinds_with", "param_names",
           "window_kind"]
