"""State-store names: which definitions can share running state.

Spark keys a streaming query's state by its checkpoint directory and silently mixes state of an
incompatible shape (a new window size on an old checkpoint gives no error), so the checkpoint directory is
named after everything that shapes state, and a change to any of it gives a new name (a new
store, hence a migration), while a change to anything else keeps the name (restart in place).

State-shaping (spec): key, event_time, window, aggregations (name, fn, of), accumulation,
watermark scope, lateness basis. Not state-shaping: description, source, sink, trigger cadence,
watermark delay, allowed lateness, and (decided here) watermark strategy and idle_advance, which
change when the watermark moves but not what state holds -- with one exception: the execution
path on Spark (``jobs/definition/execution.py``) is state-shaping, because Spark's native
aggregation and the engine keep different state and Spark refuses to run one on the other's
checkpoint; likewise the engine's time mode (woken by the clock or not). A native
definition's hash also covers ``"path": "native"``, an engine definition that needs the clock
``"path": "engine+clock"`` (a plain engine definition's hash is unchanged by this rule), so a
trigger, delay or idle-advance change that crosses one of these boundaries gives a new store
and a migration.

The readable prefix is ``<name>__<type>_window_<size ms>[_<step ms>]_<fns>``; the suffix is the
first 8 hex digits of a sha256 over the normalised state-shaping parts. Normalisation makes
equivalent definitions share a store: SQL is re-rendered by sqlglot with identifiers lower-cased,
as Spark resolves them case-insensitively (``LOWER( Team )`` == ``lower(team)``), and ``align_to`` is reduced modulo the window period (aligning 2 minute
windows to 1970 or to 2026-01-01T00:00Z gives the same windows).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from jobs.definition.canonical import dumps
from jobs.definition.execution import spark_state_kind
from jobs.definition.model import PROCESSING, Definition
from jobs.definition.sql import parse_expression
from jobs.definition.windows import window_kind

MAX_LENGTH = 100
HASH_LENGTH = 8
STORE_NAME_VERSION = 1
_SAFE = re.compile(r"[^a-z0-9_]")


def _sql(text: str | None) -> str | None:
    if text is None or text == PROCESSING:
        return text
    tree = normalize_identifiers(parse_expression(text).copy(), dialect="spark")
    return tree.sql(dialect="spark")


def state_shape(defn: Definition) -> dict[str, Any]:
    """The normalised state-shaping parts (what the store hash is taken over)."""
    shape: dict[str, Any] = {
        "v": STORE_NAME_VERSION,
        "key": _sql(defn.key),
        "event_time": _sql(defn.event_time),
        "window": window_kind(defn.window).store_shape(),
        "aggregations": [[a.name, a.fn, _sql(a.of)] for a in defn.aggregations],
        "accumulation": defn.accumulation,
        "watermark_scope": defn.watermark.scope,
        "lateness_basis": defn.lateness_basis,
    }
    kind = spark_state_kind(defn)
    if kind != "engine":  # plain engine definitions keep the names they had before this rule
        shape["path"] = kind
    return shape


def store_hash(defn: Definition) -> str:
    return hashlib.sha256(dumps(state_shape(defn)).encode("utf-8")).hexdigest()[:HASH_LENGTH]


def store_name(defn: Definition) -> str:
    """e.g. ``team_scores__tumbling_window_120000_sum_count__3f9a1c2e`` (<= 100 characters,
    only ``[a-z0-9_]``, so it is safe as a directory name everywhere)."""
    middle = "_".join([*window_kind(defn.window).store_label(), *(a.fn for a in defn.aggregations)])
    suffix = f"__{store_hash(defn)}"
    room = MAX_LENGTH - len(defn.name) - 2 - len(suffix)
    middle = _SAFE.sub("_", middle)[: max(room, 0)].rstrip("_")
    prefix = f"{defn.name}__{middle}" if middle else defn.name
    return _SAFE.sub("_", prefix) + suffix
