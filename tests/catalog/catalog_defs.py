"""Definitions the catalog tests save (YAML, as a user writes them)."""

from __future__ import annotations

ADMIN = "alice"
EDITOR = "bob"


def team_scores(
    *,
    size: str = "2m",
    description: str = "Team scores",
    delay: str = "0s",
    name: str = "team_scores",
    agg_fn: str = "sum",
) -> str:
    return f"""\
name: {name}
description: {description}
key: team
event_time: et
watermark:
  delay: {delay}
window:
  type: tumbling
  size: {size}
aggregations:
  - {{name: total, fn: {agg_fn}, of: score}}
  - {{name: n, fn: count}}
sink:
  kind: catalog
"""
