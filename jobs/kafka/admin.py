"""Small reads from a broker outside Spark: earliest retained offsets (the retention guard),
a few records for the preview (the "sample" action), and the offsets a store started from.

Uses ``confluent-kafka`` (librdkafka) with the definition's ``kafka.*`` options, credentials
resolved from their references (jobs/kafka/secrets.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobs.kafka.columns import HEADERS, headers_map
from jobs.kafka.errors import KafkaSetupError
from jobs.kafka.retention import Partition
from jobs.kafka.secrets import resolve_options

TIMEOUT = 15.0


def client_config(options: Mapping[str, str], field: str = "source.options") -> dict[str, str]:
    """librdkafka settings from Spark-style options: the ``kafka.`` ones, prefix removed."""
    resolved = resolve_options(options, field)
    conf = {k.removeprefix("kafka."): v for k, v in resolved.items() if k.startswith("kafka.")}
    if "bootstrap.servers" not in conf:
        raise KafkaSetupError("kafka.bootstrap.servers is required", field)
    return conf


def _topics(options: Mapping[str, str], consumer: Any) -> list[str]:
    if "subscribe" in options:
        return [t.strip() for t in options["subscribe"].split(",") if t.strip()]
    if "assign" in options:
        return sorted(json.loads(options["assign"]))
    if "subscribePattern" in options:
        import re

        pattern = re.compile(options["subscribePattern"])
        names = consumer.list_topics(timeout=TIMEOUT).topics
        return sorted(t for t in names if pattern.fullmatch(t))
    raise KafkaSetupError("needs subscribe, subscribePattern or assign", "source.options")


def _consumer(conf: dict[str, str]) -> Any:
    from confluent_kafka import Consumer

    return Consumer({**conf, "group.id": f"tidemark-{uuid.uuid4().hex[:12]}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})


def earliest_offsets(options: Mapping[str, str]) -> dict[Partition, int]:
    """(topic, partition) -> earliest retained offset, for every partition the source reads."""
    from confluent_kafka import TopicPartition

    c = _consumer(client_config(options))
    try:
        out: dict[Partition, int] = {}
        assigned = json.loads(options["assign"]) if "assign" in options else {}
        for topic in _topics(options, c):
            md = c.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
            if md is None or md.error is not None:
                raise KafkaSetupError(f"topic {topic!r} does not exist", "source.options")
            for p in sorted(md.partitions):
                if assigned and p not in assigned[topic]:  # ``assign``: only those partitions
                    continue
                low, _ = c.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT)
                out[(topic, p)] = int(low)
        return out
    except KafkaSetupError:
        raise
    except Exception as exc:  # noqa: BLE001 - librdkafka's KafkaException and timeouts
        raise KafkaSetupError(f"cannot read offsets from the broker: {exc}") from exc
    finally:
        c.close()


def sample(options: Mapping[str, str], limit: int = 20, timeout: float = TIMEOUT
           ) -> list[dict[str, Any]]:
    """Up to ``limit`` records from the start of the source's partitions, in partition/offset
    order: ``{"kafka_topic", "kafka_partition", "kafka_offset", "kafka_key", "value",
    "kafka_headers"}`` with the value as text (the preview parses it as the job would)."""
    import time

    from confluent_kafka import TopicPartition

    c = _consumer(client_config(options))
    try:
        parts = []
        for topic in _topics(options, c):
            md = c.list_topics(topic, timeout=timeout).topics.get(topic)
            if md is None or md.error is not None:
                raise KafkaSetupError(f"topic {topic!r} does not exist", "source.options")
            for p in sorted(md.partitions):
                low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                if high > low:
                    parts.append((topic, p, low, min(high, low + limit)))
        if not parts:
            return []
        c.assign([TopicPartition(t, p, low) for t, p, low, _ in parts])
        ends = {(t, p): end for t, p, _, end in parts}
        pos = {(t, p): low for t, p, low, _ in parts}
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while any(pos[tp] < ends[tp] for tp in ends) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            tp = (m.topic(), m.partition())
            if tp not in ends or m.offset() >= ends[tp]:
                continue
            pos[tp] = m.offset() + 1
            key, value = m.key(), m.value()
            got.append({
                "kafka_topic": tp[0], "kafka_partition": tp[1], "kafka_offset": m.offset(),
                "kafka_key": None if key is None else key.decode("utf-8", "replace"),
                "value": None if value is None else value.decode("utf-8", "replace"),
                HEADERS: headers_map(m.headers()),
            })
        got.sort(key=lambda r: (r["kafka_topic"], r["kafka_partition"], r["kafka_offset"]))
        return got[:limit]
    except KafkaSetupError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise KafkaSetupError(f"cannot read from the broker: {exc}") from exc
    finally:
        c.close()


def first_consumed(checkpoint: str | Path) -> dict[Partition, int]:
    """The offsets a store's query started from: Spark's Kafka source writes them to
    ``sources/0/0`` of the checkpoint before its first batch (a leading zero byte, ``v1``, then
    ``{"topic": {"partition": offset}}``)."""
    f = Path(str(checkpoint).removeprefix("file:")) / "sources" / "0" / "0"
    if not f.is_file():
        raise KafkaSetupError(f"the old store has no Kafka start offsets at {f}", "retention")
    return parse_start_offsets(f.read_bytes().decode("utf-8"), str(f))


def parse_start_offsets(text: str, where: str) -> dict[Partition, int]:
    """The content of a checkpoint's ``sources/0/0`` (see :func:`first_consumed`)."""
    lines = text.lstrip("\x00").splitlines()
    if not lines or not lines[0].startswith("v"):
        raise KafkaSetupError(f"{where} is not a Kafka start-offsets file", "retention")
    try:
        data = json.loads("\n".join(lines[1:]))
        return {(t, int(p)): int(off) for t, parts in data.items() for p, off in parts.items()}
    except (ValueError, AttributeError) as exc:
        raise KafkaSetupError(f"{where} is not a Kafka start-offsets file: {exc}",
                              "retention") from exc


def preview_lines(samples: list[dict[str, Any]]) -> list[str]:
    """Sampled records as replay input lines: a JSON object value with the metadata columns
    added (what the job's expressions see), any other value as its raw text (replay and the job
    make it a dead letter)."""
    lines: list[str] = []
    for s in samples:
        text = s["value"] if s["value"] is not None else "null"
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            lines.append(text)
            continue
        meta = {k: s[k] for k in ("kafka_key", "kafka_topic", "kafka_partition", "kafka_offset")}
        if s.get(HEADERS):  # no headers reads as an empty map would: every name is null
            meta[HEADERS] = s[HEADERS]
        lines.append(json.dumps({**value, **meta}, ensure_ascii=False))
    return lines
