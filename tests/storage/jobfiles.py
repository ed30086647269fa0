"""Input and expectations shared by the storage job tests: the native path's first scenario
(tests/spark/test_native_path.py) with its dead letters and its expired late record."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jobs.definition import Definition, load_definition

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z

FILES: list[list[Any]] = [
    [{"team": "a", "score": 1, "et": "2026-01-01T00:00:01Z"},
     {"team": "b", "score": 2, "et": "2026-01-01T00:00:02Z"},
     "garbage{",
     {"team": None, "score": 1, "et": "2026-01-01T00:00:01Z"}],
    [{"team": "a", "score": 5, "et": "2026-01-01T00:00:12Z"}],
    [{"team": "a", "score": 7, "et": "2026-01-01T00:00:03Z"},
     {"team": "a", "score": 1, "et": "2026-01-01T00:00:25Z"}],
]
"""One file per micro-batch: instant 0 has two dead letters, instant 2 an expired late record
(a@3s after the watermark reached 12s)."""

FINAL_PANES = {
    ("a", 0): {"total": 1, "n": 1},
    ("b", 0): {"total": 2, "n": 1},
    ("a", 10_000): {"total": 5, "n": 1},
}
"""(key, window start - T0) -> values of every ON_TIME pane the input yields by its end."""


def land(directory: Path, files: list[list[Any]]) -> None:
    """One JSON-lines file per element with increasing mtimes (file i = micro-batch i)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(files):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                                for r in rows), encoding="utf-8")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def scores(source: Path, **extra: Any) -> Definition:
    return load_definition({
        "name": "scores",
        "source": {"kind": "files", "path": str(source), "format": "json",
                   "schema": "team STRING, score INT, et TIMESTAMP"},
        "key": "team", "event_time": "et",
        "window": {"type": "tumbling", "size": "10s"},
        "aggregations": [{"name": "total", "fn": "sum", "of": "score"},
                         {"name": "n", "fn": "count"}],
        **extra,
    })


def final_panes(panes: list[dict[str, Any]]) -> dict[tuple[Any, int], dict[str, Any]]:
    return {(p["key"], p["window_start"] - T0): p["values"] for p in panes
            if p["timing"] == "ON_TIME" and not p["retraction"]}
