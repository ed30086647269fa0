"""Tables and charts built from catalog records (pandas + Altair; no Streamlit).

Panes are charted over window start with the *timing* as colour and retractions as a distinct
mark shape, because the questions people ask of a window chart are "which values were
speculative (EARLY), which were the answer (ON_TIME), what changed afterwards (LATE), and what
was taken back (retractions)".

Every time axis and time tooltip reads in UTC with a 24-hour clock (``2026-01-01 13:04``), as
the tables do (:mod:`ui.fmt`); left alone, Vega-Lite would label in the browser's time zone with
a 12-hour clock ("01 PM").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import altair as alt
import pandas as pd

from jobs.timeutil import ms_to_datetime
from ui import fmt

TIMING_COLORS = {"EARLY": "#f2a900", "ON_TIME": "#2e7d32", "LATE": "#c62828"}


# accepted late records blue, dropped ones red, the same on every late-data chart
_LATE_COLOR = alt.Color(
    "late:N", scale=alt.Scale(domain=["accepted", "dropped"], range=["#1565c0", "#c62828"])
)


TIP_FORMAT = "%Y-%m-%d %H:%M:%S"


def _time_x(field: str, title: str) -> alt.X:
    """A UTC, 24-hour time axis (labels ``%H:%M``, with the date where a day begins)."""
    return alt.X(
        f"{field}:T", title=f"{title} (UTC)", scale=alt.Scale(type="utc"),
        axis=alt.Axis(formatType="utc", labelExpr=(
            "utcFormat(datum.value, (utchours(datum.value) == 0 && utcminutes(datum.value) == 0)"
            " ? '%Y-%m-%d' : '%H:%M')")),
    )


def _time_tip(field: str, title: str | None = None) -> alt.Tooltip:
    return alt.Tooltip(f"{field}:T", title=title or field.replace("_", " "), format=TIP_FORMAT,
                       formatType="utc")


def _ts(ms: int | None) -> Any:
    return None if ms is None else pd.Timestamp(ms_to_datetime(ms))


def panes_frame(panes: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per pane (the replay/engine JSON shape), values flattened to ``v.<name>``."""
    rows: list[dict[str, Any]] = []
    for p in panes:
        row: dict[str, Any] = {
            "key": fmt.key(p.get("key")),
            "window_start": _ts(p.get("window_start")),
            "window_end": _ts(p.get("window_end")),
            "timing": p.get("timing"),
            "pane_index": p.get("pane_index"),
            "kind": "retraction" if p.get("retraction") else "pane",
            "is_last": bool(p.get("is_last")),
            "emitted_at": _ts(p.get("emitted_at")),
            "watermark": fmt.instant(p.get("watermark")) if p.get("watermark") is not None else "",
        }
        for name, value in (p.get("values") or {}).items():
            row[f"v.{name}"] = value if not isinstance(value, list | dict) else fmt.compact_json(value)
        rows.append(row)
    return pd.DataFrame(rows)


def numeric_values(frame: pd.DataFrame) -> list[str]:
    """Aggregation names whose values can be charted."""
    names = []
    for col in frame.columns:
        if col.startswith("v.") and pd.api.types.is_numeric_dtype(frame[col].dropna()):
            names.append(col[2:])
    return names


def panes_chart(frame: pd.DataFrame, value: str) -> alt.Chart:
    """Values over window start: colour = timing, shape = pane vs retraction."""
    data = frame.copy()
    x_field = "window_start"
    if data["window_start"].isna().all():  # the global window: no start, chart over emission
        x_field = "emitted_at"
    data = data.dropna(subset=[x_field])
    return (
        alt.Chart(data)
        .mark_point(size=80, filled=True)
        .encode(
            x=_time_x(x_field, x_field.replace("_", " ")),
            y=alt.Y(f"v\\.{value}:Q", title=value),
            color=alt.Color(
                "timing:N",
                scale=alt.Scale(domain=list(TIMING_COLORS), range=list(TIMING_COLORS.values())),
            ),
            shape=alt.Shape(
                "kind:N", scale=alt.Scale(domain=["pane", "retraction"], range=["circle", "cross"])
            ),
            tooltip=[
                *[c for c in ("key",) if c in data.columns],
                *[_time_tip(c) for c in ("window_start", "window_end") if c in data.columns],
                *[c for c in ("timing", "pane_index", "kind") if c in data.columns],
                alt.Tooltip(f"v\\.{value}:Q", title=value),
                *[_time_tip(c) for c in ("emitted_at",) if c in data.columns],
            ],
        )
        .properties(height=320)
    )


def late_windows_chart(rows: Sequence[dict[str, Any]]) -> alt.Chart:
    """Accepted vs dropped late records per window (stacked bars over window start)."""
    data = pd.DataFrame(rows)
    long = data.melt(
        id_vars=["window_start", "key"], value_vars=["accepted", "dropped"],
        var_name="late", value_name="records",
    )
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=_time_x("window_start", "window start"),
            y=alt.Y("sum(records):Q", title="late records"),
            color=_LATE_COLOR,
            tooltip=[_time_tip("window_start"), "key:N", "late:N", "records:Q"],
        )
        .properties(height=260)
    )


def late_time_chart(rows: Sequence[dict[str, Any]]) -> alt.Chart:
    """Accepted vs dropped late records per micro-batch, over time."""
    data = pd.DataFrame(rows)
    long = data.melt(
        id_vars=["recorded_at", "batch_id"], value_vars=["accepted", "dropped"],
        var_name="late", value_name="records",
    )
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=_time_x("recorded_at", "recorded at"),
            y=alt.Y("records:Q", title="late records per batch"),
            color=_LATE_COLOR,
            tooltip=["batch_id:Q", _time_tip("recorded_at"), "late:N", "records:Q"],
        )
        .properties(height=260)
    )


def progress_chart(rows: Sequence[dict[str, Any]]) -> alt.Chart:
    data = pd.DataFrame(rows)
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=_time_x("recorded_at", "recorded at"),
            y=alt.Y("rows_per_second:Q", title="rows/s"),
            tooltip=["batch_id:Q", _time_tip("recorded_at"), "rows_per_second:Q", "input_rows:Q"],
        )
        .properties(height=200)
    )
