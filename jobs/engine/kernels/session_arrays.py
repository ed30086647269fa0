"""The session kernel engine's state arrays: a struct of arrays indexed by window *slot*
(first / last event time, element count, creation number, born-late flag, key code and the
accumulators of every aggregation), per-key arrays indexed by the key's code in a
:class:`~jobs.engine.vectorized.keys.KeyTable`, a free-slot stack and a min-heap of window
deadlines; and the conversions between them and Python values (input columns in, ``values``
dicts out). :class:`SessionArrays` is the base of the engine classes (``session.py``)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from jobs.definition.model import Definition
from jobs.engine.errors import EngineError
from jobs.engine.kernels import _session_kernels as K
from jobs.engine.kernels.session_side import SIDE_FNS, SideEntries
from jobs.engine.records import RecordBatch
from jobs.engine.vectorized.keys import KeyTable
from jobs.engine.vectorized.values import Unsupported, null_mask, numeric_column, object_values

I64 = NDArray[np.int64]
WatermarkMode = Literal["internal", "external"]

AGG_KINDS = {"count": K.COUNT, "sum": K.SUM, "mean": K.SUM, "min": K.MIN, "max": K.MAX,
             "first": K.FIRST, "last": K.LAST, "collect": K.COUNT, "count_distinct": K.COUNT}
"""``collect`` / ``count_distinct`` only count in the kernels; their values are
:mod:`.session_side` entries."""
ORDERED = ("first", "last")
"""Aggregates whose value is any input object: the arrays hold its order (event time, arrival
sequence) and a reference into the engine's value list."""
EXACT_INT = 2**53
"""Inputs of sum/mean/min/max are held as int64 and float64: ints up to this compare with
floats exactly."""
TIME_LIMIT = 2**60
"""Event times and gaps the kernels take (their sums with the allowed lateness fit int64)."""
WM_CLAMP = (-(2**62), 2**62 + 2**61)
"""A watermark outside this range compares with every window bound as its end does."""
NO_TIME = np.iinfo(np.int64).min



def _present(raw: Any, n: int) -> NDArray[np.bool_]:
    """Which inputs are not null; a column of lists stays one value per record."""
    if isinstance(raw, np.ndarray) and raw.dtype != object:
        return null_mask(raw, n)
    return np.asarray(object_values(raw, n) != None, dtype=np.bool_)  # noqa: E711


class SessionArrays:
    """The arrays and the value conversions the session engines share (see the module
    docstring); the engine's ``__init__`` sets the configuration below, then ``_reset``."""

    defn: Definition
    _gap: int
    _al: int
    _event_basis: bool
    _names: list[str]
    _fns: list[str]
    _star: list[bool]
    _kinds: I64
    _triggered: bool
    """Panes fire before expiry (``trigger.emit`` is not ``final``): ``pending``,
    ``emitted``, ``rflag`` and the retraction dicts are kept."""
    _early_count: int
    _late_count: int
    """The count of ``early {count}`` / ``late {count}`` (0: no such trigger)."""
    _timed: bool
    """Some trigger part fires on processing time (``early {after|every}``, ``late
    {after}``)."""
    _step: bool
    """Some part fires on a count: the general engine runs a key's windows after each
    record."""
    _at_window_end: bool
    _at_expiry: bool
    _discarding: bool
    _retracting: bool
    _key_scope: bool
    """``watermark.scope: key`` with a watermark the engine computes (``bounded``, internal
    mode): each key's watermark is its own (``key_wm``)."""
    _idle: bool
    """``watermark.idle_advance``: the watermark (global, or each key's) moves with processing
    time from its base."""

    def _reset(self) -> None:
        self.keys = KeyTable()
        self.key_head = np.zeros(0, dtype=np.int64)
        self.key_nwin = np.zeros(0, dtype=np.int64)
        self.key_max_t = np.zeros(0, dtype=np.int64)
        self.late_acc = np.zeros(0, dtype=np.int64)
        self.late_drop = np.zeros(0, dtype=np.int64)
        self.key_wm = np.zeros(0, dtype=np.int64)
        self.key_ib = np.zeros(0, dtype=np.int64)
        self.key_ibpt = np.zeros(0, dtype=np.int64)
        """``watermark.scope: key``: each key's watermark, idle base and the processing time
        of that base (``NO_TIME``: none), as ``KeyState`` holds them."""
        self.idle_base: int | None = None
        self.idle_base_pt: int | None = None
        """The global idle-advance base and its processing time (``EngineState``)."""
        self.late_deltas: dict[str, list[Any]] = {}
        self.wm: int | None = None
        self.ended = False
        self.processing_time = 0
        self.max_t: int | None = None
        self.seq = 0
        self.born_next = 0
        self.int_budget = 0
        """A bound on |any int sum| a window can reach (sums stay in int64 below 2**62)."""
        self._cap = 0
        m = len(self._names)
        self.nxt = np.zeros(0, dtype=np.int64)
        self.wkey = np.zeros(0, dtype=np.int64)
        self.first = np.zeros(0, dtype=np.int64)
        self.last = np.zeros(0, dtype=np.int64)
        self.elements = np.zeros(0, dtype=np.int64)
        self.pending = np.zeros(0, dtype=np.int64)
        self.emitted = np.zeros(0, dtype=np.int64)
        self.rflag = np.zeros(0, dtype=np.bool_)
        self.haslp = np.zeros(0, dtype=np.bool_)
        self.rid = np.zeros(0, dtype=np.int64)
        self.timer = np.zeros(0, dtype=np.int64)
        """Triggered path only: elements since the last pane, panes emitted, whether the window
        holds panes to retract, whether the last of them is its own last pane, the id of
        that list in ``held``, and the due time of its processing-time timer
        (``_session_trigger_kernels.NO_TIMER``: none)."""
        self.timer_floor = np.iinfo(np.int64).max
        """No timer is due before this processing time (ticks before it skip the scan)."""
        self.held: dict[int, list[dict[str, Any]]] = {}
        """Retracting mode: per list id, ``WindowState.retract`` then (``haslp``) its
        ``last_pane``."""
        self.born = np.zeros(0, dtype=np.int64)
        self.blate = np.zeros(0, dtype=np.bool_)
        self.used = np.zeros(0, dtype=np.bool_)
        self.free = np.zeros(0, dtype=np.int64)
        self.n_free = 0
        self.cnt = np.zeros((m, 0), dtype=np.int64)
        self.isum = np.zeros((m, 0), dtype=np.int64)
        self.fsum = np.zeros((m, 0), dtype=np.float64)
        self.isf = np.zeros((m, 0), dtype=np.bool_)
        self.ei = np.zeros((m, 0), dtype=np.int64)
        self.ef = np.zeros((m, 0), dtype=np.float64)
        self.eisf = np.zeros((m, 0), dtype=np.bool_)
        self.has = np.zeros((m, 0), dtype=np.bool_)
        self.ot = np.zeros((m, 0), dtype=np.int64)
        self.oseq = np.zeros((m, 0), dtype=np.int64)
        self.oref = np.zeros((m, 0), dtype=np.int64)
        self.hexp = np.zeros(0, dtype=np.int64)
        self.hslot = np.zeros(0, dtype=np.int64)
        self.hborn = np.zeros(0, dtype=np.int64)
        self.hn = 0
        """A min-heap of (deadline, slot, tag) of the windows, stale entries (windows a merge
        replaced) included until popped. ``emit: final``: the expiry and the creation number;
        triggered: the close (tag ``2 * born``) until the window passes, then the expiry
        (``2 * born + 1``)."""
        self.objs: list[Any] = []
        """Input values of first/last aggregations, referenced by ``oref``."""
        self.side = {j: SideEntries(fn) for j, fn in enumerate(self._fns) if fn in SIDE_FNS}
        """The entries of each ``collect`` / ``count_distinct`` aggregation (by index)."""
        self.side_in: dict[int, Any] = {}
        """The last batch's input objects of those aggregations (set by ``_columns``)."""

    def _ensure_slots(self, need: int) -> None:
        """At least ``need`` free window slots (arrays grow by doubling)."""
        if self.n_free >= need:
            return
        old = self._cap
        cap = max(2 * old, old + need - self.n_free, 1024)

        def grow(a: NDArray[Any]) -> NDArray[Any]:
            shape = (*a.shape[:-1], cap)
            out = np.zeros(shape, dtype=a.dtype)
            out[..., :old] = a
            return out

        for name in ("nxt", "wkey", "first", "last", "elements", "pending", "emitted",
                     "rflag", "haslp", "rid", "timer", "born", "blate", "used", "cnt",
                     "isum", "fsum", "isf", "ei", "ef", "eisf", "has", "ot", "oseq", "oref"):
            setattr(self, name, grow(getattr(self, name)))
        free = np.zeros(cap, dtype=np.int64)
        free[: self.n_free] = self.free[: self.n_free]
        # new slots on the stack, lowest on top (reused first)
        new = np.arange(cap - 1, old - 1, -1, dtype=np.int64)
        free[self.n_free: self.n_free + len(new)] = new
        self.free = free
        self.n_free += len(new)
        self._cap = cap

    def _ensure_heap(self, need: int) -> None:
        if self.hn + need <= len(self.hexp):
            return
        cap = max(2 * len(self.hexp), self.hn + need, 1024)
        for name in ("hexp", "hslot", "hborn"):
            a = getattr(self, name)
            out = np.zeros(cap, dtype=np.int64)
            out[: self.hn] = a[: self.hn]
            setattr(self, name, out)

    def _grow_keys(self) -> None:
        extra = len(self.keys) - len(self.key_head)
        if extra > 0:
            self.key_head = np.concatenate([self.key_head, np.full(extra, -1, dtype=np.int64)])
            z = np.zeros(extra, dtype=np.int64)
            self.key_nwin = np.concatenate([self.key_nwin, z])
            self.key_max_t = np.concatenate([self.key_max_t, np.full(extra, NO_TIME)])
            self.late_acc = np.concatenate([self.late_acc, z])
            self.late_drop = np.concatenate([self.late_drop, z])
            none = np.full(extra, NO_TIME)
            self.key_wm = np.concatenate([self.key_wm, none])
            self.key_ib = np.concatenate([self.key_ib, none])
            self.key_ibpt = np.concatenate([self.key_ibpt, none])


    def _wm_arg(self) -> int:
        if self.wm is None:
            return 0
        return min(max(self.wm, WM_CLAMP[0]), WM_CLAMP[1])

    def _columns(
        self, batch: RecordBatch, n: int
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64], I64, NDArray[np.bool_], I64, int]:
        """The aggregation inputs as (aggregation, record) arrays, and the int-sum budget they
        use; raises :class:`Unsupported` (before any state changes) for values the arrays
        cannot hold exactly."""
        m = len(self._names)
        valid = np.ones((m, n), dtype=np.bool_)
        vf = np.zeros((m, n), dtype=np.float64)
        vi = np.zeros((m, n), dtype=np.int64)
        visf = np.zeros((m, n), dtype=np.bool_)
        vref = np.zeros((m, n), dtype=np.int64)
        objs: list[Any] = []
        side_in: dict[int, Any] = {}
        budget = 0
        for j, (name, fn, star) in enumerate(zip(self._names, self._fns, self._star,
                                                 strict=True)):
            if star:
                continue
            raw = batch.columns.get(name)
            if raw is None:
                raise EngineError(f"ingest: the batch has no column for aggregation {name!r}")
            if fn == "count":
                valid[j] = _present(raw, n)
                continue
            if fn in SIDE_FNS:
                side_in[j] = obj = object_values(raw, n)  # lists stay values
                valid[j] = obj != None  # noqa: E711 (elementwise)
                continue
            if fn in ORDERED:
                valid[j] = _present(raw, n)
                vref[j] = np.arange(n, dtype=np.int64) + len(self.objs) + len(objs)
                objs.extend(raw.tolist() if isinstance(raw, np.ndarray) else raw)
                continue
            col = numeric_column(name, raw, n)
            if col.max_abs_int > EXACT_INT:
                raise Unsupported(f"column {name!r}: integers beyond 2**53")
            valid[j] = col.valid
            vf[j] = col.f
            vi[j] = col.i
            visf[j] = col.is_float
            if fn in ("sum", "mean"):
                budget = max(budget, n * col.max_abs_int)
        if self.int_budget + budget >= 2**62:
            raise Unsupported("integer sums could leave 64 bits")
        self.objs.extend(objs)  # nothing raised: the references are the engine's now
        self.side_in = side_in
        return valid, vf, vi, visf, vref, budget

    def _side_accept(self, codes: I64, times: I64, seq0: int, valid: NDArray[np.bool_],
                     accepted: NDArray[np.bool_]) -> None:
        """The unit's accepted non-null inputs of ``collect`` / ``count_distinct`` into their
        entries (arrival order)."""
        for j, entries in self.side.items():
            m = np.flatnonzero(accepted & valid[j])
            entries.append(codes[m], times[m], seq0 + m, self.side_in[j][m])
        self.side_in = {}

    def _side_forget(self, sessions: tuple[I64, I64, I64], gone: NDArray[np.bool_]) -> None:
        """Forget the collect / count_distinct entries of the ``gone`` ones of these
        (key, first, last) sessions: they expired, and a later session of their key may
        cover the same times."""
        if gone.any():
            for entries in self.side.values():
                entries.drop(*(a[gone] for a in sessions))

    def _compact_objs(self) -> None:
        """Drop first/last input values no open session refers to, when they are most of the
        list (it grows by every batch's values)."""
        live = self.has & self.used[None, :] & (self.oref >= 0)
        for j, fn in enumerate(self._fns):
            if fn not in ORDERED:
                live[j] = False
        n_live = int(live.sum())
        if 4 * n_live >= len(self.objs):
            return
        refs = self.oref[live]
        objs = self.objs
        self.objs = [objs[r] for r in refs.tolist()]
        self.oref[live] = np.arange(n_live, dtype=np.int64)

    def _values(self, slots: I64, expired: bool = False,
                panes: tuple[I64, I64, I64, I64] | None = None,
                dead: I64 | None = None, once: bool = False) -> list[dict[str, Any]]:
        """The ``values`` dict of each session in ``slots`` (aggregates.result's rules);
        ``expired``: the sessions' collect / count_distinct entries are dropped as read;
        ``panes``: ``slots`` are the ghosts of pane rows, whose collect / count_distinct values
        are read from the rows' (key, start, last event time, arrival bound), ``dead``: the
        sessions that expired in between (:meth:`.SideEntries.values_upto`); ``once``: each
        entry is read by one pane at most (discarding mode, final panes), then dropped."""
        cols: list[list[Any]] = []
        for j, fn in enumerate(self._fns):
            cnt = self.cnt[j, slots]
            if fn == "count":
                cols.append(cnt.tolist())
                continue
            if fn in SIDE_FNS and panes is not None:
                cols.append(self.side[j].values_upto(*panes, discarding=self._discarding or once,
                                                     dead=dead))
                continue
            if fn in SIDE_FNS:
                cols.append(self.side[j].values(self.wkey[slots], self.first[slots],
                                                self.last[slots], drop=expired))
                continue
            isf = self.isf[j, slots]
            if fn in ("sum", "mean"):
                if fn == "mean":
                    num = np.where(isf, self.fsum[j, slots],
                                   self.isum[j, slots].astype(np.float64))
                    with np.errstate(divide="ignore", invalid="ignore"):
                        mean = num / cnt
                    cols.append([None if c == 0 else x
                                 for c, x in zip(cnt.tolist(), mean.tolist(), strict=True)])
                elif isf.any():
                    cols.append([f if b else i for i, f, b in zip(
                        self.isum[j, slots].tolist(), self.fsum[j, slots].tolist(),
                        isf.tolist(), strict=True)])
                else:
                    cols.append(self.isum[j, slots].tolist())
                continue
            has = self.has[j, slots].tolist()
            if fn in ORDERED:
                objs = self.objs
                cols.append([objs[r] if h else None
                             for h, r in zip(has, self.oref[j, slots].tolist(), strict=True)])
                continue
            eisf = self.eisf[j, slots].tolist()
            cols.append([
                (f if b else i) if h else None
                for h, b, i, f in zip(has, eisf, self.ei[j, slots].tolist(),
                                      self.ef[j, slots].tolist(), strict=True)
            ])
        names = self._names
        return [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]
