"""Compiled (numba) kernels of session windows that fire more than once: count-based early
and late triggers, the ON_TIME pane at the window end, discarding / accumulating /
retracting, on the arrays of :mod:`.session_arrays`.

The rules are the general engine's (``jobs/engine/firing.py``), restated for sessions under a
global watermark, where they reduce to:

* per record (arrival order, against the watermark before the unit): after the record joins
  window ``w``, ``w`` is the only window that can fire (every other window was run after its
  own last record). Before its close an EARLY pane when ``pending >= early count``; at or
  after it (the window was passed, or was born late now) a LATE pane when ``pending >= late
  count``;
* per window whose deadline the unit's new watermark reached (its close: it *passes*; its
  close + allowed lateness: it *expires*), in the output order the caller sorted them in:
  the ON_TIME pane (not for a window born late), else on expiry the pane of what is pending,
  else the late count trigger.

Every pane copies the window's accumulators into a *ghost* slot (a free slot not marked
used), which the caller reads the ``values`` from and frees; a row per pane says which
window, with which bounds, timing and index. In retracting mode the caller keeps, per
*retraction list id* (``rid``), the panes a window must retract, its own last pane last when
``haslp``: a window extended by a record (one window replaced) keeps the list as it is, its
last pane becoming one to retract; a merge of several windows gets a new id (its creation
number) and a (pane count, new id, old id) row per replaced window holding panes, so the
caller joins the lists in start order, as the general engine does.
Heap entries carry ``2 * born + kind`` (kind 0: the close, 1: the expiry).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from jobs.engine.kernels._session_kernels import (
    ACCEPTED_LATE,
    DROPPED_BEFORE_WM,
    DROPPED_EXPIRED,
    JOINED,
    _add_value,
    _clear,
    _heap_pop,
    _heap_push,
    _merge_into,
)

EARLY, ON_TIME, LATE = 0, 1, 2
"""Pane timings in the output rows (``TIMINGS`` in session_triggers.py names them)."""
NO_TIMER = np.iinfo(np.int64).max
"""A window without a processing-time timer (``WindowState.timer`` None)."""


@njit(cache=True)
def _set_timer(w, wm, wm_known, gap, early_tv, late_tv, pending, last, timer):
    """The timer part of ``firing._fire_window`` for a live window not due at ``wm``: one
    with pending elements and no timer starts its early timer before its close, its late
    timer after (``early_tv`` / ``late_tv``: their due times at the current processing time,
    ``NO_TIMER`` when that part is not processing-time based)."""
    if timer[w] == NO_TIMER and pending[w] > 0:
        if wm_known and wm >= last[w] + gap:
            timer[w] = late_tv
        else:
            timer[w] = early_tv


@njit(cache=True)
def _copy_accs(src, dst, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref):
    for j in range(n_aggs):
        cnt[j, dst] = cnt[j, src]
        isum[j, dst] = isum[j, src]
        fsum[j, dst] = fsum[j, src]
        isf[j, dst] = isf[j, src]
        ei[j, dst] = ei[j, src]
        ef[j, dst] = ef[j, src]
        eisf[j, dst] = eisf[j, src]
        has[j, dst] = has[j, src]
        ot[j, dst] = ot[j, src]
        oseq[j, dst] = oseq[j, src]
        oref[j, dst] = oref[j, src]


@njit(cache=True)
def _emit(w, timing, is_last, rec, np_, free, n_free, n_aggs, discarding, retracting,
          wkey, first, last, rid, pending, emitted, rflag, haslp,
          cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref, prow, timer):
    """Window ``w``'s pane: its accumulators into a ghost slot, a row into ``prow`` (columns:
    record, key, retraction list id, ghost, start, last event time, timing, pane index, is
    last, had a last pane), then the pane bookkeeping of ``firing._emit``. Returns
    ``(n_free, np_)``."""
    n_free -= 1
    g = free[n_free]
    _copy_accs(w, g, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
    prow[np_, 0] = rec
    prow[np_, 1] = wkey[w]
    prow[np_, 2] = rid[w]
    prow[np_, 3] = g
    prow[np_, 4] = first[w]
    prow[np_, 5] = last[w]
    prow[np_, 6] = timing
    prow[np_, 7] = emitted[w]
    prow[np_, 8] = is_last
    prow[np_, 9] = haslp[w]
    emitted[w] += 1
    pending[w] = 0
    timer[w] = NO_TIMER
    if discarding:
        _clear(w, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
    if retracting:
        rflag[w] = True
        haslp[w] = True
    return n_free, np_ + 1


@njit(cache=True)
def _unlink(h, k, key_head, nxt):
    prev = -1
    c = key_head[k]
    while c != h:
        prev = c
        c = nxt[c]
    if prev < 0:
        key_head[k] = nxt[h]
    else:
        nxt[prev] = nxt[h]


@njit(cache=True)
def ingest_unit_triggered(
    codes, times, seq0, valid, vf, vi, visf, vref, kinds,
    wm0, wm_known, event_basis, gap, al, early_count, late_count, discarding, retracting,
    key_head, nxt, wkey, first, last, elements, pending, emitted, rflag, haslp, rid, born,
    blate, used, free, n_free, born_next,
    cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
    status, out_start, out_end, key_nwin, hexp, hslot, hborn, hn, prow,
    timer, step, early_tv, late_tv, fresh,
):
    """``_session_kernels.ingest_unit`` with each record's count trigger run right after it
    (rows into ``prow``, at most one per record) and the merges of retracting windows
    reported. The caller guarantees two free slots and one heap entry per record. Returns
    ``(n_free, born_next, hn, n_panes, merges, n_merges, n_fresh)``, ``merges`` rows being
    (panes before it, new list id, replaced window's list id).

    Timers: a new window has none, a merged one the earliest of the windows it replaced.
    With ``step`` (some part fires on a count: the general engine runs the key's windows
    after each record) the record's window is run right after it: one born late passes
    (its timer dropped), then ``_set_timer``; the key's other windows were run after their
    own records, so running them again changes nothing. Otherwise windows run only at the
    end of the unit (``unit_timers``); the (slot, creation number) of each window born late
    here goes into ``fresh`` (``n_fresh`` of them) so that its pass drops its timer there."""
    n = len(times)
    n_aggs = len(kinds)
    hits = np.empty(64, dtype=np.int64)
    merges = np.empty((16, 3), dtype=np.int64)
    n_mg = 0
    np_ = 0
    n_fresh = 0
    for r in range(n):
        k = codes[r]
        t = times[r]
        if event_basis and wm_known and t < wm0:
            status[r] = DROPPED_BEFORE_WM
            out_start[r] = t
            out_end[r] = t + gap
            continue
        nh = 0
        created = False
        w = key_head[k]
        while w >= 0:
            if first[w] < t + gap and t < last[w] + gap:
                if nh == len(hits):
                    bigger = np.empty(2 * nh, dtype=np.int64)
                    bigger[:nh] = hits
                    hits = bigger
                hits[nh] = w
                nh += 1
            w = nxt[w]
        if nh == 0:
            close = t + gap
            if wm_known and wm0 >= close + al:
                status[r] = DROPPED_EXPIRED
                out_start[r] = t
                out_end[r] = close
                continue
            n_free -= 1
            w = free[n_free]
            _clear(w, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
            used[w] = True
            wkey[w] = k
            late_born = wm_known and wm0 >= close
            blate[w] = late_born
            first[w] = t
            last[w] = t
            elements[w] = 0
            pending[w] = 0
            emitted[w] = 0
            rflag[w] = False
            haslp[w] = False
            rid[w] = born_next
            born[w] = born_next
            timer[w] = NO_TIMER
            created = late_born
            if late_born:
                hn = _heap_push(hexp, hslot, hborn, hn, close + al, w, 2 * born_next + 1)
            else:
                hn = _heap_push(hexp, hslot, hborn, hn, close, w, 2 * born_next)
            born_next += 1
            nxt[w] = key_head[k]
            key_head[k] = w
            key_nwin[k] += 1
        elif nh == 1 and first[hits[0]] <= t and t <= last[hits[0]]:
            w = hits[0]
        else:
            # a new window replacing the hits (``Assigner._merge_sessions``)
            hs = hits[:nh].copy()
            hs = hs[np.argsort(first[hs])]
            n_free -= 1
            w = free[n_free]
            lo = t
            hi = t
            tot = 0
            pend = 0
            any_r = False
            tmin = NO_TIMER
            for h in hs:
                tmin = min(tmin, timer[h])
                lo = min(lo, first[h])
                hi = max(hi, last[h])
                tot += elements[h]
                pend += pending[h]
                any_r = any_r or rflag[h]
                if retracting and rflag[h] and nh > 1:
                    if n_mg == len(merges):
                        bigger_m = np.empty((2 * n_mg, 3), dtype=np.int64)
                        bigger_m[:n_mg] = merges
                        merges = bigger_m
                    merges[n_mg, 0] = np_
                    merges[n_mg, 1] = born_next
                    merges[n_mg, 2] = rid[h]
                    n_mg += 1
            _copy_accs(hs[0], w, n_aggs, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq,
                       oref)
            for i in range(1, nh):
                for j in range(n_aggs):
                    _merge_into(kinds[j], j, w, hs[i], cnt, isum, fsum, isf, ei, ef, eisf, has,
                                ot, oseq, oref)
            used[w] = True
            wkey[w] = k
            late_born = wm_known and wm0 >= hi + gap
            blate[w] = late_born
            first[w] = lo
            last[w] = hi
            elements[w] = tot
            pending[w] = pend
            emitted[w] = 0
            rflag[w] = any_r
            haslp[w] = False  # the replaced windows' last panes are now panes to retract
            # one window replaced (an extension): its retraction list carries over as is
            rid[w] = rid[hs[0]] if nh == 1 else born_next
            born[w] = born_next
            timer[w] = tmin
            created = late_born
            if late_born:
                hn = _heap_push(hexp, hslot, hborn, hn, hi + gap + al, w, 2 * born_next + 1)
            else:
                hn = _heap_push(hexp, hslot, hborn, hn, hi + gap, w, 2 * born_next)
            born_next += 1
            for h in hs:
                _unlink(h, k, key_head, nxt)
                used[h] = False
                free[n_free] = h
                n_free += 1
            nxt[w] = key_head[k]
            key_head[k] = w
            key_nwin[k] += 1 - nh
        # the record joins w
        for j in range(n_aggs):
            if valid[j, r]:
                _add_value(kinds[j], j, w, vf[j, r], vi[j, r], visf[j, r], t, seq0 + r,
                           vref[j, r], cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref)
        elements[w] += 1
        pending[w] += 1
        if t < first[w]:
            first[w] = t
        elif t > last[w]:
            last[w] = t
        if wm_known and wm0 >= last[w] + gap:
            status[r] = ACCEPTED_LATE
            out_start[r] = first[w]
            out_end[r] = last[w] + gap
            if late_count > 0 and pending[w] >= late_count:
                n_free, np_ = _emit(w, LATE, False, r, np_, free, n_free, n_aggs, discarding,
                                    retracting, wkey, first, last, rid, pending, emitted,
                                    rflag, haslp, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq,
                                    oref, prow, timer)
        else:
            status[r] = JOINED
            if early_count > 0 and pending[w] >= early_count:
                n_free, np_ = _emit(w, EARLY, False, r, np_, free, n_free, n_aggs, discarding,
                                    retracting, wkey, first, last, rid, pending, emitted,
                                    rflag, haslp, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq,
                                    oref, prow, timer)
        if step:
            if created:
                timer[w] = NO_TIMER
            _set_timer(w, wm0, wm_known, gap, early_tv, late_tv, pending, last, timer)
        elif created:
            fresh[n_fresh, 0] = w
            fresh[n_fresh, 1] = born[w]
            n_fresh += 1
    return n_free, born_next, hn, np_, merges, n_mg, n_fresh


@njit(cache=True)
def due_windows(wm, ended, used, born, hexp, hslot, hborn, hn):
    """Pop every heap entry the watermark ``wm`` reached (all once ``ended``); returns the
    live ones as ``(slots, kinds, hn)`` (entries of windows a merge replaced are skipped)."""
    slots = np.empty(hn, dtype=np.int64)
    kinds = np.empty(hn, dtype=np.int64)
    m = 0
    while hn > 0 and (ended or hexp[0] <= wm):
        w = hslot[0]
        tag = hborn[0]
        if used[w] and born[w] == tag >> 1:
            slots[m] = w
            kinds[m] = tag & 1
            m += 1
        hn = _heap_pop(hexp, hslot, hborn, hn)
    return slots[:m], kinds[:m], hn


@njit(cache=True)
def fire_due(
    slots, kinds, wms, ended, gap, al, at_window_end, at_expiry, late_count, discarding,
    retracting, n_aggs, key_head, nxt, wkey, first, last, pending, emitted, rflag, haslp, rid,
    born, blate, used, free, n_free, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
    key_nwin, hexp, hslot, hborn, hn, prow, gone, timer, late_tv,
):
    """Run the due windows (``slots``, in output order) through ``firing._fire_window`` at
    the new watermark (``wms``: one per window, its key's under per-key watermarks): pass
    (kind 0) or expire (kind 1). Pane rows into ``prow``; the
    retraction list ids of deleted windows into ``gone``. The caller guarantees a free slot per window.
    Returns ``(n_free, hn, n_panes, n_gone)``."""
    np_ = 0
    ng = 0
    expiry_timing = ON_TIME if at_expiry else LATE
    for i in range(len(slots)):
        w = slots[i]
        close = last[w] + gap
        expired = ended or wms[i] >= close + al
        delete = False
        if kinds[i] == 0:  # the watermark passes the window's close
            timer[w] = NO_TIMER  # pending early timers are dropped when it passes
            if at_window_end and not blate[w]:
                n_free, np_ = _emit(w, ON_TIME, expired, -1, np_, free, n_free, n_aggs,
                                    discarding, retracting, wkey, first, last, rid, pending,
                                    emitted, rflag, haslp, cnt, isum, fsum, isf, ei, ef, eisf, has,
                                    ot, oseq, oref, prow, timer)
                delete = expired
            elif expired:
                if pending[w] > 0:
                    n_free, np_ = _emit(w, expiry_timing, True, -1, np_, free, n_free, n_aggs,
                                        discarding, retracting, wkey, first, last, rid,
                                        pending, emitted, rflag, haslp, cnt, isum, fsum, isf, ei, ef,
                                        eisf, has, ot, oseq, oref, prow, timer)
                delete = True
            elif late_count > 0 and pending[w] >= late_count:
                n_free, np_ = _emit(w, LATE, False, -1, np_, free, n_free, n_aggs, discarding,
                                    retracting, wkey, first, last, rid, pending, emitted,
                                    rflag, haslp, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq,
                                    oref, prow, timer)
            if not delete:
                hn = _heap_push(hexp, hslot, hborn, hn, close + al, w, 2 * born[w] + 1)
                if pending[w] > 0 and timer[w] == NO_TIMER:
                    timer[w] = late_tv
        else:  # it expires
            if pending[w] > 0:
                n_free, np_ = _emit(w, expiry_timing, True, -1, np_, free, n_free, n_aggs,
                                    discarding, retracting, wkey, first, last, rid, pending,
                                    emitted, rflag, haslp, cnt, isum, fsum, isf, ei, ef, eisf, has,
                                    ot, oseq, oref, prow, timer)
            delete = True
        if delete:
            k = wkey[w]
            _unlink(w, k, key_head, nxt)
            used[w] = False
            key_nwin[k] -= 1
            free[n_free] = w
            n_free += 1
            gone[ng] = rid[w]
            ng += 1
    return n_free, hn, np_, ng


@njit(cache=True)
def unit_timers(keys, fresh, n_fresh, wm, wm_known, gap, early_tv, late_tv, key_head, nxt,
                used, born, pending, last, timer):
    """The end of a unit's run over the windows of its keys (``keys``, distinct) after the
    due ones fired: the windows born late in it pass (their timer dropped), then every live
    window gets ``_set_timer`` at the new watermark."""
    for i in range(n_fresh):
        w = fresh[i, 0]
        if used[w] and born[w] == fresh[i, 1]:
            timer[w] = NO_TIMER
    for k in keys:
        w = key_head[k]
        while w >= 0:
            _set_timer(w, wm, wm_known, gap, early_tv, late_tv, pending, last, timer)
            w = nxt[w]


@njit(cache=True)
def fire_timers(
    slots, wms, gap, discarding, retracting, n_aggs, wkey, first, last, pending,
    emitted, rflag, haslp, rid, free, n_free, cnt, isum, fsum, isf, ei, ef, eisf, has, ot,
    oseq, oref, prow, timer,
):
    """``firing._fire_timers`` for the windows whose timer is due (``slots``, in output
    order: due time, window end, key JSON, start): the timer is dropped, and a window with
    pending elements emits an EARLY pane before its close, a LATE one after (``wms``: the
    watermark of each window, ``WM_CLAMP[0]`` of session_arrays.py when unknown). The caller
    guarantees a free slot per window. Returns ``(n_free, n_panes)``."""
    np_ = 0
    for i in range(len(slots)):
        w = slots[i]
        timer[w] = NO_TIMER
        if pending[w] > 0:
            timing = LATE if wms[i] >= last[w] + gap else EARLY
            n_free, np_ = _emit(w, timing, False, -1, np_, free, n_free, n_aggs, discarding,
                                retracting, wkey, first, last, rid, pending, emitted, rflag,
                                haslp, cnt, isum, fsum, isf, ei, ef, eisf, has, ot, oseq, oref,
                                prow, timer)
    return n_free, np_
