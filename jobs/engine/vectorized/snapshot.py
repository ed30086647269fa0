"""The vectorized engine's own snapshot format (tagged ``engine: vectorized``) and
:class:`VectorizedState`, the state object its ``state`` property returns."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np

from jobs.engine.errors import EngineError
from jobs.engine.vectorized.geometry import WM_NONE
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.store import SliceStore, make_aggs

if TYPE_CHECKING:
    from jobs.engine.vectorized.engine import VectorizedEngine

SNAPSHOT_VERSION = 1


def snapshot_data(eng: VectorizedEngine) -> dict[str, Any]:
    """JSON data of the engine's whole state in its own format."""
    return {
        "engine": "vectorized",
        "version": SNAPSHOT_VERSION,
        "keys": list(eng.keys.values),
        "key_max_t": eng.key_max_t.tolist(),
        "key_wm": eng.key_wm.tolist(),
        "max_t": eng.max_t,
        "wm": eng.wm,
        "ended": eng.ended,
        "seq": eng.seq,
        "processing_time": eng.processing_time,
        "idle_base": eng.idle_base,
        "idle_base_pt": eng.idle_base_pt,
        "key_idle_base": eng.key_idle_base.tolist(),
        "key_idle_pt": eng.key_idle_pt.tolist(),
        "store": eng.store.dump(),
        "late_totals": {k: list(v) for k, v in eng.late_totals_by_key.items()},
        "late_deltas": {k: list(v) for k, v in eng.late_deltas.items()},
    }


def load_snapshot(eng: VectorizedEngine, d: dict[str, Any]) -> None:
    """Restore ``eng`` from :func:`snapshot_data` output (the store as a sparse store; the
    engine may turn it dense)."""
    if d.get("version") != SNAPSHOT_VERSION:
        raise EngineError(f"state snapshot version {d.get('version')!r} is not {SNAPSHOT_VERSION}")
    try:
        eng.keys = KeyTable(d["keys"])
        eng.key_max_t = np.asarray(d["key_max_t"], dtype=np.int64)
        eng.key_wm = np.asarray(d["key_wm"], dtype=np.int64)
        eng.max_t = d["max_t"]
        eng.wm = int(d["wm"])
        eng.ended = bool(d["ended"])
        eng.seq = int(d["seq"])
        eng.processing_time = int(d["processing_time"])
        eng.idle_base = d.get("idle_base")  # absent in snapshots written before idle advance
        eng.idle_base_pt = d.get("idle_base_pt")
        # per-key idle bases (scope: key); absent in snapshots written before them
        nk = len(eng.key_wm)
        eng.key_idle_base = np.asarray(d.get("key_idle_base", [WM_NONE] * nk), dtype=np.int64)
        eng.key_idle_pt = np.asarray(d.get("key_idle_pt", [0] * nk), dtype=np.int64)
        sparse = SliceStore(eng.geo, make_aggs(eng.defn))
        sparse.load(d["store"])
        eng.store = sparse
        eng.late_totals_by_key = {k: list(v) for k, v in d["late_totals"].items()}
        eng.late_deltas = {k: list(v) for k, v in d["late_deltas"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise EngineError(f"state snapshot is malformed: {exc!r}") from exc


class VectorizedState:
    """The vectorized engine's state as the Engine API exposes it. ``engine.state`` is a live
    view (cheap: nothing is copied until ``snapshot()``); ``VectorizedState.restore(d)`` holds
    snapshot data to pass as ``state=`` to a new engine."""

    def __init__(
        self, data: dict[str, Any] | None = None, engine: VectorizedEngine | None = None
    ) -> None:
        self._data = data
        self._engine = engine

    @property
    def processing_time(self) -> int:
        if self._engine is not None:
            return self._engine.processing_time
        assert self._data is not None
        return int(self._data["processing_time"])

    def snapshot(self) -> dict[str, Any]:
        if self._engine is not None:
            return self._engine.snapshot()
        return copy.deepcopy(self._data) if self._data is not None else {}

    @classmethod
    def restore(cls, d: dict[str, Any]) -> VectorizedState:
        """Hold a snapshot for a new engine: the vectorized engine's own, or the general
        engine's (a definition that ran on the general engine before it qualified here, e.g.
        with ``collect``: the engine given it keeps running on the general engine)."""
        if not isinstance(d, dict):
            raise EngineError("state: a snapshot must be a JSON object")
        return cls(data=copy.deepcopy(d))
