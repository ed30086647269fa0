"""Key factorization: JSON scalar keys to dense int codes, stable for the engine's lifetime.

Why a typed table: Python (and pandas) treat ``1``, ``1.0`` and ``True`` as one dict key, but
they are three different JSON keys and the general engine keeps them apart. Batches of only
strings or only ints (the common case) are coded by one lookup per key in that type's table;
other batches holding at most one of the colliding types use ``pandas.factorize`` on the batch,
then one dict lookup per *distinct* key; otherwise keys are coded one by one with a type tag.
Codes are given in first-seen order, so code order is arrival order of keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count, repeat
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

try:  # pandas' C hash tables (private API, stable since pandas 0.2x): see KeyTable._lookup
    from pandas._libs.hashtable import Int64HashTable, PyObjectHashTable
except ImportError:  # pragma: no cover - a pandas without them: the dict paths only
    Int64HashTable = PyObjectHashTable = None

from jobs.engine.records import key_json


def fast_key_json(key: Any) -> str:
    """:func:`jobs.engine.records.key_json`, without ``json.dumps``' per-call setup for the
    common key types (the result is identical; tests check it)."""
    kind = type(key)
    if kind is str:
        return encode_basestring(key)
    if kind is int:
        return int.__repr__(key)
    if key is None:
        return "null"
    if kind is bool:
        return "true" if key else "false"
    return key_json(key)


class KeyTable:
    """Bidirectional map between keys (JSON scalars, None = the null key) and int64 codes."""

    def __init__(self, keys: Sequence[Any] = ()) -> None:
        self.values: list[Any] = []
        # one plain dict per JSON type: within one type, dict equality is JSON equality
        self._codes: dict[type, dict[Any, int]] = {}
        self._obj: NDArray[Any] = np.empty(0, dtype=object)
        self._json: NDArray[Any] = np.empty(0, dtype=object)
        self._rank: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._sorted_json: NDArray[Any] = np.empty(0, dtype="<U1")
        """The key JSONs of the ranked codes, sorted (``json_rank`` merges new keys in), as a
        fixed-width unicode array (see ``json_rank``)."""
        self._str_ht: Any = None
        self._int_ht: Any = None
        self._ht_synced = 0
        """Codes below this are in the hash tables (``_sync_tables``)."""
        for k in keys:
            self.code_of(k)

    def __len__(self) -> int:
        return len(self.values)

    def code_of(self, key: Any) -> int:
        kind = type(key)
        table = self._codes.setdefault(kind, {})
        # floats by their bits: -0.0 == 0.0 to a dict (and to pandas.factorize), but they are
        # two keys to JSON ("-0.0", "0.0"); every NaN is the one key "NaN"
        entry = key.hex() if kind is float else key
        code = table.get(entry)
        if code is None:
            code = len(self.values)
            table[entry] = code
            self.values.append(key)
        return code

    def load(self, keys: list[Any]) -> bool:
        """Give an empty table's ``keys`` the codes 0..n-1 in their order (restoring a stored
        table); False when two of them are one key. All-string and all-int lists (the common
        case) are entered by one dict build: several times faster than one ``code_of`` or
        one ``setdefault`` per key, the largest part of a restore with thousands of keys."""
        if self.values:
            raise ValueError("KeyTable.load: the table already holds keys")
        kinds = set(map(type, keys))
        if len(kinds) == 1 and kinds <= {str, int}:
            table = dict(zip(keys, range(len(keys)), strict=True))
            if len(table) != len(keys):
                return False
            self._codes[kinds.pop()] = table
            self.values = list(keys)
            return True
        for k in keys:
            self.code_of(k)
        return len(self.values) == len(keys)

    def object_array(self) -> NDArray[Any]:
        """Keys by code as an object array (extended as keys are added)."""
        n_old = len(self._obj)
        if n_old < len(self.values):
            extra = np.empty(len(self.values) - n_old, dtype=object)
            extra[:] = self.values[n_old:]
            self._obj = np.concatenate([self._obj, extra])
        return self._obj

    def json_array(self) -> NDArray[Any]:
        """Canonical key JSON by code (the general engine orders panes by it)."""
        n_old = len(self._json)
        if n_old < len(self.values):
            extra = np.empty(len(self.values) - n_old, dtype=object)
            new = self.values[n_old:]
            kinds = set(map(type, new))
            if kinds == {str}:
                extra[:] = list(map(encode_basestring, new))
            elif kinds == {int}:
                extra[:] = list(map(int.__repr__, new))
            else:
                extra[:] = [fast_key_json(v) for v in new]
            self._json = np.concatenate([self._json, extra])
        return self._json

    def json_rank(self) -> NDArray[np.int64]:
        """Rank of each code's key JSON among all keys (recomputed only after new keys): panes
        that fire together are ordered by key JSON, and sorting 10k strings once beats sorting
        one string per pane."""
        n_old, n = len(self._rank), len(self.values)
        if n_old == n:
            return self._rank
        # Incremental: sort only the new keys and merge them into the sorted JSON of the old
        # ones (key JSONs are distinct, so ranks are a permutation). An old key moves up by
        # the number of new keys before it; re-sorting all keys after every batch with a new
        # key cost more than the rest of a tumbling replay's firing.
        # The JSON texts are compared as a numpy unicode array ('U': C comparisons of code
        # points, the order of Python's str comparison) rather than as objects (one Python
        # comparison call each). Exact here: 'U' pads with NUL and ignores trailing NULs, and
        # JSON text never holds a raw NUL (or any control character: they are escaped).
        new = self.json_array()[n_old:].astype(str)
        order = np.argsort(new, kind="stable")
        new_sorted = new[order]
        old_sorted = self._sorted_json
        if new.dtype.itemsize > old_sorted.dtype.itemsize:  # insert() would truncate
            old_sorted = old_sorted.astype(new.dtype)
        ins = np.asarray(np.searchsorted(old_sorted, new_sorted), dtype=np.int64)
        rank = np.empty(n, dtype=np.int64)
        rank[:n_old] = self._rank + np.searchsorted(ins, self._rank, side="right")
        rank[n_old + order] = ins + np.arange(len(new), dtype=np.int64)
        self._sorted_json = np.insert(old_sorted, ins, new_sorted)
        self._rank = rank
        return rank

    def _codes_of(self, uniq: list[Any], kind: type) -> NDArray[np.int64]:
        table = self._codes.setdefault(kind, {})
        got = np.fromiter(map(table.get, uniq, repeat(-1)), dtype=np.int64, count=len(uniq))
        miss = np.flatnonzero(got < 0)
        if len(miss) and kind in (str, int):
            # distinct strings / ints (factorize uniques): new ones get the next codes at once
            missing = list(map(uniq.__getitem__, miss.tolist()))
            base = len(self.values)
            table.update(zip(missing, range(base, base + len(missing)), strict=True))
            self.values.extend(missing)
            got[miss] = np.arange(base, base + len(missing), dtype=np.int64)
        elif len(miss):
            got[miss] = [self.code_of(uniq[i]) for i in miss.tolist()]
        return got

    def _sync_tables(self) -> None:
        """Enter the codes added since the last call into the C hash tables (each key once)."""
        n = len(self.values)
        if self._ht_synced == n or PyObjectHashTable is None:
            return
        if self._str_ht is None:
            self._str_ht, self._int_ht = PyObjectHashTable(1024), Int64HashTable(1024)
        new = self.values[self._ht_synced:]
        for code, key in enumerate(new, start=self._ht_synced):
            kind = type(key)
            if kind is str:
                self._str_ht.set_item(key, code)
            elif kind is int and -(2**63) <= key < 2**63:
                self._int_ht.set_item(key, code)
        self._ht_synced = n

    def _lookup(self, keys: NDArray[Any], kind: type) -> NDArray[np.int64] | None:
        """Codes of known keys of one type (-1 for keys not in the table), by a C hash table
        that mirrors that type's dict; None without pandas' tables.

        Why: one ``dict.setdefault`` per key through ``map`` (~80 ns a key) was the largest
        cost of a hopping replay once panes stopped being objects; a C lookup over an object
        array is about half of that, array conversion included. Exact: the str table holds
        only str keys and compares with Python equality (no C-string truncation at NUL, unlike
        ``pandas.factorize`` on strings), and no key of another JSON type equals a string; the
        int table is only given all-int int64 arrays (bools ruled out by the caller)."""
        if PyObjectHashTable is None:
            return None
        self._sync_tables()
        if self._str_ht is None:
            return np.full(len(keys), -1, dtype=np.int64)
        table = self._str_ht if kind is str else self._int_ht
        return np.asarray(table.lookup(keys), dtype=np.int64)

    def _encode_strings(self, keys: Sequence[Any]) -> NDArray[np.int64] | None:
        """Codes of a batch whose first key is a str: C lookup of the known keys, the dict
        path (``_encode_by_table``) for the rest; None (nothing changed) if a key that is not
        yet known is not a string.

        While no string is known (an engine's first batch) every lookup would miss: the
        batch goes straight to the dict path, which costs what the int path costs (the C
        lookup, the object array and the misses' list came to twice that)."""
        if not self._codes.get(str):
            return self._encode_by_table(keys, str)
        # fromiter: half the time of np.asarray(keys, dtype=object), which inspects every
        # element for nesting
        obj = np.fromiter(keys, dtype=object, count=len(keys))
        codes = self._lookup(obj, str)
        if codes is None:
            return self._encode_by_table(keys, str)
        miss = np.flatnonzero(codes < 0)
        if len(miss) == 0:
            return codes
        rest = self._encode_by_table(obj[miss].tolist(), str)
        if rest is None:
            return None
        codes[miss] = rest
        return codes

    def encode(self, keys: Sequence[Any] | NDArray[Any]) -> NDArray[np.int64]:
        """Codes of a batch of keys (new keys are added in first-seen order)."""
        n = len(keys)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if not isinstance(keys, np.ndarray) and type(keys[0]) is str:
            fast = self._encode_strings(keys)
            if fast is not None:
                return fast
        if isinstance(keys, np.ndarray) and keys.dtype != object:
            arr: NDArray[Any] = keys
            kinds = {type(arr[0].item())}
        else:
            kinds = set(map(type, keys))
            if kinds == {int}:
                try:  # ints factorize an order of magnitude faster as int64 than as objects
                    arr = np.fromiter(keys, dtype=np.int64, count=n)
                except OverflowError:
                    arr = np.asarray(keys, dtype=object)
            elif isinstance(keys, np.ndarray):
                arr = keys
            else:
                arr = np.asarray(keys, dtype=object)
        if (float in kinds or len(kinds & {bool, int, float}) > 1
                or not kinds <= {str, int, float, bool, type(None)}):
            # float keys one by one (code_of keeps -0.0 and 0.0 apart), as Python scalars
            plain = arr.tolist() if isinstance(arr, np.ndarray) else list(arr)
            return np.fromiter((self.code_of(k) for k in plain), dtype=np.int64, count=n)
        if kinds == {str}:  # (arrays of strings) never pandas' C-string table: see above
            by_table = self._encode_by_table(arr.tolist(), str)
            assert by_table is not None
            return by_table
        if kinds == {int} and arr.dtype == np.int64:
            known = self._lookup(arr, int)
            if known is not None:
                miss = np.flatnonzero(known < 0)
                if len(miss):  # new keys: factorized, coded in first-seen order
                    local, uniques = pd.factorize(arr[miss])
                    mapping = self._codes_of(uniques.tolist(), int)
                    known[miss] = mapping[np.asarray(local, dtype=np.int64)]
                return known
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
            real = kinds - {type(None)}
            if len(real) == 1 and uniq_list and type(uniq_list[0]) in real:
                mapping = self._codes_of(uniq_list, type(uniq_list[0]))
            else:
                mapping = np.fromiter(
                    (self.code_of(u) for u in uniq_list), dtype=np.int64, count=len(uniq_list)
                )
        return mapping[local]

    def _encode_by_table(self, keys: Sequence[Any], kind: type) -> NDArray[np.int64] | None:
        """Codes of a batch of keys of one type by direct lookups in that type's table; None
        (nothing changed) when a key not in the table is not of that type.

        Why: pandas' string hash table (what ``pandas.factorize`` uses for all-string object
        arrays) compares keys as C strings, so "a", "a\\x00b" and "a\\x00c" were one key. One
        ``dict.setdefault`` per key (the loop runs in C; hashes of str keys are cached) is exact
        by construction: within one type, dict equality is key equality, and no key of another
        JSON type equals a string (for other types the caller must have checked that every key
        is of ``kind``: ``True`` would find ``1``). Measured about as fast as factorizing the
        batch and mapping its uniques (no object array to build)."""
        table = self._codes.setdefault(kind, {})
        n, base = len(keys), len(self.values)
        # one pass: a key not in the table is entered with base + its position in the batch,
        # so the later occurrences of a new key find its first position
        codes = np.fromiter(map(table.setdefault, keys, count(base)), dtype=np.int64, count=n)
        if int(codes.max()) < base:
            return codes
        is_new = codes >= base
        pos = codes[is_new] - base
        first = np.zeros(n, dtype=np.bool_)
        first[pos] = True
        firsts = np.flatnonzero(first)  # first positions, in first-seen order (no sort)
        fresh = list(map(keys.__getitem__, firsts.tolist()))
        # a key of another type would be its own entry here (it equals no key of this type)
        if set(map(type, fresh)) != {kind}:
            for k in fresh:
                del table[k]
            return None
        table.update(zip(fresh, range(base, base + len(fresh)), strict=True))
        self.values.extend(fresh)
        codes[is_new] = base + (np.cumsum(first) - 1)[pos]
        return codes
