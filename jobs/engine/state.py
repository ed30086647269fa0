"""The engine's state: plain dataclasses, snapshot to JSON data and back, exactly.

State is kept apart from the running logic (as Bytewax keeps clock/windower *state* apart from
their logic) so that the Spark runtime can store it in its state store between micro-batches,
the catalog can keep recovery snapshots, and the UI can show it. ``snapshot()`` returns
JSON-serialisable data; ``EngineState.restore(snapshot).snapshot() == snapshot`` holds.

Infinite watermarks are not numbers in snapshots: ``None`` is "no watermark yet" (minus
infinity) and ``ended`` is "the input has ended" (plus infinity).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from jobs.engine.errors import EngineError
from jobs.engine.records import Key

SNAPSHOT_VERSION = 1
PACKED_VERSION = 2
"""Version of :meth:`EngineState.pack`'s positional layout (not a snapshot version)."""


@dataclass(slots=True)
class WindowState:
    """One open window of one key.

    ``close`` is the watermark at which the window is late (tumbling/hopping: end; sliding:
    inclusive end + 1; session: last event + gap; global: 2**63-1, above every instant).
    ``accs`` hold everything the window has seen (accumulating, retracting) or only what
    arrived since the last pane (discarding). ``pending`` counts elements since the last pane.
    ``last_pane`` (retracting mode only) and ``retract`` hold panes to withdraw, as
    ``{start, end, timing, pane_index, values, first_t, last_t}``: this window's last pane, and
    the last panes of the session windows it replaced (retracted just before its first pane).
    """

    start: int | None
    end: int | None
    close: int
    accs: list[Any]
    first_t: int | None = None
    last_t: int | None = None
    elements: int = 0
    pending: int = 0
    emitted: int = 0
    last_pane: dict[str, Any] | None = None
    passed: bool = False
    born_late: bool = False
    timer: int | None = None
    retract: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WindowState:
        return cls(**d)


WINDOW_FIELDS = tuple(f.name for f in fields(WindowState))
"""The positional layout of a window in :meth:`EngineState.pack` (the constructor's order)."""
_window_row = attrgetter(*WINDOW_FIELDS)


@dataclass(slots=True)
class KeyState:
    """Everything held for one key: its windows (by start), and for sliding windows the
    records still inside some window that has not expired, as ``[t, seq, [inputs...]]``."""

    key: Key
    windows: dict[int, WindowState] = field(default_factory=dict)
    records: list[list[Any]] = field(default_factory=list)
    watermark: int | None = None
    idle_base: int | None = None
    idle_base_pt: int | None = None
    max_event_time: int | None = None
    late_accepted: int = 0
    late_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "windows": [w.to_dict() for w in self.windows.values()],
            "records": self.records,
            "watermark": self.watermark,
            "idle_base": self.idle_base,
            "idle_base_pt": self.idle_base_pt,
            "max_event_time": self.max_event_time,
            "late_accepted": self.late_accepted,
            "late_dropped": self.late_dropped,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KeyState:
        ks = cls(
            key=d["key"],
            records=[list(r) for r in d["records"]],
            watermark=d["watermark"],
            idle_base=d["idle_base"],
            idle_base_pt=d["idle_base_pt"],
            max_event_time=d["max_event_time"],
            late_accepted=d["late_accepted"],
            late_dropped=d["late_dropped"],
        )
        for wd in d["windows"]:
            w = WindowState.from_dict(wd)
            ks.windows[window_id(w.start)] = w
        return ks


NO_START = -(2**63)
"""Dictionary id of the global window (which has no start)."""


def window_id(start: int | None) -> int:
    return NO_START if start is None else start


@dataclass(slots=True)
class EngineState:
    """All state of one engine: clocks, watermark, keys (by canonical key JSON), late counts.

    ``late_deltas`` maps ``"<key json>|<start>|<end>"`` to ``[key, start, end, accepted,
    dropped]`` since the last ``Engine.drain_late_counts()``; per-key totals live in
    :class:`KeyState`. Every number in a snapshot fits a signed 64-bit long.
    """

    processing_time: int = 0
    watermark: int | None = None
    ended: bool = False
    idle_base: int | None = None
    idle_base_pt: int | None = None
    max_event_time: int | None = None
    seq: int = 0
    keys: dict[str, KeyState] = field(default_factory=dict)
    late_deltas: dict[str, list[Any]] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        """A deep copy as JSON data: later engine work does not change it."""
        return copy.deepcopy(self._as_dict())

    def _as_dict(self) -> dict[str, Any]:
        return {
            "version": SNAPSHOT_VERSION,
            "processing_time": self.processing_time,
            "watermark": self.watermark,
            "ended": self.ended,
            "idle_base": self.idle_base,
            "idle_base_pt": self.idle_base_pt,
            "max_event_time": self.max_event_time,
            "seq": self.seq,
            "keys": {kj: ks.to_dict() for kj, ks in self.keys.items()},
            "late_deltas": {k: list(v) for k, v in self.late_deltas.items()},
        }

    @classmethod
    def restore(cls, d: dict[str, Any], *, copy_data: bool = True) -> EngineState:
        """The state a snapshot describes. The snapshot is copied unless ``copy_data`` is
        false (for a dict the caller just parsed and will not reuse, e.g. from JSON)."""
        if not isinstance(d, dict) or d.get("version") != SNAPSHOT_VERSION:
            version = d.get("version") if isinstance(d, dict) else None
            raise EngineError(f"state snapshot version {version!r} is not {SNAPSHOT_VERSION}")
        if copy_data:
            d = copy.deepcopy(d)
        try:
            return cls(
                processing_time=d["processing_time"],
                watermark=d["watermark"],
                ended=d["ended"],
                idle_base=d["idle_base"],
                idle_base_pt=d["idle_base_pt"],
                max_event_time=d["max_event_time"],
                seq=d["seq"],
                keys={kj: KeyState.from_dict(kd) for kj, kd in d["keys"].items()},
                late_deltas={k: list(v) for k, v in d["late_deltas"].items()},
            )
        except (KeyError, TypeError) as exc:
            raise EngineError(f"state snapshot is malformed: {exc!r}") from exc

    def pack(self) -> list[Any]:
        """The state as compact JSON data for a host to encode at once: positional rows
        instead of one dict per window and key, and NO copy (the rows share the state's lists,
        so encode them before the engine runs again). ``EngineState.unpack(pack())`` is this
        state exactly (same snapshot, same dict orders).

        Layout: ``[PACKED_VERSION, processing_time, watermark, ended, idle_base, idle_base_pt,
        max_event_time, seq, keys, late_deltas]``; ``keys`` = ``[key json, key, records,
        watermark, idle_base, idle_base_pt, max_event_time, late_accepted, late_dropped,
        windows]`` per key, ``windows`` = one row per window in ``WINDOW_FIELDS`` order.
        """
        row = _window_row
        return [
            PACKED_VERSION, self.processing_time, self.watermark, self.ended, self.idle_base,
            self.idle_base_pt, self.max_event_time, self.seq,
            [
                [kj, ks.key, ks.records, ks.watermark, ks.idle_base, ks.idle_base_pt,
                 ks.max_event_time, ks.late_accepted, ks.late_dropped,
                 [row(w) for w in ks.windows.values()]]
                for kj, ks in self.keys.items()
            ],
            self.late_deltas,
        ]

    @classmethod
    def unpack(cls, p: list[Any]) -> EngineState:
        """The state :meth:`pack` described, taking ownership of ``p``'s lists (pass data
        just decoded, not the live rows of another state)."""
        if not isinstance(p, list) or not p or p[0] != PACKED_VERSION:
            version = p[0] if isinstance(p, list) and p else None
            raise EngineError(f"packed state version {version!r} is not {PACKED_VERSION}")
        try:
            (_, processing_time, watermark, ended, idle_base, idle_base_pt, max_event_time,
             seq, keys, late_deltas) = p
            ws = WindowState
            out: dict[str, KeyState] = {}
            for kj, key, records, kwm, kib, kibpt, kmax, acc, drop, rows in keys:
                windows: dict[int, WindowState] = {}
                for r in rows:
                    w = ws(*r)
                    windows[NO_START if w.start is None else w.start] = w
                out[kj] = KeyState(key, windows, records, kwm, kib, kibpt, kmax, acc, drop)
            return cls(
                processing_time=processing_time, watermark=watermark, ended=ended,
                idle_base=idle_base, idle_base_pt=idle_base_pt, max_event_time=max_event_time,
                seq=seq, keys=out, late_deltas=dict(late_deltas),
            )
        except (ValueError, TypeError) as exc:
            raise EngineError(f"packed state is malformed: {exc!r}") from exc

    @property
    def window_count(self) -> int:
        return sum(len(ks.windows) for ks in self.keys.values())
