"""``collect`` and ``count_distinct`` of the triggered engine: a side table of entries beside
the window table.

Why a side table: their accumulators are lists / sets of any JSON values, of any length per
window, which the kernels' fixed-size accumulator columns cannot hold. Each aggregation keeps
one entry per accepted non-null value: (arrival number, event time, payload), the payload the
value itself (``collect``) or its :class:`ValueTable` code (``count_distinct``). Windows have
their own ids, found from (key code, window start) through a hash (the window table's rows
move when it compacts; these ids do not), and each window's entries are linked in arrival
order (:mod:`triggered_side_kernels`), so a pane reads its own window's entries only.

Which (record, window) pairs the kernel accepts is a function of the record's event time and
the watermark it meets only (a live window always has ``close + allowed_lateness`` beyond the
watermark, and one cannot be created past it): the unit's starting watermark, or under per-key
watermarks its key's as raised by that key's earlier records of the unit. So entries are
appended per arrival unit with array operations before the kernel runs. Under per-key
watermarks a window is forgotten once its key's watermark passes ``close +
allowed_lateness``, as the window table expires it. A pane shows the entries of its window
with arrival number in ``(lo, hi]``: ``hi`` the last record folded before it fired, ``lo``
the previous pane's ``hi`` when discarding (the kernel reset the window's accumulators then)
and -infinity otherwise; a retraction shows its previous pane's range again. When
discarding, a pane unlinks the entries it showed; expired windows are forgotten; the arrays
are compacted once most of what they hold is unlinked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.vectorized import triggered_side_kernels as SK
from jobs.engine.vectorized.value_codes import ValueTable
from jobs.engine.vectorized.values import object_values

I64 = NDArray[np.int64]
MIN = np.iinfo(np.int64).min
_COMPACT_AT = 4096
"""Unlinked entries / forgotten windows below this are never compacted away."""


def _grow(a: NDArray[Any], n: int, fill: Any = 0) -> NDArray[Any]:
    if len(a) >= n:
        return a
    out = np.full(max(n, 2 * len(a), 64), fill, dtype=a.dtype)
    out[: len(a)] = a
    return out


def _pow2(n: int) -> int:
    return 1 << max(6, (n - 1).bit_length())


class SideAgg:
    """The entries of one ``collect`` / ``count_distinct`` aggregation."""

    def __init__(self, name: str, fn: str, discarding: bool) -> None:
        self.name, self.fn = name, fn
        self.running = fn == "count_distinct" and not discarding
        """Keeps running distinct counts (accumulating / retracting ``count_distinct``)."""
        self.n = 0
        self.seq = np.zeros(0, dtype=np.int64)
        self.t = np.zeros(0, dtype=np.int64)
        self.code = np.zeros(0, dtype=np.int64)
        self.vals: NDArray[Any] = np.zeros(0, dtype=object)
        self.nxt = np.zeros(0, dtype=np.int64)
        self.head = np.zeros(0, dtype=np.int64)
        self.tail = np.zeros(0, dtype=np.int64)
        self.unlinked = 0
        self.table = ValueTable()
        self.shown: dict[int, list[Any]] = {}
        """Retracting ``collect``: window id -> the list its last pane showed."""
        # running distinct counts: per entry the window's count up to it, per window its
        # count and the last entry its last pane showed, the (window, code) pairs seen
        self.cd = np.zeros(0, dtype=np.int64)
        self.w_nd = np.zeros(0, dtype=np.int64)
        self.cur = np.zeros(0, dtype=np.int64)
        self._d_hash(64, np.zeros(0, dtype=np.int64))

    def _d_hash(self, size: int, live: I64) -> None:
        hc = _pow2(size)
        self.dk = np.zeros(hc, dtype=np.int64)
        self.ds = np.zeros(hc, dtype=np.int64)
        self.dv = np.zeros(hc, dtype=np.int64)
        self.dst = np.zeros(hc, dtype=np.int8)
        self.d_used = int(SK.rebuild_distinct(self.head, self.nxt, self.code, live, self.dk,
                                              self.ds, self.dv, self.dst)) if len(live) else 0

    def grow_windows(self, n_w: int) -> None:
        self.head = _grow(self.head, n_w, -1)
        self.tail = _grow(self.tail, n_w, -1)
        if self.running:
            self.w_nd = _grow(self.w_nd, n_w, 0)
            self.cur = _grow(self.cur, n_w, -1)

    def _link(self, wids: I64, n: int, live: I64) -> None:
        if not self.running:
            SK.link(self.head, self.tail, self.nxt, wids, n)
            return
        m = len(wids)
        self.cd = _grow(self.cd, n + m)
        if 2 * (self.d_used + m) > len(self.dk):
            self._d_hash(4 * (self.d_used + m), live)
        SK.link_distinct(self.head, self.tail, self.nxt, wids, n, self.code, self.dk, self.ds,
                         self.dv, self.dst, self.w_nd, self.cd)
        self.d_used += m  # an upper bound

    def append(self, wids: I64, seq: I64, t: I64, values: NDArray[Any], live: I64) -> None:
        """Entries of ``values`` (non-null) for windows ``wids``, in arrival order."""
        m = len(wids)
        if m == 0:
            return
        n, end = self.n, self.n + m
        self.seq = _grow(self.seq, end)
        self.t = _grow(self.t, end)
        self.nxt = _grow(self.nxt, end)
        self.seq[n:end] = seq
        self.t[n:end] = t
        if self.fn == "collect":
            self.vals = _grow(self.vals, end, None)
            self.vals[n:end] = values
        else:
            self.code = _grow(self.code, end)
            self.code[n:end] = self.table.encode(values)
        self._link(wids, n, live)
        self.n = end

    def values(self, wid: I64, lo: I64, hi: I64,
               retraction: NDArray[np.bool_] | None = None) -> NDArray[Any]:
        """Per pane (window ``wid[i]``, arrival range ``(lo[i], hi[i]]``), its value;
        ``retraction`` given: the panes of one ``pane_values`` call in emission order (a
        running count then moves its windows' cursors)."""
        m = len(wid)
        if self.running and retraction is not None:
            return np.asarray(SK.distinct_panes(self.head, self.nxt, self.seq, self.cd,
                                                self.cur, wid, hi, retraction), dtype=np.int64)
        if self.fn == "count_distinct":
            cnt, ent = SK.gather(self.head, self.nxt, self.seq, wid, lo, hi)
            q = np.repeat(np.arange(m, dtype=np.int64), cnt)
            n_codes = max(len(self.table), 1)
            packed = np.unique(q * n_codes + self.code[ent])
            return np.bincount(packed // n_codes, minlength=m).astype(np.int64)
        cnt, ent = SK.collect_panes(self.head, self.nxt, self.seq, self.t, wid, lo, hi)
        vals = self.vals[ent].tolist()
        out = np.empty(m, dtype=object)
        a = 0
        for i, c in enumerate(cnt.tolist()):
            out[i] = vals[a: a + c]
            a += c
        return out

    def acc_of(self, ent: I64) -> Any:
        """The general engine's accumulator over entries ``ent`` (in any order)."""
        if self.fn == "collect":
            items = sorted(zip(self.t[ent].tolist(), self.seq[ent].tolist(),
                               self.vals[ent].tolist(), strict=True),
                           key=lambda x: (x[0], x[1]))
            return [list(x) for x in items]
        return {self.table.tokens[c]: 1 for c in self.code[ent].tolist()}

    def parse_acc(self, acc: Any) -> tuple[I64, I64, NDArray[Any]] | None:
        """(arrival numbers, event times, values) of the general engine's accumulator, in
        arrival order; None when it is not one."""
        if self.fn == "collect":
            if not isinstance(acc, list) or any(
                    not isinstance(x, list) or len(x) != 3 or type(x[0]) is not int
                    or type(x[1]) is not int for x in acc):
                return None
            items = sorted(acc, key=lambda x: x[1])
            n = len(items)
            return (np.array([x[1] for x in items], dtype=np.int64),
                    np.array([x[0] for x in items], dtype=np.int64),
                    object_values([x[2] for x in items], n))
        if not isinstance(acc, dict):
            return None
        n = len(acc)
        # tokens stand for their values: ValueTable codes a token once it is known
        codes = self.table._codes_of_tokens([str(x) for x in acc])
        return (np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64),
                np.asarray(codes, dtype=object))

    def append_codes(self, wids: I64, seq: I64, t: I64, codes: I64, live: I64) -> None:
        """Entries already coded (restored ``count_distinct`` sets)."""
        m = len(wids)
        n, end = self.n, self.n + m
        self.seq = _grow(self.seq, end)
        self.t = _grow(self.t, end)
        self.nxt = _grow(self.nxt, end)
        self.code = _grow(self.code, end)
        self.seq[n:end] = seq
        self.t[n:end] = t
        self.code[n:end] = codes
        self._link(wids, n, live)
        self.n = end

    def compact(self, live: I64) -> None:
        """Keep the linked entries of windows ``live`` (renumbered ``0..``), window after
        window."""
        src, cnt = SK.window_order(self.head, self.nxt, live, self.n - self.unlinked)
        m = len(src)
        self.seq, self.t = self.seq[src], self.t[src]
        if self.fn == "collect":
            self.vals = self.vals[src]
        else:
            self.code = self.code[src]
        if self.running:
            new_of = np.full(self.n, -1, dtype=np.int64)
            new_of[src] = np.arange(m, dtype=np.int64)
            cur = self.cur[live]
            self.cur = np.where(cur >= 0, new_of[np.maximum(cur, 0)], -1).astype(np.int64)
            self.w_nd = self.w_nd[live]
            self.cd = self.cd[src]
        self.nxt = np.arange(1, m + 1, dtype=np.int64)
        ends = np.cumsum(cnt)
        begins = ends - cnt
        has = cnt > 0
        self.nxt[ends[has] - 1] = -1
        self.head = np.where(has, begins, -1).astype(np.int64)
        self.tail = np.where(has, ends - 1, -1).astype(np.int64)
        self.n, self.unlinked = m, 0
        self.shown = {}  # window ids change
        if self.running:
            self._d_hash(4 * max(m, 16), np.arange(len(live), dtype=np.int64))


class SideTables:
    """Every side aggregation of one engine, the window index and each window's
    previous-pane bound."""

    def __init__(self, aggs: Sequence[tuple[int, str, str]], discarding: bool) -> None:
        self.cols = [j for j, _, _ in aggs]
        self.aggs = [SideAgg(name, fn, discarding) for _, name, fn in aggs]
        self.discarding = discarding
        self.n_w = 0
        self.n_free = 0
        self.w_k = np.zeros(0, dtype=np.int64)
        self.w_s = np.zeros(0, dtype=np.int64)
        self.w_last = np.zeros(0, dtype=np.int64)
        """Per window: the arrival number its last pane showed up to."""
        self.w_live = np.zeros(0, dtype=np.bool_)
        self.w_loaded = np.zeros(0, dtype=np.bool_)
        """Per window: restored from a state and no pane since (its retraction shows the
        state's ``last_pane`` values, kept in ``loaded_lp``)."""
        self.loaded_lp: dict[tuple[int, int], dict[str, Any]] = {}
        self._retracts = False
        """A pane retracted: ``collect`` keeps each window's shown list from then on (a
        retraction of a list not kept rebuilds it from the entries)."""
        self._hash(64)

    def _live(self) -> I64:
        return np.flatnonzero(self.w_live[: self.n_w])

    def _hash(self, size: int) -> None:
        hc = _pow2(size)
        self.hk = np.zeros(hc, dtype=np.int64)
        self.hs = np.zeros(hc, dtype=np.int64)
        self.hv = np.zeros(hc, dtype=np.int64)
        self.hst = np.zeros(hc, dtype=np.int8)
        live = np.flatnonzero(self.w_live[: self.n_w])
        SK.rehash(self.hk, self.hs, self.hv, self.hst, self.w_k, self.w_s, live)
        self._h_used = len(live)

    def _resolve(self, k: I64, s: I64) -> I64:
        """Window ids of (k, s) pairs, creating the absent windows."""
        m = len(k)
        want = self.n_w + m
        if len(self.w_k) < want:
            self.w_k = _grow(self.w_k, want)
            self.w_s = _grow(self.w_s, want)
            self.w_last = _grow(self.w_last, want, MIN)
            self.w_live = _grow(self.w_live, want, False)
            self.w_loaded = _grow(self.w_loaded, want, False)
            for agg in self.aggs:
                agg.grow_windows(len(self.w_k))
        if 2 * (self._h_used + m) > len(self.hk):
            self._hash(4 * (self.n_w - self.n_free + m))
        n0 = self.n_w
        wids, self.n_w = SK.resolve(self.hk, self.hs, self.hv, self.hst, self.w_k, self.w_s,
                                    self.w_last, self.w_live, self.w_loaded, self.n_w, k, s)
        self._h_used += self.n_w - n0
        return np.asarray(wids, dtype=np.int64)

    def add_unit(self, codes: I64, t: I64, seq0: int, columns: dict[str, Any],
                 wm0: int | I64, window: tuple[int, int, int, int], al: int,
                 event_basis: bool) -> None:
        """The entries of the (record, window) pairs the kernel will accept from one unit
        (``window``: the kernels' window type, size, step, alignment); ``wm0`` the
        watermark the records meet: the unit's, or per record its key's
        (:func:`~triggered_side_kernels.key_wms_met`)."""
        wtype, size, step, align = window
        n = len(codes)
        rec = np.arange(n, dtype=np.int64)
        if wtype == 2:
            s = np.full(n, MIN, dtype=np.int64)
        elif wtype == 1:
            last_k = (t - align) // step
            first_k = (t - size - align) // step + 1
            n_w = last_k - first_k + 1
            rec = np.repeat(rec, n_w)
            off = np.arange(len(rec), dtype=np.int64) - np.repeat(np.cumsum(n_w) - n_w, n_w)
            s = align + (first_k[rec] + off) * step
        else:
            s = align + ((t - align) // size) * size
        wm = np.full(len(rec), wm0, dtype=np.int64) if np.ndim(wm0) == 0 else np.asarray(wm0)[rec]
        has = wm != MIN
        ok = np.ones(len(rec), dtype=np.bool_)
        if wtype != 2:  # a window past close + allowed lateness is never created: late
            ok[has] = wm[has] < s[has] + size + al
        if event_basis:
            ok[has] &= t[rec[has]] >= wm[has]
        self._append_pairs(codes, seq0, t, columns, rec[ok], s[ok])

    def _append_pairs(self, codes: I64, seq0: int, t: I64, columns: dict[str, Any], rec: I64,
                      s: I64) -> None:
        """Entries of the accepted (record ``rec``, window start ``s``) pairs."""
        n = len(codes)
        objs = [object_values(columns[agg.name], n) for agg in self.aggs]
        valid = [np.asarray(obj[rec] != None, dtype=np.bool_) for obj in objs]  # noqa: E711
        any_valid = np.logical_or.reduce(valid) if len(valid) > 1 else valid[0]
        if not any_valid.any():
            return
        wids = np.full(len(rec), -1, dtype=np.int64)
        wids[any_valid] = self._resolve(codes[rec[any_valid]], s[any_valid])
        for agg, obj, v in zip(self.aggs, objs, valid, strict=True):
            r = rec[v]
            agg.append(wids[v], seq0 + r, t[r], obj[r], self._live())

    def pane_values(self, pk: I64, ps: I64, retraction: NDArray[np.bool_],
                    bound: I64) -> dict[int, NDArray[Any]]:
        """Per side aggregation column, the values of panes (key, start, retraction, last
        arrival folded) in emission order; updates each window's previous-pane bound."""
        wid, lo, hi, loaded, prev = SK.pane_ranges(
            self.hk, self.hs, self.hv, self.hst, self.w_last, self.w_loaded,
            np.ascontiguousarray(pk, dtype=np.int64), np.ascontiguousarray(ps, dtype=np.int64),
            np.ascontiguousarray(retraction, dtype=np.bool_),
            np.ascontiguousarray(bound, dtype=np.int64), self.discarding)
        out: dict[int, NDArray[Any]] = {}
        self._retracts = self._retracts or bool(retraction.any())
        restored = np.flatnonzero(loaded).tolist()
        for j, agg in zip(self.cols, self.aggs, strict=True):
            if agg.fn == "collect" and self._retracts:
                vals = self._collect_retracting(agg, wid, lo, hi, retraction, prev)
            else:
                vals = agg.values(wid, lo, hi, retraction)
            if restored:
                vals = vals.astype(object)
                for i in restored:
                    vals[i] = self.loaded_lp[(int(pk[i]), int(ps[i]))][agg.name]
                if agg.fn == "count_distinct" and all(type(x) is int for x in vals.tolist()):
                    vals = vals.astype(np.int64)
            out[j] = vals
        if self.discarding:  # shown entries are no longer any window's
            for agg in self.aggs:
                agg.unlinked += int(SK.drop_shown(agg.head, agg.nxt, agg.seq, self.w_last, wid))
            self._maybe_compact()
        return out

    def _collect_retracting(self, agg: SideAgg, wid: I64, lo: I64, hi: I64,
                            retraction: NDArray[np.bool_], prev: I64) -> NDArray[Any]:
        """``collect`` panes when some retract: a retraction shows the very list its pane
        showed (as the general engine, whose retraction carries its last pane's values), so
        only the other panes build lists. ``agg.shown`` keeps each window's last list."""
        r = np.flatnonzero(retraction)
        inner = r[prev[r] >= 0]
        outer = r[(prev[r] < 0) & (wid[r] >= 0)]
        build = wid.copy()
        build[inner] = -1
        cached: list[tuple[int, Any]] = []
        for i, w in zip(outer.tolist(), wid[outer].tolist(), strict=True):
            got = agg.shown.get(w)
            if got is not None:
                cached.append((i, got))
                build[i] = -1
        vals = agg.values(build, lo, hi)
        vals[inner] = vals[prev[inner]]
        for i, got in cached:
            vals[i] = got
        own = np.flatnonzero(~retraction & (wid >= 0))
        agg.shown.update(zip(wid[own].tolist(), vals[own].tolist(), strict=True))
        return vals

    def free(self, wk: I64, ws: I64) -> None:
        """Forget expired windows."""
        if len(wk) == 0 or self.n_w == 0:
            return
        wids = SK.free_windows(self.hk, self.hs, self.hv, self.hst, self.w_live,
                               np.ascontiguousarray(wk, dtype=np.int64),
                               np.ascontiguousarray(ws, dtype=np.int64))
        wids = wids[wids >= 0]
        if len(wids) == 0:
            return
        self.n_free += len(wids)
        for agg in self.aggs:
            agg.unlinked += int(SK.count_entries(agg.head, agg.nxt, wids).sum())
            agg.head[wids] = -1
            agg.tail[wids] = -1
            for w in wids.tolist():
                agg.shown.pop(w, None)
        for k, s in zip(self.w_k[wids].tolist(), self.w_s[wids].tolist(), strict=True):
            self.loaded_lp.pop((k, s), None)
        self._maybe_compact()

    def free_expired(self, key_wm: I64, size_al: int) -> None:
        """Forget the fixed windows their key's watermark ``key_wm[key]`` expired (close +
        allowed lateness, ``s + size_al``, reached): under per-key watermarks the window
        table expires a window exactly then."""
        live = self._live()
        if len(live) == 0:
            return
        dead = live[key_wm[self.w_k[live]] >= self.w_s[live] + size_al]
        self.free(self.w_k[dead], self.w_s[dead])

    def _maybe_compact(self) -> None:
        if not (self.n_free > max(_COMPACT_AT, self.n_w // 2)
                or any(a.unlinked > max(_COMPACT_AT, a.n // 2) for a in self.aggs)):
            return
        live = np.flatnonzero(self.w_live[: self.n_w])
        for agg in self.aggs:
            agg.compact(live)
        self.w_k, self.w_s = self.w_k[live], self.w_s[live]
        self.w_last, self.w_loaded = self.w_last[live], self.w_loaded[live]
        self.w_live = np.ones(len(live), dtype=np.bool_)
        self.n_w, self.n_free = len(live), 0
        self._hash(4 * max(len(live), 16))

    # ------------------------------------------------------------ state conversion

    def _window(self, k: int, s: int) -> int:
        return int(SK.find(self.hk, self.hs, self.hv, self.hst, k, s))

    def accs(self) -> dict[tuple[int, int], list[Any]]:
        """(key, start) -> per side aggregation, the general engine's accumulator (windows
        without entries hold the empty accumulator)."""
        live = np.flatnonzero(self.w_live[: self.n_w])
        out: dict[tuple[int, int], list[Any]] = {}
        for a, agg in enumerate(self.aggs):
            total = int(agg.n - agg.unlinked)
            src, cnt = SK.window_order(agg.head, agg.nxt, live, total)
            ends = np.cumsum(cnt).tolist()
            begin = 0
            for w, end in zip(live.tolist(), ends, strict=True):
                if end > begin:
                    key = (int(self.w_k[w]), int(self.w_s[w]))
                    out.setdefault(key, [None] * len(self.aggs))[a] = agg.acc_of(src[begin:end])
                begin = end
        return out

    def empty_acc(self, a: int) -> Any:
        return [] if self.aggs[a].fn == "collect" else {}

    def last_pane_values(self, k: int, s: int) -> dict[str, Any]:
        """The values window (k, s)'s last pane showed (retracting mode)."""
        w = self._window(k, s)
        if w >= 0 and self.w_loaded[w]:
            return dict(self.loaded_lp[(k, s)])
        wid = np.array([w], dtype=np.int64)
        lo = np.array([MIN], dtype=np.int64)
        hi = np.array([self.w_last[w] if w >= 0 else MIN], dtype=np.int64)
        out = {}
        for agg in self.aggs:
            v = agg.values(wid, lo, hi)[0]
            out[agg.name] = int(v) if agg.fn == "count_distinct" else v
        return out

    def load_acc(self, a: int, k: int, s: int, acc: Any) -> bool:
        """Entries of side aggregation ``a`` of window (k, s) from the general engine's
        accumulator; False when it is not one."""
        agg = self.aggs[a]
        parsed = agg.parse_acc(acc)
        if parsed is None:
            return False
        seq, t, vals = parsed
        if len(seq) == 0:
            return True
        wids = np.full(len(seq), self._resolve(np.array([k], dtype=np.int64),
                                               np.array([s], dtype=np.int64))[0],
                       dtype=np.int64)
        if agg.fn == "collect":
            agg.append(wids, seq, t, vals, self._live())
        else:
            agg.append_codes(wids, seq, t, vals.astype(np.int64), self._live())
        return True

    def set_loaded(self, k: int, s: int, last_pane_values: dict[str, Any]) -> None:
        """Window (k, s) was restored with a last pane showing these values."""
        w = int(self._resolve(np.array([k], dtype=np.int64), np.array([s], dtype=np.int64))[0])
        self.w_loaded[w] = True
        self.loaded_lp[(k, s)] = {a.name: last_pane_values.get(a.name) for a in self.aggs}

    # ------------------------------------------------------------ the table form

    def table_data(self) -> dict[str, Any]:
        """The side table as plain data for the engine's table form (``triggered_state.
        table_state``): live windows, then per aggregation their linked entries window after
        window (raw int64 bytes; ``collect`` values as a list, ``count_distinct`` tokens)."""
        live = self._live()
        loaded = live[self.w_loaded[live]]
        out: dict[str, Any] = {
            "k": self.w_k[live].tobytes(), "s": self.w_s[live].tobytes(),
            "last": self.w_last[live].tobytes(), "loaded": self.w_loaded[live].tobytes(),
            "lp": [[int(self.w_k[w]), int(self.w_s[w]),
                    self.loaded_lp[(int(self.w_k[w]), int(self.w_s[w]))]]
                   for w in loaded.tolist()],
            "aggs": [],
        }
        for agg in self.aggs:
            src, cnt = SK.window_order(agg.head, agg.nxt, live, agg.n - agg.unlinked)
            a: dict[str, Any] = {"cnt": cnt.tobytes(), "seq": agg.seq[src].tobytes(),
                                 "t": agg.t[src].tobytes()}
            if agg.fn == "collect":
                a["vals"] = agg.vals[src].tolist()
            else:
                a["tokens"] = list(agg.table.tokens)
                a["code"] = agg.code[src].tobytes()
            if agg.running:  # the cursor as its rank in the window (0: none shown)
                rank = np.zeros(len(live), dtype=np.int64)
                cur = agg.cur[live]
                pos = np.full(agg.n, -1, dtype=np.int64)
                pos[src] = np.arange(len(src), dtype=np.int64)
                begins = np.cumsum(cnt) - cnt
                has = cur >= 0
                rank[has] = pos[cur[has]] - begins[has] + 1
                a["rank"] = rank.tobytes()
            out["aggs"].append(a)
        return out

    def load_table_data(self, data: dict[str, Any]) -> None:
        """Load :meth:`table_data` into this fresh side table."""
        k = np.frombuffer(data["k"], dtype=np.int64)
        s = np.frombuffer(data["s"], dtype=np.int64)
        wids = self._resolve(k, s)
        self.w_last[wids] = np.frombuffer(data["last"], dtype=np.int64)
        self.w_loaded[wids] = np.frombuffer(data["loaded"], dtype=np.bool_)
        for kk, ss, vals in data["lp"]:
            self.loaded_lp[(int(kk), int(ss))] = dict(vals)
        live = self._live()
        for agg, a in zip(self.aggs, data["aggs"], strict=True):
            cnt = np.frombuffer(a["cnt"], dtype=np.int64)
            ew = np.repeat(wids, cnt)
            seq = np.frombuffer(a["seq"], dtype=np.int64)
            t = np.frombuffer(a["t"], dtype=np.int64)
            n0 = agg.n
            if agg.fn == "collect":
                agg.append(ew, seq, t, object_values(a["vals"], len(ew)), live)
            else:
                agg.table = ValueTable(a["tokens"])
                agg.append_codes(ew, seq, t, np.frombuffer(a["code"], dtype=np.int64), live)
            if agg.running:
                rank = np.frombuffer(a["rank"], dtype=np.int64)
                begins = n0 + np.cumsum(cnt) - cnt
                agg.cur[wids] = np.where(rank > 0, begins + rank - 1, -1)
