"""The bulk pane builder and the string-key fast paths give exactly what the plain code does."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.engine.records import Key, Pane, key_json
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.panes import final_panes


def test_bulk_panes_equal_constructed_panes() -> None:
    keys: list[Key] = ["a", 1, None]
    starts: list[int | None] = [0, 10, None]
    ends: list[int | None] = [10, 20, None]
    values: list[dict[str, Any]] = [{"n": 1}, {"n": 2, "s": 3.5}, {}]
    wms: list[int | None] = [5, None, 7]
    got = final_panes(keys, starts, ends, values, wms, 99)
    want = [
        Pane(k, s, e, "ON_TIME", 0, True, True, False, v, 99, w)
        for k, s, e, v, w in zip(keys, starts, ends, values, wms, strict=True)
    ]
    assert got == want
    assert [type(p) for p in got] == [Pane] * 3
    assert [p.to_json() for p in got] == [p.to_json() for p in want]


scalar_keys = st.one_of(
    st.text(max_size=3), st.integers(-3, 3), st.booleans(), st.none(),
    st.sampled_from([1.0, 0.5, -2.0]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(scalar_keys, min_size=1, max_size=12), min_size=1, max_size=5))
def test_key_codes_and_ranks_match_one_by_one_coding(batches: list[list[object]]) -> None:
    """Batches starting with a string (the factorize-first path) that also hold ints, bools,
    floats or None must code keys like coding them one by one; ranks must be the sort order
    of the key JSON."""
    fast, slow = KeyTable(), KeyTable()
    for batch in batches:
        keys = ["s", *batch]
        codes = fast.encode(keys).tolist()
        assert codes == [slow.code_of(k) for k in keys]
        assert [key_json(v) for v in fast.values] == [key_json(v) for v in slow.values]
        kj = [key_json(v) for v in fast.values]
        want = np.empty(len(kj), dtype=np.int64)
        want[np.argsort(np.array(kj, dtype=object), kind="stable")] = np.arange(len(kj))
        assert fast.json_rank().tolist() == want.tolist()


nul_strings = st.sampled_from(["a", "a\x00b", "a\x00c", "\x00", "", "b\x00"])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.one_of(scalar_keys, nul_strings), min_size=1, max_size=12), min_size=1, max_size=5),
    st.sampled_from(["s", 7, None]),
    st.booleans(),
)
def test_single_type_lookup_paths_match_one_by_one_coding(
    batches: list[list[object]], lead: object, as_array: bool
) -> None:
    """The per-type table lookups (all-string and all-int batches, with misses falling back
    when another type shows up) and string keys with NUL characters (pandas' string table
    compared them as C strings, so "a", "a\\x00b" and "a\\x00c" were one key)."""
    fast, slow = KeyTable(), KeyTable()
    for batch in batches:
        for keys in ([lead, *batch], [k for k in batch if type(k) is str] or ["x"],
                     [k for k in batch if type(k) is int] or [3]):
            arg: Any = np.array(keys, dtype=object) if as_array else keys
            codes = fast.encode(arg).tolist()
            assert codes == [slow.code_of(k) for k in keys]
            assert [key_json(v) for v in fast.values] == [key_json(v) for v in slow.values]


def test_nul_string_keys_stay_distinct() -> None:
    t = KeyTable()
    assert t.encode(["a\x00b", "a\x00c", "a", "a\x00b"]).tolist() == [0, 1, 2, 0]
    assert t.encode(np.array(["a", "a\x00c", "z\x00"], dtype=object)).tolist() == [2, 1, 3]
    assert t.encode([2**70, 5, 2**70]).tolist() == [4, 5, 4]  # ints beyond int64 too


def test_json_ranks_as_unicode_array_keep_python_string_order() -> None:
    """Key-JSON ranks are computed on a fixed-width unicode array: later, longer keys must not
    be truncated into the old width; control characters, NUL, lone surrogates and non-ASCII
    must sort as Python sorts the JSON texts."""
    t = KeyTable()
    batches: list[list[Any]] = [
        ["b", "a"], ["a" * 40, "\x00", "a\x00", "\ud800", "ü", "\x1f"],
        [10, 9, True, None, 1.5, "a\x00b" * 9, "zz", '"q"', "\\"],
    ]
    for keys in batches:
        t.encode(keys)
        kj = [key_json(v) for v in t.values]
        order = sorted(range(len(kj)), key=kj.__getitem__)
        want = [0] * len(kj)
        for r, c in enumerate(order):
            want[c] = r
        assert t.json_rank().tolist() == want


def test_first_string_batch_codes_like_one_by_one_coding() -> None:
    """An empty table's first batch led by a string takes the dict path directly: codes in
    first-seen order, and a new key of another type still sends the batch to the general
    path without leaving anything behind."""
    for keys in (["b", "a", "b", "a\x00", "a"], ["b", "a", 1, None, "b", True, 1.0, "a\x00"]):
        fast, slow = KeyTable(), KeyTable()
        assert fast.encode(keys).tolist() == [slow.code_of(k) for k in keys]
        assert [key_json(v) for v in fast.values] == [key_json(v) for v in slow.values]
        assert fast.encode(["a", "zz", "b"]).tolist() == [slow.code_of(k) for k in ["a", "zz", "b"]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(scalar_keys, nul_strings), max_size=20),
       st.lists(st.text(max_size=3), max_size=20), st.lists(st.integers(-3, 3), max_size=20))
def test_loading_a_stored_key_list_gives_the_codes_and_lookups_of_one_by_one_coding(
        mixed: list[object], strings: list[str], ints: list[int]) -> None:
    """``load`` (a restore: distinct keys get codes 0..n-1 in their order) leaves a table that
    codes later batches exactly like one built key by key; a list holding one key twice (by
    JSON: 1 and True are two keys, 0.0 and -0.0 too) is refused."""
    for keys in (mixed, strings, ints):
        slow = KeyTable()
        codes = [slow.code_of(k) for k in keys]
        distinct = len(slow) == len(keys)
        loaded = KeyTable()
        assert loaded.load(list(keys)) is distinct
        if not distinct:
            continue
        assert codes == list(range(len(keys)))
        assert [key_json(v) for v in loaded.values] == [key_json(v) for v in slow.values]
        later = [*keys[::-1], "new", 9, *mixed]
        assert loaded.encode(later).tolist() == [slow.code_of(k) for k in later]
        assert [key_json(v) for v in loaded.values] == [key_json(v) for v in slow.values]
