"""Every chart reads time as the tables do: UTC, 24-hour. Vega-Lite's default would label a
temporal axis in the browser's time zone with a 12-hour clock ("01 PM")."""

from __future__ import annotations

from typing import Any

import pytest

from ui import charts

T0 = 1_767_272_400_000  # 2026-01-01T13:00:00Z: a 12-hour clock would say 01 PM


def _pane(i: int) -> dict[str, Any]:
    return {"key": "a", "window_start": T0 + 60_000 * i, "window_end": T0 + 60_000 * (i + 1),
            "timing": "ON_TIME", "pane_index": 0, "retraction": False, "is_last": True,
            "values": {"n": i}, "emitted_at": T0 + 60_000 * (i + 1), "watermark": None}


def _specs() -> list[dict[str, Any]]:
    frame = charts.panes_frame([_pane(i) for i in range(3)])
    late = [{"window_start": charts._ts(T0), "key": "a", "accepted": 1, "dropped": 2}]
    batches = [{"recorded_at": charts._ts(T0 + 1000 * i), "batch_id": i, "accepted": i,
                "dropped": 0, "rows_per_second": 10.0, "input_rows": 5} for i in range(3)]
    return [c.to_dict() for c in (
        charts.panes_chart(frame, "n"), charts.late_windows_chart(late),
        charts.late_time_chart(batches), charts.progress_chart(batches))]


@pytest.mark.parametrize("index", range(4))
def test_time_axes_are_utc_and_24_hour(index: int) -> None:
    spec = _specs()[index]
    x = spec["encoding"]["x"]
    assert x["type"] == "temporal" and x["title"].endswith("(UTC)")
    assert x["scale"] == {"type": "utc"}
    label = x["axis"]["labelExpr"]
    assert "utcFormat(" in label and "%H:%M" in label
    assert not any(s in label for s in ("%I", "%p", "timeFormat("))
    tips = [t for t in spec["encoding"]["tooltip"] if isinstance(t, dict)
            and t.get("type") == "temporal"]
    assert tips, "a time tooltip"
    for tip in tips:
        assert tip["formatType"] == "utc" and tip["format"] == "%Y-%m-%d %H:%M:%S"


def test_no_chart_leaves_a_time_field_to_the_default_format() -> None:
    for spec in _specs():
        for tip in spec["encoding"]["tooltip"]:
            assert not (isinstance(tip, str) and tip.endswith(":T")), tip
