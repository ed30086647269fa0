"""One key text: the catalog stores and finds a key under exactly the engine's text, which is
the text the Spark job writes (tests/spark/test_key_json_agrees.py): non-ASCII kept, control
characters escaped as Jackson does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jobs.catalog import Catalog
from jobs.catalog import schema as catalog_schema
from jobs.catalog.base import key_json as catalog_key_json
from jobs.catalog.records import PaneRecord
from jobs.engine.records import key_json as engine_key_json

KEYS: list[Any] = ["a", "", "é", "日本", "\U0001f600", 'say "hi"', "back\\slash", "line\nbreak",
                   "tab\t", "\x00", "\x1f", "\x7f", "\u2028", "/", "\b\f\r", 0, -7,
                   2**53, True, False, 1.5, -0.25]


def test_catalog_and_engine_write_the_same_text() -> None:
    for key in [*KEYS, None]:
        assert catalog_key_json(key) == engine_key_json(key)
        assert json.loads(engine_key_json(key)) == key
    assert engine_key_json("é") == '"é"'  # not "\u00e9"


def test_a_non_ascii_key_is_stored_and_found_under_its_text(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog_schema.upgrade(url)
    definition = ("name: scores\nkey: team\nevent_time: et\nwindow: {type: tumbling, size: 1m}\n"
                  "aggregations:\n  - {name: n, fn: count}\n")
    with Catalog(url) as cat:
        v = cat.create_job(definition, "alice")
        pane = {"type": "pane", "key": "Zürich", "window_start": 0, "window_end": 60_000,
                "timing": "ON_TIME", "pane_index": 0, "is_first": True, "is_last": True,
                "retraction": False, "values": {"n": 3}, "emitted_at": 60_000, "watermark": 60_000}
        cat.write_panes(v.store_name, 0, [PaneRecord.from_json(pane)], version=1)
        [found] = cat.panes("scores", key="Zürich")
        assert found.pane.key == "Zürich"
        with cat.engine.connect() as conn:
            [(text,)] = conn.exec_driver_sql("SELECT key_json FROM panes").fetchall()
        assert text == '"Zürich"'
