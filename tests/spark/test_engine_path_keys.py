"""The engine path's key parsing: the worker's cache of parsed key texts gives exactly what
parsing each record's key gives, and never shares a mutable key between batches."""

from __future__ import annotations

import json

from jobs.spark.engine_path import batch_input
from jobs.spark.engine_path.batch_input import parsed_keys


def test_parsed_keys_equal_json_loads_per_record() -> None:
    texts = ['"a"', '"b"', '"a"', "7", "1.5", "true", "null", '"\\u00e9"', "[1,\"x\"]",
             '{"k":1}', "[1,\"x\"]", "7"]
    for _ in range(2):  # the second call reads the cache
        got = parsed_keys(texts)
        want = [json.loads(t) for t in texts]
        assert got == want
        assert [type(v) for v in got] == [type(v) for v in want]


def test_list_and_object_keys_are_fresh_per_call() -> None:
    first = parsed_keys(["[1,2]", '{"a":[3]}'])
    first[0].append(99)
    first[1]["a"].append(4)
    assert parsed_keys(["[1,2]", '{"a":[3]}']) == [[1, 2], {"a": [3]}]


def test_cache_stays_bounded_and_correct_when_full(monkeypatch) -> None:
    monkeypatch.setattr(batch_input, "KEY_CACHE_SIZE", 4)
    monkeypatch.setattr(batch_input, "_KEYS", {})
    for start in range(0, 30, 3):
        texts = [f'"k{i}"' for i in range(start, start + 3)] * 2
        assert parsed_keys(texts) == [f"k{i}" for i in range(start, start + 3)] * 2
        assert len(batch_input._KEYS) <= 4
