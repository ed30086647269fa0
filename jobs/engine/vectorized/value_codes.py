"""Arbitrary JSON values coded to ints, distinct exactly as the general engine's
``count_distinct`` decides (``jobs.engine.aggregates._distinct_token``: 1 and 1.0 are one value,
``true`` is not 1, lists and objects by their canonical JSON text).

Coding is the one per-value Python step of ``count_distinct``: a column of only strings or only
ints is factorized in C first (their tokens are then needed for the distinct values only); any
other column computes each value's token in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from jobs.engine.aggregates import _distinct_token

I64 = NDArray[np.int64]


class ValueTable:
    """Token <-> code of every distinct value seen (append-only: codes never change)."""

    def __init__(self, tokens: list[str] | None = None) -> None:
        self.tokens: list[str] = list(tokens or [])
        self.code_of: dict[str, int] = {tok: i for i, tok in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def _codes_of_tokens(self, tokens: list[str]) -> I64:
        out = np.empty(len(tokens), dtype=np.int64)
        for i, tok in enumerate(tokens):  # one step per distinct value of the batch
            code = self.code_of.get(tok)
            if code is None:
                code = self.code_of[tok] = len(self.tokens)
                self.tokens.append(tok)
            out[i] = code
        return out

    def encode(self, values: NDArray[Any]) -> I64:
        """The code of each (non-null) value."""
        if len(values) == 0:
            return np.zeros(0, dtype=np.int64)
        kinds = set(map(type, values))
        uniq: Any
        if kinds == {str}:
            inv, uniq = pd.factorize(values)
            tokens = [_distinct_token(u) for u in uniq]
        elif kinds == {int} and _fits_int64(values):
            inv, uniq = pd.factorize(values.astype(np.int64))
            tokens = [str(u) for u in uniq.tolist()]
        else:
            inv, uniq = pd.factorize(np.array([_distinct_token(v) for v in values], dtype=object))
            tokens = list(uniq)
        return self._codes_of_tokens(tokens)[np.asarray(inv, dtype=np.int64)]


def _fits_int64(values: NDArray[Any]) -> bool:
    lo, hi = min(values), max(values)
    return bool(lo >= -(2**63) and hi < 2**63)
