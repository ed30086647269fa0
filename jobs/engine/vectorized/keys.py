"""Key factorization: JSON scalar keys to dense int codes, stable for the engine's lifetime.

Why a typed table: Python (and pandas) treat ``1``, ``1.0`` and ``True`` as one dict key, but
they are three different JSON keys and the general engine keeps them apart. The fast path
(``pandas.factorize`` on the batch, then one dict lookup per *distinct* key) is taken when a batch
holds at most one of the colliding types; otherwise keys are coded one by one with a type tag.
Codes are given in first-seen order, so code order is arrival order of keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

_NUMERIC_LIKE = (bool, int, float)


def _tag(value: Any) -> tuple[type, Any]:
    return (type(value), value)


class KeyTable:
    """Bidirectional map between keys (JSON scalars, None = the null key) and int64 codes."""

    def __init__(self, keys: Sequence[Any] = ()) -> None:
        self.values: list[Any] = []
        self._codes: dict[tuple[type, Any], int] = {}
        for k in keys:
            self.code_of(k)

    def __len__(self) -> int:
        return len(self.values)

    def code_of(self, key: Any) -> int:
        tag = _tag(key)
        code = self._codes.get(tag)
        if code is None:
            code = len(self.values)
            self._codes[tag] = code
            self.values.append(key)
        return code

    def encode(self, keys: Sequence[Any] | NDArray[Any]) -> NDArray[np.int64]:
        """Codes of a batch of keys (new keys are added in first-seen order)."""
        n = len(keys)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if isinstance(keys, np.ndarray) and keys.dtype != object:
            arr: NDArray[Any] = keys
            kinds = {type(arr[0].item())}
        else:
            arr = np.asarray(keys, dtype=object) if not isinstance(keys, np.ndarray) else keys
            kinds = set(map(type, arr))
        if len(kinds & {bool, int, float}) > 1 or not kinds <= {str, int, float, bool, type(None)}:
            return np.fromiter((self.code_of(k) for k in arr), dtype=np.int64, count=n)
        local, uniques = pd.factorize(arr, use_na_sentinel=True)
        local = np.asarray(local, dtype=np.int64)
        uniq_list: list[Any] = uniques.tolist()
        if type(None) in kinds:
            # the null key gets its code at its first-seen position, like every other key
            first_null = int(np.argmax(local == -1))
            before = int(local[:first_null].max()) + 1 if first_null > 0 else 0
            order = uniq_list[:before] + [None] + uniq_list[before:]
            codes = [self.code_of(u) for u in order]
            mapping = np.array(codes[:before] + codes[before + 1 :] + [codes[before]], dtype=np.int64)
        else:
            mapping = np.fromiter(
                (self.code_of(u) for u in uniq_list), dtype=np.int64, count=len(uniq_list)
            )
        return mapping[local]
