"""A deliberately naive, record-at-a-time reading of docs/semantics.md for ``emit: final`` on fixed and
global windows, used to check the vectorized engine before (and besides) the general engine.

Straight from docs/semantics.md: one watermark (global or per key) that is max event
time minus delay and never goes back; records of one ingest call judged against the watermark
before the call; a window expires at ``end + allowed_lateness`` and then emits its single
ON_TIME, ``is_last`` pane; late (record, window) pairs go to the late output. Aggregates are
recomputed from the member list (arrival order), no partials, no numpy.
"""

from __future__ import annotations

import math
from typing import Any

from jobs.definition.model import Definition
from jobs.engine.records import key_json


def _starts(defn: Definition, t: int) -> list[int | None]:
    w = defn.window
    if w.type == "global":
        return [None]
    assert w.size is not None
    size = w.size
    step = w.step if w.type == "hopping" and w.step is not None else size
    out: list[int | None] = []
    k = (t - w.align_to) // step + 1
    while True:
        s = w.align_to + k * step
        if s + size <= t:
            break
        if s <= t:
            out.append(s)
        k -= 1
    return sorted(out, key=lambda s: s if s is not None else 0)


def _agg(fn: str, of: str | None, vals: list[Any]) -> Any:
    if fn == "count" and of is None:
        return len(vals)
    vs = [v for v in vals if v is not None]
    if fn == "count":
        return len(vs)
    if fn == "sum":
        total: Any = 0
        for v in vs:
            total = total + v
        return total
    if fn == "min":
        return min(vs) if vs else None
    if fn == "max":
        return max(vs) if vs else None
    if fn == "mean":
        if not vs:
            return None
        total = 0
        for v in vs:
            total = total + v
        return float(total / len(vs))
    raise AssertionError(fn)


class ReferenceFinal:
    def __init__(self, defn: Definition) -> None:
        self.defn = defn
        self.key_scope = defn.watermark.scope == "key"
        self.wm: dict[str, float] = {}  # key json -> watermark (key scope); "" -> global
        self.max_t: dict[str, int] = {}
        self.windows: dict[tuple[str, int | None], list[tuple[Any, dict[str, Any]]]] = {}
        self.keyval: dict[str, Any] = {}
        self.late_counts: dict[tuple[str, int | None], list[int]] = {}
        self.pt = 0

    def _end(self, s: int | None) -> float:
        if s is None:
            return math.inf
        assert self.defn.window.size is not None
        return s + self.defn.window.size

    def _wm(self, kj: str) -> float:
        return self.wm.get(kj if self.key_scope else "", -math.inf)

    def ingest(
        self, rows: list[tuple[Any, int, dict[str, Any], dict[str, Any]]], pt: int | None
    ) -> list[dict[str, Any]]:
        """rows: (key, event_time, values by aggregation name, original record): one arrival
        unit. Under ``scope: key`` every record is judged, applied and moves its key's
        watermark before the next one (docs/semantics.md, "Arrival model"), so the unit is a
        sequence of one-record units; under the global scope the unit is judged as a whole."""
        if pt is not None:
            self.pt = pt
        if self.key_scope and len(rows) > 1:
            return [o for row in rows for o in self.ingest([row], None)]
        out: list[dict[str, Any]] = []
        before = {kj: self._wm(kj) for kj in {key_json(r[0]) for r in rows}}
        al = self.defn.allowed_lateness
        for key, t, vals, rec in rows:
            kj = key_json(key)
            self.keyval[kj] = key
            wm = before[kj]
            starts = _starts(self.defn, t)
            if self.defn.lateness_basis == "event" and t < wm:
                for s in starts:
                    out.append(self._late(key, t, s, "before_watermark", rec))
                    self.late_counts.setdefault((kj, s), [0, 0])[1] += 1
                continue
            for s in starts:
                end = self._end(s)
                if wm >= end + al:
                    out.append(self._late(key, t, s, "expired", rec))
                    self.late_counts.setdefault((kj, s), [0, 0])[1] += 1
                    continue
                if wm >= end:
                    self.late_counts.setdefault((kj, s), [0, 0])[0] += 1
                self.windows.setdefault((kj, s), []).append((t, vals))
        for key, t, _, _ in rows:
            kj = key_json(key)
            self.max_t[kj if self.key_scope else ""] = max(
                self.max_t.get(kj if self.key_scope else "", t), t
            )
        changed = {}
        for scope, mt in self.max_t.items():
            old = self.wm.get(scope, -math.inf)
            new = max(old, mt - self.defn.watermark.delay)
            if new != old:
                self.wm[scope] = new
                changed[scope] = (old, new)
        out.extend(self._fire(changed))
        return out

    def end_of_input(self) -> list[dict[str, Any]]:
        scopes = set(self.wm) | ({key_json(self.keyval[k]) for k, _ in self.windows} if self.key_scope else {""})
        changed = {sc: (self.wm.get(sc, -math.inf), math.inf) for sc in scopes}
        for sc in scopes:
            self.wm[sc] = math.inf
        return self._fire(changed)

    def _fire(self, changed: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
        al = self.defn.allowed_lateness
        due = []
        for (kj, s), members in list(self.windows.items()):
            scope = kj if self.key_scope else ""
            if scope not in changed:
                continue
            old, new = changed[scope]
            exp = self._end(s) + al
            if old < exp <= new:
                due.append((kj, s, members, new))
        due.sort(key=lambda d: (self._end(d[1]), d[0], d[1] if d[1] is not None else 0))
        out = []
        for kj, s, members, new in due:
            del self.windows[(kj, s)]
            values = {
                a.name: _agg(a.fn, a.of, [m[1].get(a.name) for m in members])
                for a in self.defn.aggregations
            }
            out.append({
                "type": "pane", "key": self.keyval[kj], "window_start": s,
                "window_end": None if s is None else int(self._end(s)), "timing": "ON_TIME",
                "pane_index": 0, "is_first": True, "is_last": True, "retraction": False,
                "values": values, "emitted_at": self.pt,
                "watermark": None if math.isinf(new) else int(new),
            })
        return out

    def _late(self, key: Any, t: int, s: int | None, reason: str, rec: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "late", "key": key, "event_time": t, "window_start": s,
            "window_end": None if s is None else int(self._end(s)), "reason": reason,
            "record": rec,
        }
