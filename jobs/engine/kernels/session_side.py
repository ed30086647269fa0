"""``collect`` and ``count_distinct`` of the session kernel engine: entries beside the slot
arrays, one per accepted non-null input: (key code, event time, arrival number, value) for
``collect``, (key code, event time, value code) for ``count_distinct`` (codes from
:class:`~jobs.engine.vectorized.value_codes.ValueTable`, distinct as the general engine
decides).

Why entries carry the key and the event time rather than a window slot: a merge replaces
sessions by a new slot, but a key's open sessions are disjoint ``[first, last]`` intervals
(the gap, at least 1, separates them) and every accepted record lies in its session's, so the
session an entry belongs to is found from (key, time) when it is read. Merges therefore cost
nothing here, and their order cannot matter: the general engine's merged ``collect`` is
sorted by (event time, arrival), and a distinct set is a union. Two cases break "found from
(key, time)" and are handled where panes read entries: in discarding mode an entry a pane
showed is gone from its session's accumulator (panes read in firing order, each taking only
entries not yet shown, which are then forgotten); under per-key watermarks a session can
expire between two records of a unit and a later late record can join a live session over
its times (its entries are read by panes up to its expiry's record only, then forgotten).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from jobs.engine.kernels._session_side_kernels import (
    alive_until,
    distinct_counts,
    pane_entries,
    unshown_pane_entries,
)
from jobs.engine.vectorized.value_codes import ValueTable

I64 = NDArray[np.int64]
SIDE_FNS = ("collect", "count_distinct")


def _objects(values: list[Any]) -> NDArray[Any]:
    return np.fromiter(values, dtype=object, count=len(values))


class SideEntries:
    """The entries of one ``collect`` or ``count_distinct`` aggregation."""

    def __init__(self, fn: str) -> None:
        self.fn = fn
        self.key = np.zeros(0, dtype=np.int64)
        self.t = np.zeros(0, dtype=np.int64)
        self.seq = np.zeros(0, dtype=np.int64)
        self.v = np.zeros(0, dtype=object)
        """``collect``: the values; ``count_distinct``: unused (codes are in ``code``)."""
        self.code = np.zeros(0, dtype=np.int64)
        self.table = ValueTable()

    def append(self, keys: I64, times: I64, seqs: I64, values: NDArray[Any]) -> None:
        """Accepted non-null inputs, in arrival order."""
        if len(keys) == 0:
            return
        self.key = np.concatenate([self.key, keys])
        self.t = np.concatenate([self.t, times])
        self.seq = np.concatenate([self.seq, seqs])
        if self.fn == "collect":
            self.v = np.concatenate([self.v, values])
        else:
            self.code = np.concatenate([self.code, self.table.encode(values)])

    def locate(self, wkey: I64, first: I64, last: I64) -> I64:
        """Per entry, the index of the session (``wkey[i]``, ``[first[i], last[i]]``) that
        holds it, -1 for none: one sort of sessions and entries by (key, time), sessions
        before entries at equal times, then each entry's nearest session before it."""
        nq, ne = len(wkey), len(self.key)
        if nq == 0 or ne == 0:
            return np.full(ne, -1, dtype=np.int64)
        keys = np.concatenate([wkey, self.key])
        times = np.concatenate([first, self.t])
        kind = np.concatenate([np.zeros(nq, dtype=np.int8), np.ones(ne, dtype=np.int8)])
        order = np.lexsort((kind, times, keys))
        is_q = order < nq
        q_at = np.where(is_q, order, -1)
        prev = np.maximum.accumulate(np.where(is_q, np.arange(len(order)), -1))
        q = np.where(prev >= 0, q_at[np.maximum(prev, 0)], -1)
        out = np.full(ne, -1, dtype=np.int64)
        ent = ~is_q
        e_idx = order[ent] - nq
        qi = q[ent]
        ok = qi >= 0
        qs = np.maximum(qi, 0)
        ok &= (wkey[qs] == self.key[e_idx]) & (self.t[e_idx] <= last[qs])
        out[e_idx[ok]] = qi[ok]
        return out

    def _grouped(self, owner: I64, nq: int) -> tuple[I64, I64, list[int]]:
        """Entries of the sessions (by session, then event time and arrival) and the
        boundaries of each session's run."""
        idx = np.flatnonzero(owner >= 0)
        order = np.lexsort((self.seq[idx], self.t[idx], owner[idx]))
        idx = idx[order]
        ends = np.cumsum(np.bincount(owner[idx], minlength=nq)).tolist()
        return idx, owner[idx], [0, *ends]

    def values(self, wkey: I64, first: I64, last: I64, drop: bool = False) -> list[Any]:
        """Each session's emitted value (``aggregates.result``); ``drop``: then forget the
        sessions' entries (they expired)."""
        nq = len(wkey)
        owner = self.locate(wkey, first, last)
        out: list[Any]
        if self.fn == "count_distinct":
            sel = owner >= 0
            n_codes = max(len(self.table), 1)
            packed = pd.unique(owner[sel] * n_codes + self.code[sel])
            win = np.asarray(packed, dtype=np.int64) // n_codes
            out = np.bincount(win, minlength=nq).tolist()
        else:
            idx, _, bounds = self._grouped(owner, nq)
            vals = self.v[idx].tolist()
            out = [vals[bounds[i]: bounds[i + 1]] for i in range(nq)]
        if drop:
            self._keep(owner < 0)
        return out

    def values_upto(self, wkey: I64, first: I64, last: I64, bound: I64,
                    discarding: bool = False, dead: I64 | None = None) -> list[Any]:
        """Each pane's value of a triggered session: the entries of its key in
        ``[first[i], last[i]]`` that arrived at or before arrival number ``bound[i]`` (a
        pane's session may overlap a later one of the same unit, so entries are not located
        by time alone). One sort of the entries, then one kernel pass over the panes.
        ``discarding``: a pane shows only the entries no earlier pane showed, and the shown
        ones are forgotten (the general engine resets a session's accumulators at each pane,
        and a merge joins what the merged sessions had not shown yet). ``dead``: rows (key,
        start, last event time, arrival number) of sessions that expired at that arrival;
        their entries are read by panes up to it only, then forgotten."""
        order, skey, st, sseq, alive = self._sorted_alive(dead)
        if discarding:
            offsets, pos, shown = unshown_pane_entries(skey, st, sseq, alive, wkey, first,
                                                       last, bound)
        else:
            offsets, pos = pane_entries(skey, st, sseq, alive, wkey, first, last, bound)
        idx = order[pos]
        out: list[Any]
        if self.fn == "count_distinct":
            out = distinct_counts(offsets, self.code[idx], len(self.table)).tolist()
        else:
            vals = self.v[idx].tolist()
            ends = offsets.tolist()
            out = [vals[ends[i]: ends[i + 1]] for i in range(len(wkey))]
        gone = alive < np.iinfo(np.int64).max
        if discarding:
            gone |= shown
        if gone.any():
            keep = np.ones(len(self.key), dtype=np.bool_)
            keep[order[gone]] = False
            self._keep(keep)
        return out

    def _sorted_alive(self, dead: I64 | None) -> tuple[I64, I64, I64, I64, I64]:
        """The entries' order by (key, event time, arrival), the sorted keys, times and
        arrival numbers, and per sorted entry the last arrival bound that reads it."""
        order = np.lexsort((self.seq, self.t, self.key))
        skey, st, sseq = self.key[order], self.t[order], self.seq[order]
        if dead is not None and len(dead):
            alive = alive_until(skey, st, sseq, dead[:, 0], dead[:, 1], dead[:, 2], dead[:, 3])
        else:
            alive = np.full(len(skey), np.iinfo(np.int64).max, dtype=np.int64)
        return order, skey, st, sseq, alive

    def forget_dead(self, dead: I64) -> None:
        """Forget the entries of the ``dead`` sessions (as :meth:`values_upto` does) when
        no pane read them."""
        order, _, _, _, alive = self._sorted_alive(dead)
        gone = alive < np.iinfo(np.int64).max
        if gone.any():
            keep = np.ones(len(self.key), dtype=np.bool_)
            keep[order[gone]] = False
            self._keep(keep)

    def engine_accs(self, wkey: I64, first: I64, last: I64) -> list[Any]:
        """Each session's accumulator as :mod:`jobs.engine.aggregates` holds it."""
        nq = len(wkey)
        owner = self.locate(wkey, first, last)
        idx, own, bounds = self._grouped(owner, nq)
        if self.fn == "count_distinct":
            tokens = self.table.tokens
            out: list[Any] = [{} for _ in range(nq)]
            for w, c in zip(own.tolist(), self.code[idx].tolist(), strict=True):
                out[w][tokens[c]] = 1
            return out
        items = [[t, s, v] for t, s, v in zip(self.t[idx].tolist(), self.seq[idx].tolist(),
                                              self.v[idx].tolist(), strict=True)]
        return [items[bounds[i]: bounds[i + 1]] for i in range(nq)]

    def drop(self, wkey: I64, first: I64, last: I64) -> None:
        """Forget the entries of these sessions (they expired)."""
        self._keep(self.locate(wkey, first, last) < 0)

    def _keep(self, keep: Any) -> None:
        if keep.all():
            return
        self.key, self.t, self.seq = self.key[keep], self.t[keep], self.seq[keep]
        if self.fn == "collect":
            self.v = self.v[keep]
        else:
            self.code = self.code[keep]

    def load(self, key: int, first: int, acc: Any) -> None:
        """One session's general-engine accumulator (a distinct set has no times: its entries
        take the session's first event time, which places them in it as well)."""
        if self.fn == "collect":
            n = len(acc)
            self.append(np.full(n, key, dtype=np.int64),
                        np.asarray([x[0] for x in acc], dtype=np.int64),
                        np.asarray([x[1] for x in acc], dtype=np.int64),
                        _objects([x[2] for x in acc]))
            return
        tokens = list(acc)
        n = len(tokens)
        codes = np.empty(n, dtype=np.int64)
        for i, tok in enumerate(tokens):  # one step per distinct value of a loaded session
            c = self.table.code_of.get(tok)
            if c is None:
                c = self.table.code_of[tok] = len(self.table.tokens)
                self.table.tokens.append(tok)
            codes[i] = c
        self.key = np.concatenate([self.key, np.full(n, key, dtype=np.int64)])
        self.t = np.concatenate([self.t, np.full(n, first, dtype=np.int64)])
        self.seq = np.concatenate([self.seq, np.zeros(n, dtype=np.int64)])
        self.code = np.concatenate([self.code, codes])


def representable(fn: str, acc: Any) -> bool:
    """Whether a general-engine accumulator of ``fn`` loads into :class:`SideEntries`."""
    if fn == "count_distinct":
        return isinstance(acc, dict) and all(type(k) is str for k in acc)
    return isinstance(acc, list) and all(
        isinstance(x, list) and len(x) == 3 and type(x[0]) is int and type(x[1]) is int
        and abs(x[0]) <= 2**60 and 0 <= x[1] < 2**62 for x in acc)
