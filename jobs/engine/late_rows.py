"""The late-count rows the compiled and vectorized engines report, built from their plain dicts.

Those engines keep late counts as ``{key JSON: [key, start, end, accepted, dropped]}`` (per
window, since the last drain) and ``{key JSON: [key, accepted, dropped]}`` (per key, ever); the
rows come out ordered by key JSON, as the general engine's do.
"""

from __future__ import annotations

from typing import Any


def drain_window_rows(deltas: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Per-window accepted-late and dropped counts, ordered; ``deltas`` is emptied."""
    rows = [
        {"key": v[0], "window_start": v[1], "window_end": v[2], "accepted": v[3],
         "dropped": v[4]}
        for _, v in sorted(deltas.items())
    ]
    deltas.clear()
    return rows


def key_total_rows(totals: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Per-key accepted-late and dropped totals, ordered, keys with none left out."""
    return [
        {"key": v[0], "accepted": v[1], "dropped": v[2]}
        for _, v in sorted(totals.items())
        if v[1] or v[2]
    ]
