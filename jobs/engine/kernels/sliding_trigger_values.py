"""The aggregation values of many window or pane rows of the sliding trigger engine at once
(:mod:`.sliding_triggers`), one column per aggregation.

Why: a pane's ``values`` read from its row field by field cost more than the rest of the
pane; read per aggregation over all rows, each field is one numpy slice and the Python
values come out of ``tolist`` (ints stay ints, floats floats, as ``aggregates.result``
gives them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _sliding_trigger_kernels as K

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
B = NDArray[np.bool_]


def _mixed(ints: I64, floats: F64, is_float: B, missing: B | None = None) -> list[Any]:
    """Per row the float (``is_float``) or the int, None where ``missing``."""
    if not is_float.any():
        out: list[Any] = ints.tolist()
    elif is_float.all():
        out = floats.tolist()
    else:
        out = [f if x else i for i, f, x in zip(ints.tolist(), floats.tolist(),
                                                 is_float.tolist(), strict=True)]
    if missing is not None and missing.any():
        for r in np.flatnonzero(missing).tolist():
            out[r] = None
    return out


def value_columns(names: Sequence[str], fns: Sequence[str],
                  segments: Sequence[tuple[Sequence[Any], int, int]], W: I64, WF: F64
                  ) -> dict[str, list[Any]]:
    """``aggregates.result`` of each accumulator aggregation for every row of ``W`` / ``WF``
    (``collect`` / ``count_distinct`` are left out: they are read from the held records);
    ``segments``: ``(objs, lo, hi)``, rows ``lo:hi`` belong to a key whose input objects
    (those the first / last refs point into) are ``objs``."""
    out: dict[str, list[Any]] = {}
    for j, (name, fn) in enumerate(zip(names, fns, strict=True)):
        b = K.W_AGG + K.A_WIDTH * j
        if fn in ("collect", "count_distinct"):
            continue
        if fn == "count":
            out[name] = W[:, b + K.A_CNT].tolist()
        elif fn == "sum":
            out[name] = _mixed(W[:, b + K.A_ISUM], WF[:, 2 * j], W[:, b + K.A_ISF] != 0)
        elif fn == "mean":
            c = W[:, b + K.A_CNT]
            tot = np.where(W[:, b + K.A_ISF] != 0, WF[:, 2 * j],
                           W[:, b + K.A_ISUM].astype(np.float64))
            empty = c == 0
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = tot / np.where(empty, 1, c)
            col = mean.tolist()
            if empty.any():
                for r in np.flatnonzero(empty).tolist():
                    col[r] = None
            out[name] = col
        elif fn in ("min", "max"):
            out[name] = _mixed(W[:, b + K.A_EI], WF[:, 2 * j + 1], W[:, b + K.A_EISF] != 0,
                               W[:, b + K.A_HAS] == 0)
        else:  # first, last: the input object by reference, in its key's objects
            refs, has = W[:, b + K.A_OREF].tolist(), W[:, b + K.A_HAS].tolist()
            col = []
            for objs, lo, hi in segments:
                col.extend([objs[r] if h else None for r, h in zip(
                    refs[lo:hi], has[lo:hi], strict=True)])
            out[name] = col
    return out
