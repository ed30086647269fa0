"""Coverage-guided fuzzing with atheris (libFuzzer), each target in its own process (libFuzzer
owns the process and exits on the first crash): a short run in ``make test``, a long one behind
the heavy marker. The seed corpus is the fragments of known hostile shapes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.fragments import DEFINITION_FRAGMENTS, EXPRESSION_FRAGMENTS, REPLAY_FRAGMENTS
from tests.fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
SEEDS: dict[str, list[bytes]] = {
    "definition": [f.encode("utf-8", "surrogatepass") for f in DEFINITION_FRAGMENTS]
    + [(ROOT / "examples" / name).read_bytes() for name in ("team_scores.yaml",)
       if (ROOT / "examples" / name).exists()],
    "expression": [f.encode("utf-8", "surrogatepass") for f in EXPRESSION_FRAGMENTS],
    "replay": list(REPLAY_FRAGMENTS) + [b"\n".join(REPLAY_FRAGMENTS)],
}


def fuzz(target: str, tmp_path: Path, *flags: str) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(SEEDS[target]):
        (corpus / f"seed-{i}").write_bytes(seed)
    result = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.atheris_main", target, *flags, "-max_len=8192",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        cwd=ROOT, capture_output=True, text=True, errors="replace", timeout=1800,
    )
    crashes = sorted(tmp_path.glob("crash-*")) + sorted(tmp_path.glob("timeout-*"))
    found = [c.read_bytes()[:300] for c in crashes]
    assert result.returncode == 0, (
        f"atheris found a crash in {target}: inputs {found}\n{result.stderr[-4000:]}")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_short_coverage_guided_run(target: str, tmp_path: Path) -> None:
    fuzz(target, tmp_path, "-runs=300")


@pytest.mark.heavy
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_long_coverage_guided_run(target: str, tmp_path: Path) -> None:
    fuzz(target, tmp_path, "-max_total_time=20", "-timeout=30")
