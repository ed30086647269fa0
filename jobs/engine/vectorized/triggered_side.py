"""``collect`` and ``count_distinct`` of the triggered engine: a side table of entries beside
the window table.

Why a side table: their accumulators are lists / sets of any JSON values, of any length per
window, which the kernels' fixed-size accumulator columns cannot hold. Each aggregation keeps
one entry per accepted non-null value: (key code, window start, arrival number, event time,
payload), the payload the value itself (``collect``) or its :class:`ValueTable` code
(``count_distinct``). Entries are keyed by (key, start), not by window-table row, so the
table's compaction (between kernel calls, mid-unit) never moves them.

Which (record, window) pairs the kernel accepts is a function of the record's event time and
the unit's starting watermark only (a live window always has ``close + allowed_lateness``
beyond the watermark, and one cannot be created past it), so entries are appended per arrival
unit with array operations before the kernel runs. A pane shows the entries of its window
with arrival number in ``(lo, hi]``: ``hi`` the last record folded before it fired, ``lo``
the previous pane's ``hi`` when discarding (the kernel reset the window's accumulators then)
and -infinity otherwise; a retraction shows its previous pane's range again. Entries of a
window are freed when the window expires, and, when discarding, once a pane has shown them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from jobs.engine.vectorized.value_codes import ValueTable
from jobs.engine.vectorized.values import object_values

I64 = NDArray[np.int64]
MIN = np.iinfo(np.int64).min
LOADED = MIN + 1
"""Previous-pane bound of a window restored from a state: its retraction shows the state's
``last_pane`` values (the bound itself is not in the state)."""


def _index(k: I64, s: I64) -> pd.MultiIndex:
    return pd.MultiIndex.from_arrays([k, s])


class SideAgg:
    """The entries of one ``collect`` / ``count_distinct`` aggregation."""

    def __init__(self, name: str, fn: str) -> None:
        self.name, self.fn = name, fn
        self.k = np.zeros(0, dtype=np.int64)
        self.s = np.zeros(0, dtype=np.int64)
        self.seq = np.zeros(0, dtype=np.int64)
        self.t = np.zeros(0, dtype=np.int64)
        self.v: NDArray[Any] = np.zeros(0, dtype=object if fn == "collect" else np.int64)
        self.table = ValueTable()

    def append(self, k: I64, s: I64, seq: I64, t: I64, values: NDArray[Any]) -> None:
        payload = values if self.fn == "collect" else self.table.encode(values)
        self.k = np.concatenate([self.k, k])
        self.s = np.concatenate([self.s, s])
        self.seq = np.concatenate([self.seq, seq])
        self.t = np.concatenate([self.t, t])
        self.v = np.concatenate([self.v, payload])

    def keep(self, mask: NDArray[np.bool_]) -> None:
        self.k, self.s, self.seq, self.t, self.v = (
            self.k[mask], self.s[mask], self.seq[mask], self.t[mask], self.v[mask])

    def window_of_entries(self, wk: I64, ws: I64) -> I64:
        """Per entry, its window's position in the (unique) windows ``wk, ws``; -1 absent."""
        if len(self.k) == 0 or len(wk) == 0:
            return np.full(len(self.k), -1, dtype=np.int64)
        return np.asarray(_index(wk, ws).get_indexer(_index(self.k, self.s)), dtype=np.int64)

    def values(self, pw: I64, lo: I64, hi: I64, wk: I64, ws: I64) -> NDArray[Any]:
        """Per query ``i`` (window ``pw[i]`` of ``wk, ws``), the value over the entries with
        arrival number in ``(lo[i], hi[i]]``."""
        m = len(pw)
        ew = self.window_of_entries(wk, ws)
        sel = np.flatnonzero(ew >= 0)
        ew = ew[sel]
        order = np.argsort(ew, kind="stable")
        sel, ew = sel[order], ew[order]
        counts = np.bincount(ew, minlength=len(wk))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        lens = counts[pw]
        total = int(lens.sum())
        q = np.repeat(np.arange(m, dtype=np.int64), lens)
        offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        entry = sel[np.repeat(starts[pw], lens) + offs]
        seq = self.seq[entry]
        inside = (seq > lo[q]) & (seq <= hi[q])
        q, entry = q[inside], entry[inside]
        if self.fn == "count_distinct":
            n_codes = max(len(self.table), 1)
            packed = np.asarray(pd.unique(q * n_codes + self.v[entry]), dtype=np.int64)
            return np.bincount(packed // n_codes, minlength=m).astype(np.int64)
        order = np.lexsort((self.seq[entry], self.t[entry], q))
        q, entry = q[order], entry[order]
        vals = self.v[entry].tolist()
        ends = np.cumsum(np.bincount(q, minlength=m)).tolist()
        begins = [0, *ends[:-1]]
        out = np.empty(m, dtype=object)
        for i, (a, b) in enumerate(zip(begins, ends, strict=True)):
            out[i] = vals[a:b]
        return out

    def acc_of(self, idx: I64) -> Any:
        """The general engine's accumulator over entries ``idx`` (in any order)."""
        if self.fn == "collect":
            items = sorted(zip(self.t[idx].tolist(), self.seq[idx].tolist(),
                               self.v[idx].tolist(), strict=True),
                           key=lambda x: (x[0], x[1]))
            return [list(x) for x in items]
        return {self.table.tokens[c]: 1 for c in self.v[idx].tolist()}

    def load_acc(self, k: int, s: int, acc: Any) -> bool:
        """Entries from the general engine's accumulator; False when it is not one."""
        if self.fn == "collect":
            if not isinstance(acc, list) or any(
                    not isinstance(x, list) or len(x) != 3 or type(x[0]) is not int
                    or type(x[1]) is not int for x in acc):
                return False
            n = len(acc)
            t = np.array([x[0] for x in acc], dtype=np.int64)
            seq = np.array([x[1] for x in acc], dtype=np.int64)
            vals = object_values([x[2] for x in acc], n)
        else:
            if not isinstance(acc, dict):
                return False
            n = len(acc)
            t = np.zeros(n, dtype=np.int64)
            seq = np.full(n, -1, dtype=np.int64)  # before every pane bound
            codes = self.table._codes_of_tokens([str(x) for x in acc])
            self.k = np.concatenate([self.k, np.full(n, k, dtype=np.int64)])
            self.s = np.concatenate([self.s, np.full(n, s, dtype=np.int64)])
            self.seq = np.concatenate([self.seq, seq])
            self.t = np.concatenate([self.t, t])
            self.v = np.concatenate([self.v, codes])
            return True
        self.k = np.concatenate([self.k, np.full(n, k, dtype=np.int64)])
        self.s = np.concatenate([self.s, np.full(n, s, dtype=np.int64)])
        self.seq = np.concatenate([self.seq, seq])
        self.t = np.concatenate([self.t, t])
        self.v = np.concatenate([self.v, vals])
        return True


class SideTables:
    """Every side aggregation of one engine, and each window's previous-pane bound."""

    def __init__(self, aggs: Sequence[tuple[int, str, str]], discarding: bool) -> None:
        self.cols = [j for j, _, _ in aggs]
        self.aggs = [SideAgg(name, fn) for _, name, fn in aggs]
        self.discarding = discarding
        self.last: dict[tuple[int, int], int] = {}
        """(key code, start) -> arrival number the window's last pane showed up to."""
        self.loaded_lp: dict[tuple[int, int], dict[str, Any]] = {}
        """Restored windows' last pane values (until their next pane)."""

    def add_unit(self, codes: I64, t: I64, seq0: int, columns: dict[str, Any], wm0: int,
                 window: tuple[int, int, int, int], al: int, event_basis: bool) -> None:
        """The entries of the (record, window) pairs the kernel will accept from one unit
        (``window``: the kernels' window type, size, step, alignment)."""
        wtype, size, step, align = window
        n = len(codes)
        rec = np.arange(n, dtype=np.int64)
        if wtype == 2:
            s = np.full(n, MIN, dtype=np.int64)
            ok = np.ones(n, dtype=np.bool_)
        else:
            if wtype == 1:
                last_k = (t - align) // step
                first_k = (t - size - align) // step + 1
                n_w = last_k - first_k + 1
                rec = np.repeat(rec, n_w)
                off = np.arange(len(rec), dtype=np.int64) - np.repeat(np.cumsum(n_w) - n_w, n_w)
                s = align + (first_k[rec] + off) * step
            else:
                s = align + ((t - align) // size) * size
            # a window past close + allowed lateness is never created: its records are late
            ok = np.asarray(wm0 < s + size + al, dtype=np.bool_) if wm0 != MIN \
                else np.ones(len(rec), dtype=np.bool_)
        if event_basis and wm0 != MIN:
            ok &= t[rec] >= wm0
        rec, s = rec[ok], s[ok]
        for agg in self.aggs:
            obj = object_values(columns[agg.name], n)
            valid = np.asarray(obj[rec] != None, dtype=np.bool_)  # noqa: E711 (elementwise)
            r = rec[valid]
            agg.append(codes[r], s[valid], seq0 + r, t[r], obj[r])

    def pane_values(self, pk: I64, ps: I64, retraction: NDArray[np.bool_],
                    bound: I64) -> dict[int, NDArray[Any]]:
        """Per side aggregation column, the values of panes (key, start, retraction, last
        arrival folded) in emission order; updates each window's previous-pane bound."""
        m = len(pk)
        lo = np.full(m, MIN, dtype=np.int64)
        hi = bound.copy()
        loaded: list[tuple[int, dict[str, Any]]] = []
        last = self.last
        for i, (k, s, r, b) in enumerate(zip(pk.tolist(), ps.tolist(), retraction.tolist(),
                                             bound.tolist(), strict=True)):
            w = (k, s)
            prev = last.get(w, MIN)
            if r:
                if prev == LOADED:
                    loaded.append((i, self.loaded_lp[w]))
                hi[i] = prev
                continue
            if self.discarding and prev != LOADED:
                lo[i] = prev
            last[w] = b
            self.loaded_lp.pop(w, None)
        idx = _index(pk, ps)
        uniq = idx.unique()
        wk = np.asarray(uniq.get_level_values(0), dtype=np.int64)
        ws = np.asarray(uniq.get_level_values(1), dtype=np.int64)
        pw = np.asarray(uniq.get_indexer(idx), dtype=np.int64)
        out: dict[int, NDArray[Any]] = {}
        for j, agg in zip(self.cols, self.aggs, strict=True):
            vals = agg.values(pw, lo, hi, wk, ws)
            if loaded:
                vals = vals.astype(object)
                for i, lp in loaded:
                    vals[i] = lp[agg.name]
                if agg.fn == "count_distinct" and all(type(x) is int for x in vals.tolist()):
                    vals = vals.astype(np.int64)
            out[j] = vals
        if self.discarding:  # shown entries are no longer any window's
            for agg in self.aggs:
                ew = agg.window_of_entries(wk, ws)
                if not (ew >= 0).any():
                    continue
                wb = np.array([last.get(w, MIN) for w in zip(wk.tolist(), ws.tolist(),
                                                              strict=True)], dtype=np.int64)
                agg.keep((ew < 0) | (agg.seq > wb[np.maximum(ew, 0)]))
        return out

    def free(self, wk: I64, ws: I64) -> None:
        """Forget expired windows."""
        if len(wk) == 0:
            return
        for agg in self.aggs:
            agg.keep(agg.window_of_entries(wk, ws) < 0)
        for w in zip(wk.tolist(), ws.tolist(), strict=True):
            self.last.pop(w, None)
            self.loaded_lp.pop(w, None)

    # ------------------------------------------------------------ state conversion

    def accs(self) -> dict[tuple[int, int], list[Any]]:
        """(key, start) -> per side aggregation, the general engine's accumulator (only
        windows with entries; the others hold the empty accumulator)."""
        out: dict[tuple[int, int], list[Any]] = {}
        for a, agg in enumerate(self.aggs):
            groups: dict[tuple[int, int], list[int]] = {}
            for e, w in enumerate(zip(agg.k.tolist(), agg.s.tolist(), strict=True)):
                if self.discarding and agg.seq[e] <= self.last.get(w, MIN) \
                        and self.last.get(w, MIN) != LOADED:
                    continue
                groups.setdefault(w, []).append(e)
            for w, es in groups.items():
                accs = out.setdefault(w, [None] * len(self.aggs))
                accs[a] = agg.acc_of(np.asarray(es, dtype=np.int64))
        return out

    def empty_acc(self, a: int) -> Any:
        return [] if self.aggs[a].fn == "collect" else {}

    def last_pane_values(self, k: int, s: int) -> dict[str, Any]:
        """The values window (k, s)'s last pane showed (retracting mode)."""
        w = (k, s)
        if w in self.loaded_lp:
            return dict(self.loaded_lp[w])
        hi = np.array([self.last.get(w, MIN)], dtype=np.int64)
        lo = np.array([MIN], dtype=np.int64)
        pw = np.zeros(1, dtype=np.int64)
        wk, ws = np.array([k], dtype=np.int64), np.array([s], dtype=np.int64)
        out = {}
        for agg in self.aggs:
            v = agg.values(pw, lo, hi, wk, ws)[0]
            out[agg.name] = int(v) if agg.fn == "count_distinct" else v
        return out
