"""Display formatting a user relies on to read times, lags and changes."""

from __future__ import annotations

import pytest

from jobs.definition import INFINITE
from ui import fmt


@pytest.mark.parametrize(("path", "value", "shown"), [
    ("window.size", 120_000, "2m"),
    ("watermark.delay", 90_500, "1m30s500ms"),
    ("allowed_lateness", INFINITE, "infinite"),
    ("trigger.early.every", 10_000, "10s"),
    ("window.align_to", 900_000, "1970-01-01T00:15:00.000Z"),
    ("trigger.early.count", 10, "10"),
    ("key", "team", '"team"'),
    ("watermark.idle_advance", True, "true"),
])
def test_changed_values_read_in_definition_units(path: str, value: object, shown: str) -> None:
    assert fmt.change_value(path, value) == shown


def test_keys_keep_their_json_type() -> None:
    assert [fmt.key(k) for k in ("1", 1, None)] == ['"1"', "1", "null"]


def test_instants_and_lags() -> None:
    assert fmt.instant(None) == "—"
    assert fmt.instant(INFINITE) == "end of input"
    assert fmt.instant(0) == "1970-01-01T00:00:00.000Z"
    assert fmt.lag(125_400) == "2m5s"  # above a minute, milliseconds are noise
    assert fmt.lag(1_500) == "1s500ms"
    assert fmt.size(2048) == "2.0 KiB"


def test_a_key_reads_as_the_job_writes_it() -> None:
    from jobs.engine.records import key_json

    for k in ("Zürich", "\x1f", None, 1, 1.0, True, "1"):
        assert fmt.key(k) == key_json(k)
    assert fmt.key("Zürich") == '"Zürich"' and fmt.key("\x1f") == '"\\u001F"'
