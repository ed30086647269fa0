"""Compiled (numba) kernels of session windows that fire more than once under per-key
watermarks (``watermark.scope: key``, with or without idle advance).

The general engine runs a key's windows after each of its records (``Engine.ingest``): first
at the key's watermark as the record met it (the record's own count trigger, a window born
late passing), then, when the record raised that watermark, at the new one (windows it
passes or expires). Per record this is :func:`._session_trigger_kernels.ingest_unit_triggered`
on that one record, then :func:`._session_trigger_kernels.fire_due` on the key's due windows
in the key's output order (window end, start), so every operation is the global-watermark
engine's. A window has *passed* exactly when its key's watermark is at or beyond its close:
every run of a key leaves it so, which is why no passed flag is stored.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._session_key_kernels import _clamp
from jobs.engine.kernels._session_trigger_kernels import fire_due, ingest_unit_triggered


@njit(cache=True)
def _key_due(k, old_wm, old_known, new_wm, gap, al, key_head, nxt, first, last, slots,
             kinds, m):
    """Append the windows of key ``k`` that its watermark's move from ``old_wm`` to
    ``new_wm`` passes (kind 0) or expires (kind 1) to ``slots``/``kinds`` from ``m``, by
    window end then start; returns the new ``m``."""
    m0 = m
    w = key_head[k]
    while w >= 0:
        close = last[w] + gap
        if new_wm >= close:
            if not (old_known and old_wm >= close):
                slots[m] = w
                kinds[m] = 0
                m += 1
            elif new_wm >= close + al:
                slots[m] = w
                kinds[m] = 1
                m += 1
        w = nxt[w]
    for i in range(m0 + 1, m):  # insertion sort: a key has few due windows at once
        ws = slots[i]
        wk = kinds[i]
        j = i - 1
        while j >= m0 and (last[slots[j]] > last[ws] or (
                last[slots[j]] == last[ws] and first[slots[j]] > first[ws])):
            slots[j + 1] = slots[j]
            kinds[j + 1] = kinds[j]
            j -= 1
        slots[j + 1] = ws
        kinds[j + 1] = wk
    return m


@njit(cache=True)
def ingest_unit_keys_triggered(
    codes, times, seq0, valid, vf, vi, visf, vref, kinds,
    delay, idle, now, key_wm, key_ib, key_ibpt, no_time, event_basis, gap, al,
    early_count, late_count, at_window_end, at_expiry, discarding, retracting,
    key_head, nxt, wkey, first, last, elements, pending, emitted, rflag, haslp, rid, born,
    blate, used, free, n_free, born_next,
    cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
    status, out_start, out_end, key_nwin, hexp, hslot, hborn, hn, prow, pwm, gone,
    due_slots, due_kinds, timer, early_tv, late_tv, dead,
):
    """One arrival unit under per-key watermarks (see the module docstring). Pane rows go
    to ``prow`` (column 0: the record that fired them), the watermark each pane shows to
    ``pwm`` (``no_time``: none), the retraction list ids of deleted windows to ``gone``,
    each expired window's (key, start, last event time, record) to ``dead`` (a later record
    of the unit may open a window over the same times).
    The caller guarantees room for two slots and two heap entries per record plus one per
    window of the unit's keys. Returns ``(n_free, born_next, hn, n_panes, merges,
    n_merges, n_gone, n_dead)`` (``merges`` as ``ingest_unit_triggered`` gives them)."""
    n = len(times)
    n_aggs = len(kinds)
    merges = np.empty((16, 3), dtype=np.int64)
    fresh = np.empty((1, 2), dtype=np.int64)
    n_mg = 0
    np_ = 0
    ng = 0
    nd = 0
    for r in range(n):
        k = codes[r]
        kw = key_wm[k]
        known = kw != no_time
        wm0 = _clamp(kw) if known else 0
        n_free, born_next, hn, n_p, mg, n_m, _ = ingest_unit_triggered(
            codes[r:r + 1], times[r:r + 1], seq0 + r, valid[:, r:r + 1], vf[:, r:r + 1],
            vi[:, r:r + 1], visf[:, r:r + 1], vref[:, r:r + 1], kinds,
            wm0, known, event_basis, gap, al, early_count, late_count, discarding, retracting,
            key_head, nxt, wkey, first, last, elements, pending, emitted, rflag, haslp, rid,
            born, blate, used, free, n_free, born_next,
            cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
            status[r:r + 1], out_start[r:r + 1], out_end[r:r + 1], key_nwin,
            hexp, hslot, hborn, hn, prow[np_:], timer, True, early_tv, late_tv, fresh,
        )
        for i in range(n_m):
            if n_mg == len(merges):
                bigger = np.empty((2 * n_mg, 3), dtype=np.int64)
                bigger[:n_mg] = merges
                merges = bigger
            merges[n_mg, 0] = mg[i, 0] + np_
            merges[n_mg, 1] = mg[i, 1]
            merges[n_mg, 2] = mg[i, 2]
            n_mg += 1
        for i in range(np_, np_ + n_p):
            prow[i, 0] = r
            pwm[i] = kw
        np_ += n_p
        cand = times[r] - delay
        if not known or cand > kw:
            key_wm[k] = cand
            if idle:
                key_ib[k] = cand
                key_ibpt[k] = now
            wm1 = _clamp(cand)
            m = _key_due(k, wm0, known, wm1, gap, al, key_head, nxt, first, last,
                         due_slots, due_kinds, 0)
            if m > 0:
                for i in range(m):  # a deleted slot may serve as a ghost in fire_due
                    w = due_slots[i]
                    dead[nd + i, 0] = wkey[w]
                    dead[nd + i, 1] = first[w]
                    dead[nd + i, 2] = last[w]
                    dead[nd + i, 3] = r
                n_free, hn, n_p, n_g = fire_due(
                    due_slots[:m], due_kinds[:m], np.full(m, wm1), False, gap, al,
                    at_window_end, at_expiry, late_count, discarding, retracting, n_aggs,
                    key_head, nxt, wkey, first, last, pending, emitted, rflag, haslp, rid,
                    born, blate, used, free, n_free, cnt, isum, fsum, isf, ei, ef, eisf, has,
                    ot, oseq, oref, key_nwin, hexp, hslot, hborn, hn, prow[np_:], gone[ng:],
                    timer, late_tv,
                )
                for i in range(np_, np_ + n_p):
                    prow[i, 0] = r
                    pwm[i] = cand
                np_ += n_p
                ng += n_g
                base = nd
                for i in range(m):
                    if not used[due_slots[i]]:
                        dead[nd] = dead[base + i]
                        nd += 1
    return n_free, born_next, hn, np_, merges[:n_mg], n_mg, ng, nd


@njit(cache=True)
def idle_due(moved, old_wm, key_wm, no_time, gap, al, key_head, nxt, first, last, n_slots):
    """The windows of the keys in ``moved`` that an idle advance of their watermarks (from
    ``old_wm``, one per key) passes or expires: ``(slots, kinds)``."""
    slots = np.empty(n_slots, dtype=np.int64)
    kinds = np.empty(n_slots, dtype=np.int64)
    m = 0
    for i in range(len(moved)):
        k = moved[i]
        ow = old_wm[i]
        m = _key_due(k, _clamp(ow) if ow != no_time else 0, ow != no_time,
                     _clamp(key_wm[k]), gap, al, key_head, nxt, first, last, slots, kinds, m)
    return slots[:m], kinds[:m]
