"""The Kafka sink's messages: one per pane, the same bytes every time the pane is sent.

- key: canonical JSON of ``{"key", "store", "window_end", "window_start"}`` (sorted keys,
  compact separators, UTF-8): every pane of one window of one store shares it, so they land on
  one partition in order and a compacted topic keeps the newest;
- value: the pane row as JSON, the same fields as the Parquet results (``job``, ``version``,
  ``store``, ``key``, ``window_start`` ... ``watermark``), with ``key`` and ``values`` as JSON
  values rather than JSON text;
- headers: ``tidemark.version``, ``tidemark.store``, ``tidemark.timing``,
  ``tidemark.pane_index``, ``tidemark.retraction`` (UTF-8 text).

A re-run micro-batch (after a crash) computes the same pane rows (same input, same watermark,
same ``emitted_at`` from the offsets log) and so re-sends byte-identical messages. A consumer
keeps the latest message per (message key, pane_index, retraction): duplicates collapse and
every pane is seen once (:func:`latest_per_pane` is that rule).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

VALUE_FIELDS = (
    "job", "version", "store", "key", "window_start", "window_end", "first_event_time",
    "last_event_time", "timing", "pane_index", "is_first", "is_last", "retraction", "values",
    "emitted_at", "watermark",
)
HEADER_PREFIX = "tidemark."


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _json_field(text: Any) -> Any:
    return None if text is None else json.loads(text)


def message_key(row: Mapping[str, Any]) -> bytes:
    """``row`` is a results row (``key`` and ``values`` as JSON text, as in Parquet)."""
    return _canonical({
        "store": row["store"], "key": _json_field(row["key"]),
        "window_start": row["window_start"], "window_end": row["window_end"],
    })


def message_value(row: Mapping[str, Any]) -> bytes:
    out = {f: row.get(f) for f in VALUE_FIELDS}
    out["key"] = _json_field(out["key"])
    out["values"] = _json_field(out["values"])
    return _canonical(out)


def row_of_value(value: bytes) -> dict[str, Any]:
    """A message value back as the results row it was made from (inverse of
    :func:`message_value`): a consumer can recompute the message key with it."""
    row = dict(json.loads(value))
    row["key"] = json.dumps(row["key"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    row["values"] = json.dumps(row["values"], sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False)
    return row


def message_headers(row: Mapping[str, Any]) -> list[tuple[str, bytes]]:
    return [
        (HEADER_PREFIX + "version", str(row["version"]).encode()),
        (HEADER_PREFIX + "store", str(row["store"]).encode()),
        (HEADER_PREFIX + "timing", str(row["timing"]).encode()),
        (HEADER_PREFIX + "pane_index", str(row["pane_index"]).encode()),
        (HEADER_PREFIX + "retraction", ("true" if row["retraction"] else "false").encode()),
    ]


def side_messages(store: str, batch_id: int, lines: list[dict[str, Any]]
                  ) -> list[tuple[bytes, bytes]]:
    """Late records or dead letters of one batch as (key, value) messages: the key is
    ``{"batch_id", "index", "store"}`` (the line's place in the batch's side files, which a
    re-run batch rewrites identically), the value the line as canonical JSON. A consumer keeps
    the latest message per key."""
    return [
        (_canonical({"store": store, "batch_id": batch_id, "index": i}), _canonical(line))
        for i, line in enumerate(lines)
    ]


def pane_identity(key: bytes, value: bytes) -> tuple[bytes, int, bool]:
    """What a consumer deduplicates on: (message key, pane_index, retraction)."""
    v = json.loads(value)
    return key, int(v["pane_index"]), bool(v["retraction"])


def latest_per_pane(messages: Iterable[tuple[bytes, bytes]]) -> dict[tuple[bytes, int, bool], bytes]:
    """The consumer's rule: the latest value per :func:`pane_identity`, in topic order."""
    out: dict[tuple[bytes, int, bool], bytes] = {}
    for key, value in messages:
        out[pane_identity(key, value)] = value
    return out
