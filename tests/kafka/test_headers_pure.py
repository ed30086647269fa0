"""Kafka headers in expressions, without a broker: the ``kafka_headers['name']`` subscript is
allow-listed for a map column only, evaluates in replay as Spark looks a map up, and a message's
headers become the column's value by the same rules as in the job (last value of a name,
UTF-8 or null)."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.definition import DefinitionError, load_definition
from jobs.definition.expr import compile_expression
from jobs.kafka.admin import preview_lines
from jobs.kafka.columns import header_text, headers_map


def spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "k", "key": "kafka_headers['tenant']", "event_time": "et",
        "source": {"kind": "kafka", "schema": "team STRING, et BIGINT, tags ARRAY<STRING>, "
                                              "ids MAP<INT, STRING>",
                   "options": {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}},
        "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "w", "fn": "sum",
                          "of": "CAST(kafka_headers['weight'] AS INT)"}],
    }
    base.update(over)
    return base


def test_headers_are_usable_in_key_and_aggregations() -> None:
    defn = load_definition(spec())
    assert defn.key == "kafka_headers['tenant']"


@pytest.mark.parametrize(("key", "problem"), [
    ("tags['a']", "column 'tags' is array; only a map with string keys takes a subscript"),
    ("ids['1']", "column 'ids' is map with non-string keys"),
    ("kafka_headers[team]", "must be a map column's key as a string literal"),
    ("kafka_headers[1]", "must be a map column's key as a string literal"),
    ("upper(team)['x']", "must be a map column's key as a string literal"),
    ("kafka_header['x']", "unknown column 'kafka_header'"),
])
def test_a_subscript_is_a_string_key_of_a_map_column(key: str, problem: str) -> None:
    with pytest.raises(DefinitionError, match=r"key: .*" + problem.replace("[", r"\[")):
        load_definition(spec(key=key))


def test_replay_looks_a_header_up_as_spark_looks_a_map_up() -> None:
    f = compile_expression("kafka_headers['Tenant']")
    assert f({"kafka_headers": {"Tenant": "a", "tenant": "b"}}) == "a"
    assert f({"kafka_headers": {"tenant": "b"}}) is None  # exact, case-sensitive
    assert f({"kafka_headers": {}}) is None
    assert f({"kafka_headers": None}) is None
    assert f({}) is None
    weight = compile_expression("CAST(kafka_headers['w'] AS INT) * 2")
    assert weight({"kafka_headers": {"w": "21"}}) == 42
    assert weight({"kafka_headers": {"w": "x"}}) is None  # a bad cast is null (ANSI off)


def test_message_headers_become_the_column_value() -> None:
    assert headers_map(None) == {}
    assert headers_map([("a", b"1"), ("b", None), ("a", b"2"), ("bin", b"\xff\x00"),
                        ("e", "é".encode())]) == {"a": "2", "b": None, "bin": None, "e": "é"}
    # not valid UTF-8: a lone continuation byte, a surrogate, an overlong form, past U+10FFFF
    for raw in (b"\x80", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"):
        assert header_text(raw) is None
    assert header_text(b"") == ""


def test_sampled_records_carry_their_headers_for_the_preview() -> None:
    lines = preview_lines([
        {"kafka_topic": "t", "kafka_partition": 0, "kafka_offset": 3, "kafka_key": None,
         "value": '{"et": 5}', "kafka_headers": {"tenant": "a"}},
        {"kafka_topic": "t", "kafka_partition": 0, "kafka_offset": 4, "kafka_key": None,
         "value": "not json", "kafka_headers": {"tenant": "a"}},
        {"kafka_topic": "t", "kafka_partition": 0, "kafka_offset": 5, "kafka_key": None,
         "value": '{"et": 6}', "kafka_headers": {}},
    ])
    assert lines == ['{"et": 5, "kafka_key": null, "kafka_topic": "t", "kafka_partition": 0, '
                     '"kafka_offset": 3, "kafka_headers": {"tenant": "a"}}', "not json",
                     '{"et": 6, "kafka_key": null, "kafka_topic": "t", "kafka_partition": 0, '
                     '"kafka_offset": 5}']
    # a record without the column reads every header as null, as an empty map does
    assert compile_expression("kafka_headers['tenant']")({"et": 6}) is None
