"""Every transcript under tests/transcripts/ is one test: replay its input, compare its output.

Engine transcripts live in tests/transcripts/engine/, seed-derived ones in
tests/transcripts/seeds/; the format is documented in docs/semantics.md. Transcripts whose
definition qualifies for the vectorized fast path or a compiled engine (jobs.engine.kernels)
run through it as well.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .transcripts import (
    check_transcript,
    load_transcript,
    qualifies_for_kernels,
    qualifies_for_vectorized,
)

ROOT = Path(__file__).resolve().parents[1] / "transcripts"
FILES = sorted(ROOT.glob("**/*.yaml"))
VECTORIZED = [p for p in FILES if qualifies_for_vectorized(p)]
KERNELS = [p for p in FILES if qualifies_for_kernels(p)]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_transcript(path: Path) -> None:
    check_transcript(path)


@pytest.mark.parametrize("path", VECTORIZED, ids=[str(p.relative_to(ROOT)) for p in VECTORIZED])
def test_transcript_on_vectorized_engine(path: Path) -> None:
    """The fast path must print the same lines for every definition it accepts."""
    check_transcript(path, engine="vectorized")


@pytest.mark.parametrize("path", KERNELS, ids=[str(p.relative_to(ROOT)) for p in KERNELS])
def test_transcript_on_kernel_engine(path: Path) -> None:
    """The compiled session or sliding engine (what ``auto`` picks for these) prints the same
    lines."""
    check_transcript(path, engine="auto")


PLAIN = [p for p in FILES if load_transcript(p).arrival == "record"]


@pytest.mark.parametrize("path", PLAIN, ids=[str(p.relative_to(ROOT)) for p in PLAIN])
def test_plain_log_transcript_fed_strictly_one_record_at_a_time(path: Path) -> None:
    """Replay merges plain-log records into one unit where no record moves the watermark
    another one meets; feeding every record alone (``batch:1``) must print the same lines."""
    check_transcript(path, arrival="batch:1")


def test_transcripts_exist() -> None:
    assert len(FILES) >= 1, f"no transcripts found under {ROOT}"
