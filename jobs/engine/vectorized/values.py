"""Input value columns to typed numpy arrays.

The general engine aggregates Python objects; the fast path needs arrays. A column of one batch
is converted once into ``valid`` (not null), ``f`` (float64 view), ``i`` (int64 view) and
``is_float`` (which values were Python floats, so ``sum`` of ints stays an int). Anything the
arrays cannot represent exactly (bools, strings for sum/min/max, NaN, ints a float64 would round
when mixed with floats, ints beyond int64) raises :class:`Unsupported`, and the engine hands the
batch to the general engine instead of producing a subtly different answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

EXACT_FLOAT_INT = 2**53


class Unsupported(Exception):
    """A batch the vectorized engine cannot aggregate exactly (the caller falls back)."""


@dataclass(frozen=True)
class Column:
    valid: NDArray[np.bool_]
    f: NDArray[np.float64]
    i: NDArray[np.int64]
    is_float: NDArray[np.bool_]
    any_float: bool
    all_float: bool
    max_abs_int: int
    obj: NDArray[Any] | None = None
    """The values as Python objects (``first`` / ``last`` / ``collect`` / ``count_distinct``,
    which take any JSON value); None for numeric columns."""
    t: NDArray[np.int64] | None = None
    """Event time per value (the order of ``first`` / ``last`` / ``collect``)."""


def null_mask(values: Sequence[Any] | NDArray[Any], n: int) -> NDArray[np.bool_]:
    """Which values are not null (``count`` of an expression needs no more than this)."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return np.ones(n, dtype=np.bool_)  # NaN is a value, as for the general engine
    return _not_none(np.asarray(values, dtype=object))


def _not_none(obj: NDArray[Any]) -> NDArray[np.bool_]:
    out: NDArray[np.bool_] = np.asarray(obj != None, dtype=np.bool_)  # noqa: E711 (elementwise)
    return out


def object_values(values: Sequence[Any] | NDArray[Any], n: int) -> NDArray[Any]:
    """The column as a 1-d object array of plain Python values (numpy scalars become Python
    ones, as the general engine's ``tolist()``; lists stay elements, never a second axis)."""
    if len(values) != n:
        raise Unsupported(f"{len(values)} values for {n} records")
    if isinstance(values, np.ndarray):
        values = values.tolist()
    return np.fromiter(values, dtype=object, count=n)


def value_column(
    values: Sequence[Any] | NDArray[Any], n: int, t: NDArray[np.int64]
) -> Column:
    """A column of arbitrary JSON values with their event times (no numeric views)."""
    obj = object_values(values, n)
    valid = _not_none(obj)
    empty_f = np.zeros(0, dtype=np.float64)
    empty_i = np.zeros(0, dtype=np.int64)
    return Column(valid, empty_f, empty_i, np.zeros(0, dtype=bool), False, False, 0, obj, t)


def _max_abs(ints: NDArray[np.int64]) -> int:
    return max(-int(ints.min()), int(ints.max())) if len(ints) else 0


def numeric_column(name: str, values: Sequence[Any] | NDArray[Any], n: int) -> Column:
    """Typed view of one numeric input column; raises :class:`Unsupported` naming the column."""
    if len(values) != n:
        raise Unsupported(f"column {name!r}: {len(values)} values for {n} records")
    if isinstance(values, np.ndarray) and values.dtype != object:
        kind = values.dtype.kind
        if kind in "iu":
            ints = values.astype(np.int64)
            return _int_column(ints, np.ones(n, dtype=np.bool_))
        if kind == "f":
            f = values.astype(np.float64)
            if np.isnan(f).any():
                raise Unsupported(f"column {name!r}: NaN values")
            return Column(
                np.ones(n, dtype=np.bool_), f, np.zeros(n, dtype=np.int64),
                np.ones(n, dtype=np.bool_), n > 0, True, 0,
            )
        raise Unsupported(f"column {name!r}: dtype {values.dtype} is not numeric")
    kinds = set(map(type, values))
    if not kinds <= {int, float, type(None)}:
        bad = sorted(k.__name__ for k in kinds - {int, float, type(None)})
        raise Unsupported(f"column {name!r}: values of type {', '.join(bad)}")
    has_null = type(None) in kinds
    obj = np.asarray(values, dtype=object)
    valid = _not_none(obj) if has_null else np.ones(n, dtype=np.bool_)
    filled = np.where(valid, obj, 0) if has_null else obj
    if float not in kinds:
        try:
            ints = filled.astype(np.int64)
        except OverflowError as exc:
            raise Unsupported(f"column {name!r}: integer beyond 64 bits") from exc
        return _int_column(ints, valid)
    f = filled.astype(np.float64)
    if np.isnan(f).any():
        raise Unsupported(f"column {name!r}: NaN values")
    if int not in kinds:
        return Column(valid, f, np.zeros(n, dtype=np.int64), valid.copy(), True, True, 0)
    is_float = np.fromiter((type(v) is float for v in values), dtype=np.bool_, count=n)
    int_part = np.where(is_float | np.logical_not(valid), 0, filled)
    try:
        ints = int_part.astype(np.int64)
    except OverflowError as exc:
        raise Unsupported(f"column {name!r}: integer beyond 64 bits") from exc
    max_abs = _max_abs(ints)
    if max_abs > EXACT_FLOAT_INT:
        raise Unsupported(f"column {name!r}: integers beyond 2**53 mixed with floats")
    return Column(valid, f, ints, is_float, True, False, max_abs)


def _int_column(ints: NDArray[np.int64], valid: NDArray[np.bool_]) -> Column:
    n = len(ints)
    max_abs = _max_abs(ints)
    if max_abs >= 2**62:
        raise Unsupported("integers too close to the 64-bit limit")
    return Column(
        valid, ints.astype(np.float64), ints, np.zeros(n, dtype=np.bool_), False, False, max_abs
    )
