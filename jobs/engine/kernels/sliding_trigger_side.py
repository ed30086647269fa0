"""``collect`` and ``count_distinct`` of the sliding trigger engine (:mod:`.sliding_triggers`).

A live window's members are, as for ``emit: final`` (:mod:`.sliding_side`), exactly the key's
held records inside its bounds: a window is created from them and every later record inside
it joins it while it lives, and no held record a live window contains is pruned. What a pane
shows is the part of them the general engine's accumulator holds: all of them (accumulating,
retracting), or those that arrived after the window's last pane (discarding: ``W_CUT``, the
arrival sequence of the last record that had arrived then). A pane fired between the records
of an arrival unit shows no later record (``P_HI``). So these functions keep no entry per
window: the kernels list each pane's members (:func:`._sliding_trigger_side_kernels.pane_members`)
and the values are read from their rows, one pass per batch of panes.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from jobs.engine.kernels import _sliding_trigger_kernels as K
from jobs.engine.kernels import _sliding_trigger_side_kernels as KS

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


def member_values(eng: SlidingTriggerEngine, objs: list[Any], CNT: I64, REFS: I64, n: int
                  ) -> dict[str, list[Any]]:
    """Per side aggregation, the value of each of ``n`` panes from the kernels' outputs
    (:func:`._sliding_trigger_side_kernels.side_outputs`): ``collect`` the valid inputs in (time,
    sequence) order, ``count_distinct`` the number of distinct values among them."""
    out: dict[str, list[Any]] = {}
    off = 0
    for k, (_, name, fn) in enumerate(eng._side):
        if fn == "count_distinct":
            out[name] = CNT[k].tolist()
            continue
        counts = CNT[k].tolist()
        total = sum(counts)
        vals = _take(objs, REFS[off:off + total].tolist())
        off += total
        col: list[Any] = []
        lo = 0
        for c in counts:  # one step per pane
            col.append(vals[lo:lo + c])
            lo += c
        out[name] = col
    return out


def pane_side(eng: SlidingTriggerEngine, ka: KeyArrays, PR: I64, n_p: int) -> tuple[I64, I64]:
    """:func:`._sliding_trigger_side_kernels.side_outputs` of ``n_p`` pane rows on ``ka``'s held
    records."""
    cnt: I64
    refs: I64
    cnt, refs = KS.side_outputs(ka.RT, ka.n_h, PR, n_p, eng._size, eng._side_cols,
                               eng._side_distinct, len(eng._distinct))
    return cnt, refs


def window_members(eng: SlidingTriggerEngine, ka: KeyArrays) -> tuple[I64, I64]:
    """The members each of the key's windows holds now (its accumulator's content)."""
    MP, MR = KS.pane_members(ka.RT, ka.n_h, _window_rows(eng, ka), ka.n_w, eng._size)
    return MP, MR


def window_values(eng: SlidingTriggerEngine, ka: KeyArrays) -> dict[str, list[Any]]:
    """Per side aggregation, each of the key's windows' value now (``open_windows``)."""
    return member_values(eng, eng.objs, *pane_side(eng, ka, _window_rows(eng, ka), ka.n_w),
                         ka.n_w)


def _window_rows(eng: SlidingTriggerEngine, ka: KeyArrays) -> I64:
    n = ka.n_w
    PR = np.zeros((n, K.P_WIDTH), dtype=np.int64)
    PR[:, K.P_START] = ka.W[:n, K.W_START]
    PR[:, K.P_LO] = ka.W[:n, K.W_CUT] if eng._discarding else K.NO_CUT
    PR[:, K.P_HI] = FAR_SEQ
    return PR


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
                out[p][j].append([row[K.R_T], row[K.R_SEQ], eng.objs[row[b + 3]]])
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


def compact_distinct(eng: SlidingTriggerEngine) -> None:
    """Keep in the ``count_distinct`` table only the values the held records use (it
    otherwise keeps every distinct value the stream showed) and recode the records."""
    from jobs.engine.vectorized.value_codes import ValueTable

    cols = [int(c) for c, d in zip(eng._side_cols.tolist(), eng._side_distinct.tolist(),
                                   strict=True) if d]
    parts = [ka.RT[:ka.n_h, c + 1][ka.RT[:ka.n_h, c] != 0]
             for ka in eng.keys.values() for c in cols]
    used = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    for ka in eng.keys.values():
        for c in cols:
            valid = ka.RT[:ka.n_h, c] != 0
            ka.RT[:ka.n_h, c + 1][valid] = np.searchsorted(used, ka.RT[:ka.n_h, c + 1][valid])
    tokens = eng._distinct.tokens
    eng._distinct = ValueTable([tokens[i] for i in used.tolist()])
    eng._distinct_limit = max(DISTINCT_LIMIT, 4 * len(eng._distinct))


DISTINCT_LIMIT = 65536
"""The ``count_distinct`` table's size past which the engine compacts it."""
