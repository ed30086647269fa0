"""The Define page with a Kafka source and sink: credentials written inline are refused next to
the field as you type, the preview samples the real topic (metadata columns included), and a
kafka sink's topic and producer options round-trip through the form into the catalog."""

from __future__ import annotations

import json
from pathlib import Path

from jobs.catalog import Catalog
from jobs.kafka.broker import KafkaBroker
from tests.kafka.conftest import create_topic, produce
from tests.ui.conftest import cat, catalog_url, template_db, users  # noqa: F401 (fixtures)
from tests.ui.helpers import app_as, button, widget

DEFINE = "views/define.py"
T0 = 1_767_225_600_000


def test_kafka_fields_sample_and_sink(cat: Catalog, users: dict[str, str],  # noqa: F811
                                      broker: KafkaBroker, tmp_path: Path) -> None:
    topic, out = create_topic(broker), create_topic(broker)
    rows = [{"team": "a", "score": 3, "et": T0 + 10_000}, {"team": "a", "score": 4, "et": T0 + 50_000},
            {"team": "b", "score": 1, "et": T0 + 70_000}]
    produce(broker, topic, [(0, None, json.dumps(r).encode()) for r in rows] + [(0, None, b"{bad")])

    at = app_as("editor", DEFINE)
    widget(at, "text_input", "Name").input("kteams").run()
    widget(at, "selectbox", "Source kind").select("kafka").run()
    widget(at, "text_input", "Schema (Spark DDL)").input("team STRING, score INT, et BIGINT").run()
    widget(at, "text_input", "Key (SQL expression)").input("team").run()
    widget(at, "text_input", "Event time (SQL expression or 'processing')").input("et").run()
    options = widget(at, "text_area", "Reader options (one name=value a line)")
    options.input(f"kafka.bootstrap.servers={broker.bootstrap}\nsubscribe={topic}\n"
                  "kafka.sasl.jaas.config=PlainLoginModule password=oops").run()
    assert any("${env:NAME}" in e.value for e in at.error), [e.value for e in at.error]
    assert button(at, "Create job").disabled
    widget(at, "text_area", "Reader options (one name=value a line)").input(
        f"kafka.bootstrap.servers={broker.bootstrap}\nsubscribe={topic}").run()
    widget(at, "selectbox", "Sink kind").select("kafka").run()
    widget(at, "text_input", "Sink topic").input(out).run()
    widget(at, "text_area", "Producer options (one name=value a line)").input(
        f"kafka.bootstrap.servers={broker.bootstrap}").run()
    assert not at.error, [e.value for e in at.error]
    assert not at.exception, at.exception

    # the preview read the topic: 3 records (the bad one is a problem line), 2 windows
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Records"] == "3" and metrics["Panes"] == "2", metrics

    widget(at, "text_input", "Change note").input("from kafka").run()
    button(at, "Create job").click().run()
    assert not at.exception, at.exception
    v = cat.active_version("kteams")
    spec = v.spec
    assert spec["sink"]["topic"] == out  # type: ignore[index]
    assert spec["source"]["options"]["subscribe"] == topic  # type: ignore[index]
