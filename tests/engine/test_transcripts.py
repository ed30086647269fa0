"""Every transcript under tests/transcripts/ is one test: replay its input, compare its output.

Engine transcripts live in tests/transcripts/engine/, seed-derived ones in
tests/transcripts/seeds/; the format is documented in docs/semantics.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .transcripts import check_transcript

ROOT = Path(__file__).resolve().parents[1] / "transcripts"
FILES = sorted(ROOT.glob("**/*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_transcript(path: Path) -> None:
    check_transcript(path)


def test_transcripts_exist() -> None:
    assert len(FILES) >= 1, f"no transcripts found under {ROOT}"
