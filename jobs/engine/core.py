"""The engine's configuration and shared helpers (watermark lookups, window creation).

:class:`EngineCore` reads the definition once into plain attributes (so the per-record paths
do no attribute chasing) and owns the derived indexes: a heap of windows by the watermark at
which they next need attention, and a heap of processing-time timers. The logic is split by
concern over :mod:`jobs.engine.assign` (records -> windows), :mod:`jobs.engine.firing`
(windows -> panes) and :mod:`jobs.engine.engine` (the public API).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Literal, overload

from jobs.definition.errors import DefinitionError
from jobs.definition.model import Definition
from jobs.definition.trigger import effective_trigger
from jobs.definition.windows import FixedStarts, Hopping, Sliding, Tumbling, WindowKind, window_kind
from jobs.engine import aggregates
from jobs.engine.errors import EngineError
from jobs.engine.records import Key, LateRecord, key_json
from jobs.engine.state import EngineState, KeyState, WindowState, window_id

NEG_INF = -(2**63)
POS_INF = 2**63
GLOBAL_CLOSE = 2**63 - 1
"""The global window's close: only the end-of-input watermark (POS_INF) reaches it, and it
still fits a signed 64-bit long in snapshots that leave Python."""
WatermarkMode = Literal["internal", "external"]

LateEntry = tuple[int, int, LateRecord]
"""(arrival index in the batch, window start, late record): sorted for output."""


def cached_key_json(cache: dict[tuple[type, Key], str], key: Key) -> str:
    """``key_json(key)`` through ``cache`` (a key recurs in every unit); floats are cached by
    their bits: -0.0 == 0.0 to a dict, but they are two keys ("-0.0", "0.0")."""
    ck = (type(key), key.hex() if type(key) is float else key)
    kj = cache.get(ck)
    if kj is None:
        if len(cache) > 100_000:
            cache.clear()
        kj = cache[ck] = key_json(key)
    return kj


class RecordTimes(Sequence[int]):
    """The event times of a key's held records (``[t, seq, inputs]``), for ``bisect``."""

    __slots__ = ("_recs",)

    def __init__(self, recs: list[list[Any]]) -> None:
        self._recs = recs

    def __len__(self) -> int:
        return len(self._recs)

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> list[int]: ...
    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            return [r[0] for r in self._recs[i]]
        t: int = self._recs[i][0]
        return t


class EngineCore:
    """Configuration, watermark lookups and window bookkeeping shared by the engine parts."""

    def __init__(
        self,
        defn: Definition,
        state: EngineState | None = None,
        watermark: WatermarkMode = "internal",
    ) -> None:
        if watermark not in ("internal", "external"):
            raise EngineError(f"watermark: must be 'internal' or 'external', not {watermark!r}")
        w = defn.window
        try:
            kind = window_kind(w)
        except DefinitionError as exc:
            raise EngineError(str(exc)) from None
        self.defn = defn
        self.state = state if state is not None else EngineState()
        self.mode: WatermarkMode = watermark
        self._plan = effective_trigger(defn)
        self._names = [a.name for a in defn.aggregations]
        self._fns = [a.fn for a in defn.aggregations]
        self._star = [a.fn == "count" and a.of is None for a in defn.aggregations]
        self._adders = list(enumerate(aggregates.adder(fn) for fn in self._fns))
        self._acc_is_result = all(fn in aggregates.ACC_IS_RESULT for fn in self._fns)
        """Every aggregate's emitted value is its accumulator (count, sum, min, max)."""
        self._kind: WindowKind = kind
        self._fixed: FixedStarts | None = kind.starts if isinstance(kind, Tumbling | Hopping) else None
        """The window starts of tumbling and hopping windows (None: global, session, sliding)."""
        self._sliding = isinstance(kind, Sliding)
        self._lasts: list[int] = []
        self._firsts: list[int] | None = None
        """The window starts of the unit being ingested (``Assigner._fixed_spans``)."""
        self._size = w.size or 0
        self._gap = w.gap or 0
        self._al = defn.allowed_lateness
        self._event_basis = defn.lateness_basis == "event"
        self._discarding = defn.accumulation == "discarding"
        self._retracting = defn.accumulation == "retracting"
        self._bounds_out = kind.bounds_from_records
        self._processing_clock = defn.uses_processing_time
        wmd = defn.watermark
        self._delay = wmd.delay
        self._source = wmd.strategy == "source"
        self._bounded = (
            watermark == "internal" and wmd.strategy == "bounded" and not self._processing_clock
        )
        self._idle = (wmd.strategy == "bounded" and wmd.idle_advance
                      and not self._processing_clock)
        """Idle advance. Internal mode: records' candidates are the bases. External mode (the
        Spark host, global scope): each watermark the host hands in is a candidate base, taken
        at the engine's current processing time (see ``Engine.advance_watermark``)."""
        self._key_scope = self._bounded and wmd.scope == "key"
        self._per_record_firing = self._key_scope or self._plan.fires_on_count
        """Something can fire between two records of a key within one arrival unit (the key's
        own watermark moves, or a count trigger is due): the engine then fires after each
        record. Otherwise panes only fire when the unit ends, and a key's records can be
        applied together with the same result."""
        self._kj_cache: dict[tuple[type, Key], str] = {}
        self._records: Sequence[dict[str, Any]] | None = None
        """The original records of the unit being ingested (for late output only)."""
        # Derived indexes (never snapshotted, rebuilt from the state): windows by the global
        # watermark at which they next need attention (close, then close + allowed lateness;
        # under per-key watermarks a key's windows are scanned when its watermark moves), and
        # by their processing-time timer. Entries are (time, key json, window id) and are
        # checked against the window when popped, so stale ones are simply skipped.
        self._deadlines: list[tuple[int, str, int]] = []
        self._timers: list[tuple[int, str, int]] = []
        for kj, ks in self.state.keys.items():
            for wid, win in ks.windows.items():
                if not self._key_scope:
                    self._deadlines.append((self._deadline(win), kj, wid))
                if win.timer is not None:
                    self._timers.append((win.timer, kj, wid))
        heapq.heapify(self._deadlines)
        heapq.heapify(self._timers)

    def _wm(self, ks: KeyState) -> int:
        st = self.state
        if st.ended:
            return POS_INF
        v = ks.watermark if self._key_scope else st.watermark
        return NEG_INF if v is None else v

    def _raise_global_watermark(self, candidate: int, now: int) -> None:
        st = self.state
        if self._idle:
            if st.watermark is None or candidate > st.watermark:
                st.idle_base, st.idle_base_pt, st.watermark = candidate, now, candidate
        elif st.watermark is None or candidate > st.watermark:
            st.watermark = candidate

    def _raise_key_watermark(self, ks: KeyState, candidate: int, now: int) -> None:
        if self._idle:
            if ks.watermark is None or candidate > ks.watermark:
                ks.idle_base, ks.idle_base_pt, ks.watermark = candidate, now, candidate
        elif ks.watermark is None or candidate > ks.watermark:
            ks.watermark = candidate

    def _expired(self, close: int, wm: int) -> bool:
        return wm >= POS_INF or wm >= close + self._al

    def _kj(self, key: Key) -> str:
        return cached_key_json(self._kj_cache, key)

    def _new_window(self, kj: str, start: int | None, end: int | None, close: int,
                    born_late: bool) -> WindowState:
        """A new, empty window (the caller stores it under ``window_id(start)``)."""
        w = WindowState(
            start=start,
            end=end,
            close=close,
            accs=[aggregates.new(fn) for fn in self._fns],
            born_late=born_late,
        )
        if not self._key_scope:  # per-key watermarks: the key's own windows are scanned
            heapq.heappush(self._deadlines, (close, kj, window_id(start)))
        return w

    def _deadline(self, w: WindowState) -> int:
        """The watermark at which ``w`` next needs attention: its close, then its expiry."""
        return w.close + self._al if w.passed else w.close

    def _set_timer(self, kj: str, start: int | None, w: WindowState, due: int) -> None:
        w.timer = due
        heapq.heappush(self._timers, (due, kj, window_id(start)))

    def _record(self, idx: int) -> dict[str, Any] | None:
        """The original record ``idx`` of the current unit, if the host gave them."""
        return self._records[idx] if self._records is not None else None

    def _values(self, w: WindowState) -> dict[str, Any]:
        if self._acc_is_result:
            return dict(zip(self._names, w.accs, strict=True))
        return {
            name: aggregates.result(fn, acc)
            for name, fn, acc in zip(self._names, self._fns, w.accs, strict=True)
        }
