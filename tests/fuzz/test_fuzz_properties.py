"""Property-based fuzzing (hypothesis) of the three hostile surfaces (targets.py): a short run
in ``make test``, a long one behind the heavy marker. Inputs mix random bytes with the
fragments of known hostile shapes, so both blind and structured cases are tried."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz import targets
from tests.fuzz.fragments import DEFINITION_FRAGMENTS, EXPRESSION_FRAGMENTS, REPLAY_FRAGMENTS


def _text_from(fragments: list[str]) -> st.SearchStrategy[bytes]:
    pieces = st.sampled_from(fragments) | st.text(max_size=8)
    repeated = st.tuples(st.sampled_from(fragments), st.integers(1, 3000)).map(lambda t: t[0] * t[1])
    return st.lists(pieces | repeated, max_size=30).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))


def _bytes_from(fragments: list[bytes]) -> st.SearchStrategy[bytes]:
    pieces = st.sampled_from(fragments) | st.binary(max_size=8)
    repeated = st.tuples(st.sampled_from(fragments), st.integers(1, 2000)).map(lambda t: t[0] * t[1])
    return st.lists(pieces | repeated, max_size=40).map(b"".join)


SURFACES: dict[str, tuple[Callable[[bytes], None], st.SearchStrategy[bytes]]] = {
    "definition": (targets.definition, _text_from(DEFINITION_FRAGMENTS) | st.binary()),
    "expression": (targets.expression, _text_from(EXPRESSION_FRAGMENTS) | st.binary(max_size=64)),
    "replay": (targets.replay_input, _bytes_from(REPLAY_FRAGMENTS) | st.binary()),
}


def _run(name: str, examples: int) -> None:
    target, strategy = SURFACES[name]

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(data: bytes) -> None:
        target(data)

    check()


@pytest.mark.parametrize("name", sorted(SURFACES))
def test_short_fuzz_run(name: str) -> None:
    _run(name, 60)


@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(SURFACES))
def test_long_fuzz_run(name: str) -> None:
    _run(name, 3000)
