"""Window kinds as types: each kind's parameters, validation and window starts."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.definition import DefinitionError, load_definition
from jobs.definition.model import Window, WindowType
from jobs.definition.windows import (
    KINDS,
    WINDOW_TYPES,
    FixedStarts,
    Global,
    Hopping,
    Session,
    Sliding,
    Tumbling,
    window_kind,
)

from .helpers import base


def test_every_window_type_has_exactly_one_kind() -> None:
    assert set(WINDOW_TYPES) == set(get_args(WindowType))
    assert all(KINDS[t].type == t for t in WINDOW_TYPES)


@pytest.mark.parametrize(("window", "kind"), [
    ({"type": "tumbling", "size": "2m", "align_to": "2026-01-01T00:00:30Z"},
     Tumbling(size_ms=120_000, align_to_ms=1_767_225_630_000)),
    ({"type": "hopping", "size": "10m", "step": "2m"}, Hopping(600_000, 120_000)),
    ({"type": "sliding", "size": "5m"}, Sliding(300_000)),
    ({"type": "session", "gap": "30s"}, Session(30_000)),
    ({"type": "global"}, Global()),
])
def test_a_parsed_window_is_its_kind_and_back(window: dict[str, object], kind: object) -> None:
    defn = load_definition(base(window=window))
    assert window_kind(defn.window) == kind
    assert window_kind(defn.window).window() == defn.window


def test_only_tumbling_and_hopping_run_natively_on_spark() -> None:
    assert [t for t, k in KINDS.items() if k.spark_native] == ["tumbling", "hopping"]


def test_only_sessions_merge() -> None:
    # the Windows page replaces an overlapped open window only for kinds that merge; sliding
    # windows overlap too but never change their bounds
    assert [t for t, k in KINDS.items() if k.merges] == ["session"]


@pytest.mark.parametrize(("window", "field", "message"), [
    (Window(type="hopping", size=10_000, step=20_000), "window.step",
     "must not exceed window.size (10s)"),
    (Window(type="session"), "window.gap", "is required"),
    (Window(type="tumbling", size=0), "window.size", "must be greater than 0"),
    (Window(type="sliding", size=-5), "window.size", "must be greater than 0"),
])
def test_a_window_built_in_code_is_checked_by_its_kind(
    window: Window, field: str, message: str
) -> None:
    with pytest.raises(DefinitionError) as info:
        window_kind(window)
    assert info.value.field == field
    assert message in str(info.value)


def test_parser_errors_name_the_kinds_fields() -> None:
    with pytest.raises(DefinitionError) as info:
        load_definition(base(window={"type": "session", "gap": "30s", "size": "1m"}))
    assert info.value.errors == [("window.size", "is not a parameter of session windows "
                                                 "(only of tumbling and hopping and sliding)")]


@settings(max_examples=300, deadline=None)
@given(
    t=st.integers(-(2**61), 2**61),
    size=st.integers(1, 10**9),
    per=st.integers(1, 12),
    align=st.integers(-(2**48), 2**48),
)
def test_fixed_starts_are_the_definition_in_every_form(
    t: int, size: int, per: int, align: int
) -> None:
    """Scalar, batch and NumPy forms all give: every start align + k*step with
    start <= t < start + size."""
    step = max(1, size // per)
    fs = FixedStarts(size, step, align)
    k_last = (t - align) // step
    n = size // step + 2  # more candidates than windows hold t
    expected = [align + k * step for k in range(k_last - n, k_last + 1)
                if align + k * step <= t < align + k * step + size]
    assert fs.starts(t) == expected
    assert (fs.first_starts([t])[0], fs.last_starts([t])[0]) == (expected[0], expected[-1])
    starts, valid = fs.starts_array(np.array([t], dtype=np.int64))
    assert sorted(int(s) for s in starts[0][valid[0]]) == expected
