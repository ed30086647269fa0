"""One uninterrupted local run per crash-test definition and test session.

The driver-crash scenarios (local disk, HDFS, S3) and the standalone-cluster scenarios all
compare their results with an uninterrupted ``local[2]`` run of the same definition
(``spark.test_crash_recovery._spec``) over the same landed input. That run is the same for every
one of them, so it happens once per session and execution path (native / engine): each scenario
reads the shared input (the file source only reads it) and compares with the shared results.
Each is still a real Spark run through the entry point, so every scenario keeps comparing with
a real uninterrupted run.

Usage: ``from crash_reference import crash_reference`` in a conftest (the tests/ folder is on
sys.path), then ``crash_reference.get(engine)`` in a test.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

JOB = "crashy"


@dataclass(frozen=True)
class Reference:
    """The uninterrupted run of ``spec`` over ``inp``: its store and sorted results (panes
    without ``emitted_at``, late records, dead letters, each as canonical JSON)."""

    inp: Path
    spec: dict[str, Any]
    store: str
    panes: list[str]
    late: list[str]
    dead: list[str]


class CrashReferences:
    """Runs each path's reference on first use, under ``root``; later calls reuse it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._done: dict[bool, Reference] = {}

    def get(self, engine: bool) -> Reference:
        if engine not in self._done:
            self._done[engine] = self._run(engine)
        return self._done[engine]

    def _run(self, engine: bool) -> Reference:
        from spark.test_crash_recovery import FILES, _input, _launch, _results, _setup, _spec

        base = self.root / ("engine" if engine else "native")
        inp = base / "in"
        _input(inp)
        spec = _spec(JOB, inp, engine)
        home = base / "ref"
        store = _setup(home, spec)
        log = base / "ref.log"
        proc = _launch(home, JOB, log)
        assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
        panes, late, dead = _results(home / "results" / JOB / store)
        assert panes, "the reference run produced no panes"
        assert len(dead) == FILES
        return Reference(inp, spec, store, panes, late, dead)


@pytest.fixture(scope="session")
def crash_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrashReferences]:
    yield CrashReferences(tmp_path_factory.mktemp("crash-reference"))
