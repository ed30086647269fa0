"""The pure Kafka parts: secret references, the sink's message contract, the retention guard,
and the definition fields (no broker, no Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.definition import DefinitionError, canonical_json, load_definition
from jobs.kafka.contract import (
    latest_per_pane,
    message_headers,
    message_key,
    message_value,
    row_of_value,
)
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.retention import check_retention, guard
from jobs.kafka.secrets import resolve_options

ROW: dict[str, Any] = {
    "job": "j", "version": 2, "store": "j__x", "key": '"é"', "window_start": 0,
    "window_end": 60_000, "first_event_time": None, "last_event_time": None,
    "timing": "EARLY", "pane_index": 0, "is_first": True, "is_last": False,
    "retraction": False, "values": '{"n":3,"total":2.5}', "emitted_at": 5, "watermark": None,
}


def spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "k", "key": "team", "event_time": "et",
        "source": {"kind": "kafka", "schema": "team STRING, et BIGINT",
                   "options": {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}},
        "window": {"type": "tumbling", "size": "1m"},
        "aggregations": [{"name": "n", "fn": "count"}],
    }
    base.update(over)
    return base


def test_message_key_value_headers_are_canonical_bytes() -> None:
    assert message_key(ROW) == (
        '{"key":"é","store":"j__x","window_end":60000,"window_start":0}'.encode())
    value = json.loads(message_value(ROW))
    assert value["key"] == "é" and value["values"] == {"n": 3, "total": 2.5}
    assert set(value) == set(ROW)
    # the row comes back from the message value: consumers can recompute the key
    assert message_key(row_of_value(message_value(ROW))) == message_key(ROW)
    assert message_value(row_of_value(message_value(ROW))) == message_value(ROW)
    assert dict(message_headers(ROW)) == {
        "tidemark.version": b"2", "tidemark.store": b"j__x", "tidemark.timing": b"EARLY",
        "tidemark.pane_index": b"0", "tidemark.retraction": b"false"}


def test_a_pane_with_non_finite_numbers_is_sent_with_the_output_rule() -> None:
    """A pane row as the results hold it (key and values as the engine host writes them,
    jobs.engine.records.jsonable): the message value keeps the strings, no bare NaN."""
    from jobs.engine.records import jsonable, key_json

    row = {**ROW, "key": key_json(jsonable(float("nan"))), "values": json.dumps(
        jsonable({"s": float("inf"), "m": float("-inf"), "x": float("nan"), "ok": 1.5}),
        separators=(",", ":"))}

    def strict(text: str) -> Any:
        raise ValueError(f"bare {text} in a message value")

    value = json.loads(message_value(row), parse_constant=strict)
    assert value["key"] == "NaN"
    assert value["values"] == {"s": "Infinity", "m": "-Infinity", "x": "NaN", "ok": 1.5}


def test_consumer_rule_collapses_resends_and_keeps_retractions_apart() -> None:
    retraction = {**ROW, "retraction": True, "pane_index": 1}
    update = {**ROW, "pane_index": 1, "values": '{"n":4,"total":3.5}'}
    msgs = [(message_key(r), message_value(r)) for r in (ROW, retraction, update, ROW, update)]
    kept = latest_per_pane(msgs)
    assert len(kept) == 3
    assert sorted(kept.values()) == sorted(message_value(r) for r in (ROW, retraction, update))


def test_secret_references_resolve_from_env_and_file(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.write_text("# comment\nKAFKA_JAAS = org.Plain required;\n")
    env = {"PW": "s3cret", "TIDEMARK_SECRETS_FILE": str(secrets)}
    got = resolve_options({"kafka.ssl.key.password": "${env:PW}",
                           "kafka.sasl.jaas.config": "${secret:KAFKA_JAAS}", "subscribe": "t"},
                          "source.options", env)
    assert got == {"kafka.ssl.key.password": "s3cret",
                   "kafka.sasl.jaas.config": "org.Plain required;", "subscribe": "t"}
    with pytest.raises(KafkaSetupError, match="MISSING is not set"):
        resolve_options({"x": "${env:MISSING}"}, "source.options", env)
    with pytest.raises(KafkaSetupError, match="has no NOPE"):
        resolve_options({"x": "${secret:NOPE}"}, "source.options", env)


def test_definition_refuses_inline_credentials_and_keeps_references() -> None:
    opts = {"kafka.bootstrap.servers": "h:1", "subscribe": "t",
            "kafka.sasl.jaas.config": "PlainLoginModule required password=\"x\";"}
    with pytest.raises(DefinitionError) as err:
        load_definition(spec(source={"kind": "kafka", "schema": "team STRING, et BIGINT",
                                     "options": opts}))
    assert err.value.field == "source.options.kafka.sasl.jaas.config"
    opts["kafka.sasl.jaas.config"] = "${secret:JAAS}"
    defn = load_definition(spec(source={"kind": "kafka", "schema": "team STRING, et BIGINT",
                                        "options": opts}))
    assert "${secret:JAAS}" in canonical_json(defn) and "password" not in canonical_json(defn)


def test_metadata_columns_are_usable_and_reserved() -> None:
    defn = load_definition(spec(key="coalesce(team, kafka_key)",
                                aggregations=[{"name": "hi", "fn": "max", "of": "kafka_offset"},
                                              {"name": "p", "fn": "collect",
                                               "of": "kafka_partition"}]))
    assert defn.key == "coalesce(team, kafka_key)"
    with pytest.raises(DefinitionError, match="kafka_offset is a Kafka metadata column"):
        load_definition(spec(source={"kind": "kafka", "schema": "kafka_offset BIGINT, et BIGINT",
                                     "options": {"kafka.bootstrap.servers": "h:1",
                                                 "subscribe": "t"}}))
    with pytest.raises(DefinitionError, match="kafka_offsett"):
        load_definition(spec(key="kafka_offsett"))


def test_kafka_sink_fields() -> None:
    defn = load_definition(spec(sink={"kind": "kafka", "topic": "panes.out",
                                      "options": {"kafka.bootstrap.servers": "h:1"}}))
    assert defn.sink.topic == "panes.out" and dict(defn.sink.options)["kafka.bootstrap.servers"]
    assert json.loads(canonical_json(defn))["sink"]["topic"] == "panes.out"
    for bad, field in [({"kind": "kafka", "options": {"kafka.bootstrap.servers": "h:1"}},
                        "sink.topic"),
                       ({"kind": "kafka", "topic": "t"}, "sink.options"),
                       ({"kind": "kafka", "topic": "bad topic!",
                         "options": {"kafka.bootstrap.servers": "h:1"}}, "sink.topic"),
                       ({"kind": "parquet", "topic": "t"}, "sink.topic")]:
        with pytest.raises(DefinitionError) as err:
            load_definition(spec(sink=bad))
        assert err.value.field == field, bad
    # a parquet sink's canonical form is unchanged (store names and hashes stay put)
    assert json.loads(canonical_json(load_definition(spec())))["sink"] == {
        "kind": "parquet", "path": None}


def test_retention_guard() -> None:
    first = {("t", 0): 0, ("t", 1): 5}
    ok = check_retention(first, {("t", 0): 0, ("t", 1): 3})
    assert ok.complete and ok.complete_from == {("t", 0): 0, ("t", 1): 3}
    with pytest.raises(KafkaSetupError, match=r"t\[1\] offsets 5..9"):
        guard(first, {("t", 0): 0, ("t", 1): 10}, accept_partial=False)
    partial = guard(first, {("t", 0): 0, ("t", 1): 10}, accept_partial=True)
    assert not partial.complete and partial.lost == {("t", 1): (5, 10)}
    assert partial.complete_from == {("t", 0): 0, ("t", 1): 10}
    with pytest.raises(KafkaSetupError, match="no longer exists"):
        check_retention(first, {("t", 0): 0})


def test_side_topics_parse_and_round_trip_through_the_form() -> None:
    from ui import defform

    sink = {"kind": "kafka", "topic": "panes", "late_topic": "late", "dead_letter_topic": "dead",
            "options": {"kafka.bootstrap.servers": "h:1"}}
    defn = load_definition(spec(sink=sink))
    assert (defn.sink.late_topic, defn.sink.dead_letter_topic) == ("late", "dead")
    model = defform.form_from_definition(defn)
    raw, errors = defform.raw_from_form(model)
    assert not errors and raw["sink"] == sink
    assert canonical_json(load_definition(raw)) == canonical_json(defn)
    with pytest.raises(DefinitionError) as err:
        load_definition(spec(sink={**sink, "late_topic": "no good"}))
    assert err.value.field == "sink.late_topic"


def test_side_messages_are_stable() -> None:
    from jobs.kafka.contract import side_messages

    lines = [{"reason": "expired", "key": '"a"'}, {"reason": "expired", "key": '"a"'}]
    msgs = side_messages("s", 3, lines)
    assert msgs == side_messages("s", 3, [dict(x) for x in lines])
    assert [json.loads(k) for k, _ in msgs] == [{"batch_id": 3, "index": 0, "store": "s"},
                                                {"batch_id": 3, "index": 1, "store": "s"}]
    assert msgs[0][1] == b'{"key":"\\"a\\"","reason":"expired"}'


def test_broker_cluster_ids_never_look_like_an_option() -> None:
    """About one id in 64 from urlsafe base64 starts with '-', which the storage tool's parser
    reads as an option; every id the broker uses must be safe to pass as ``-t <id>``."""
    from jobs.kafka.broker import new_cluster_id

    ids = [new_cluster_id() for _ in range(2000)]
    assert all(not i.startswith("-") and len(i) == 22 for i in ids)
    assert len(set(ids)) == len(ids)
