"""``collect`` and ``count_distinct`` of the sliding trigger engine (:mod:`.sliding_triggers`).

A live window's members are, as for ``emit: final`` (:mod:`.sliding_side`), exactly the key's
held records inside its bounds: a window is created from them and every later record inside
it joins it while it lives, and no held record a live window contains is pruned. What a pane
shows is the part of them the general engine's accumulator holds: all of them (accumulating,
retracting), or those that arrived after the window's last pane (discarding: ``W_CUT``, the
arrival sequence of the last record that had arrived then). A pane fired between the records
of an arrival unit shows no later record (``P_HI``). So these functions keep no entry per
window: the kernels list each pane's members (:func:`._sliding_trigger_kernels.pane_members`)
and the values are read from their rows, one pass per batch of panes.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _sliding_trigger_kernels as K

if TYPE_CHECKING:
    from jobs.engine.kernels.sliding_triggers import KeyArrays, SlidingTriggerEngine

I64 = NDArray[np.int64]
SIDE_FNS = ("collect", "count_distinct")
FAR_SEQ = 2**62


def _take(objs: list[Any], refs: list[int]) -> list[Any]:
    if not refs:
        return []
    if len(refs) == 1:
        return [objs[refs[0]]]
    return list(itemgetter(*refs)(objs))


def member_values(eng: SlidingTriggerEngine, objs: list[Any], MP: I64, MR: I64, n: int
                  ) -> dict[str, list[Any]]:
    """Per side aggregation, the value of each of ``n`` panes from their members (``MP``
    pane, ``MR`` held-record row): ``collect`` the valid inputs in (time, sequence) order,
    ``count_distinct`` the number of distinct codes among them."""
    out: dict[str, list[Any]] = {}
    for j, name, fn in eng._side:
        b = K.R_AGG + K.R_WIDTH * j
        valid = MR[:, b] != 0
        p = MP[valid]
        if fn == "count_distinct":
            pairs = np.unique(p * max(len(eng._distinct), 1) + MR[valid, b + 1])
            n_codes = max(len(eng._distinct), 1)
            out[name] = np.bincount(pairs // n_codes, minlength=n).tolist()
            continue
        vals = _take(objs, MR[valid, b + 3].tolist())
        bounds = np.cumsum(np.bincount(p, minlength=n)).tolist()
        col: list[Any] = []
        lo = 0
        for hi in bounds:  # one step per pane
            col.append(vals[lo:hi])
            lo = hi
        out[name] = col
    return out


def window_members(eng: SlidingTriggerEngine, ka: KeyArrays) -> tuple[I64, I64]:
    """The members each of the key's windows holds now (its accumulator's content)."""
    n = ka.n_w
    PR = np.zeros((n, K.P_WIDTH), dtype=np.int64)
    PR[:, K.P_START] = ka.W[:n, K.W_START]
    PR[:, K.P_LO] = ka.W[:n, K.W_CUT] if eng._discarding else K.NO_CUT
    PR[:, K.P_HI] = FAR_SEQ
    MP, MR = K.pane_members(ka.RT, ka.n_h, PR, n, eng._size)
    return MP, MR


def window_accs(eng: SlidingTriggerEngine, ka: KeyArrays) -> list[dict[int, Any]]:
    """Per window row, the general engine's accumulator of each side aggregation (by index):
    ``collect`` ``[t, seq, value]`` items, ``count_distinct`` a dict of tokens."""
    MP, MR = window_members(eng, ka)
    out: list[dict[int, Any]] = [{} for _ in range(ka.n_w)]
    tokens = eng._distinct.tokens
    for j, _, fn in eng._side:
        for acc in out:
            acc[j] = {} if fn == "count_distinct" else []
        b = K.R_AGG + K.R_WIDTH * j
        for p, row in zip(MP.tolist(), MR.tolist(), strict=True):
            if not row[b]:
                continue
            if fn == "count_distinct":
                out[p][j][tokens[row[b + 1]]] = 1
            else:
                out[p][j].append([row[K.R_T], row[K.R_SEQ], ka.objs[row[b + 3]]])
    return out


def restore_cuts(ka: KeyArrays, size: int) -> None:
    """``W_CUT`` of restored windows: a window's accumulator holds its last ``pending``
    members by arrival (each joining record counts one pending element, each pane resets the
    count), so the cut is the sequence of the member before them."""
    rt = ka.RT[:ka.n_h, K.R_T]
    for w in range(ka.n_w):
        s = int(ka.W[w, K.W_START])
        lo = int(np.searchsorted(rt, s, side="left"))
        hi = int(np.searchsorted(rt, s + size, side="right"))
        seqs = np.sort(ka.RT[lo:hi, K.R_SEQ])
        k = len(seqs) - int(ka.W[w, K.W_PEND])
        ka.W[w, K.W_CUT] = int(seqs[k - 1]) if k > 0 else K.NO_CUT
