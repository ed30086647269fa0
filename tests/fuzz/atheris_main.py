"""Coverage-guided fuzzing (atheris, libFuzzer) of one target of targets.py.

``python -m tests.fuzz.atheris_main TARGET [libFuzzer flags] [CORPUS_DIR ...]``, e.g.
``python -m tests.fuzz.atheris_main replay -runs=2000 -artifact_prefix=/tmp/ corpus/``.
A crash (any exception the target's contract does not allow) makes libFuzzer write the input
to ``<artifact_prefix>crash-<sha1>`` and exit non-zero; add that input to
``tests/fuzz/test_fuzz_regressions.py``. tidemark's own modules are instrumented, so the fuzzer
steers towards inputs that reach new branches of the parsers and replay.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["jobs"]):
    from tests.fuzz import targets


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in targets.TARGETS:
        sys.exit(f"usage: python -m tests.fuzz.atheris_main {{{','.join(targets.TARGETS)}}} "
                 "[libFuzzer flags] [corpus dirs]")
    target = targets.TARGETS[argv[1]]
    atheris.Setup([argv[0], *argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
