"""Spark fixtures: one local[2] session for the whole test session (starting a JVM costs ~10 s),
shuffle partitions 2, UI off; helpers that land input files and read results back."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.config import Settings


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from jobs.spark.session import build_session

    settings = Settings.from_env({**os.environ, "TIDEMARK_SPARK_MASTER": "local[2]"})
    session = build_session(settings, app_name="tidemark-tests", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env(
        {
            "TIDEMARK_HOME": str(tmp_path / "home"),
            "TIDEMARK_SPARK_MASTER": "local[2]",
        }
    )


def land(directory: Path, files: list[list[dict[str, Any] | str]], start: int = 0) -> None:
    """Write one JSON-lines file per element, with strictly increasing modification times
    (Spark's file source orders by mtime), so file i is micro-batch i; ``start`` numbers the
    files after ones landed earlier."""
    directory.mkdir(parents=True, exist_ok=True)
    base = 1_700_000_000
    for i, rows in enumerate(files, start=start):
        path = directory / f"part-{i:04d}.json"
        lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.utime(path, (base + i, base + i))


def read_jsonl_dir(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in sorted(path.glob("batch_id=*/part-*.jsonl")):
        out.extend(json.loads(line) for line in f.read_text().splitlines() if line.strip())
    return out


def run_until_panes(runner: Any, panes: int, limit: float = 240, every: float = 0.5) -> str:
    """Run a live (processing-time trigger) job until its reports count ``panes`` panes, then
    stop it gracefully as SIGTERM does; after ``limit`` seconds stop anyway (never hang the
    suite). Returns ``runner.run()``'s exit reason."""
    import threading

    done = threading.Event()

    def stop_when_enough() -> None:
        while not done.wait(every):
            if sum(r.panes for r in runner.reports) >= panes:
                runner.stop_requested.set()
                return

    threading.Thread(target=stop_when_enough, daemon=True).start()
    timer = threading.Timer(limit, runner.stop_requested.set)
    timer.start()
    try:
        return str(runner.run())
    finally:
        done.set()
        timer.cancel()
