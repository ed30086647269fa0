"""Window kinds as types: tumbling, hopping, sliding, session, global (one module each).

Each kind owns its parameters and their validation, its part of the canonical JSON and of the
store name, whether Spark can aggregate it natively, and (for windows fixed by arithmetic)
the one scalar + NumPy implementation of its window starts that the general engine, the
vectorized engine and the Spark gate all use. See :mod:`jobs.definition.windows.registry` for
how to add a kind.
"""

from jobs.definition.windows.base import (
    PARAM_NAMES,
    ParamName,
    ParamUnit,
    WindowKind,
    WindowParam,
)
from jobs.definition.windows.fixed import FixedStarts
from jobs.definition.windows.global_ import Global
from jobs.definition.windows.hopping import Hopping
from jobs.definition.windows.registry import (
    KINDS,
    WINDOW_TYPES,
    kind_class,
    kinds_with,
    param_names,
    window_kind,
)
from jobs.definition.windows.session import Session
from jobs.definition.windows.sliding import Sliding
from jobs.definition.windows.tumbling import Tumbling

__all__ = [
    "KINDS", "PARAM_NAMES", "WINDOW_TYPES", "FixedStarts", "Global", "Hopping", "ParamName",
    "ParamUnit", "Session", "Sliding", "Tumbling", "WindowKind", "WindowParam", "kind_class",
    "kinds_with", "param_names", "window_kind",
]
