"""The operator's output rows: panes as columns of a pandas frame (``OUTPUT_DDL``), built
column by column from the panes' fields (a pane row holds exactly what its ``to_json()`` holds,
key and values as canonical JSON text), without a ``to_json()`` per pane. Engines that return
their panes as columns (:class:`~jobs.engine.vectorized.emission_columns.PaneColumns`) get their
rows straight from those arrays (``pane_frame``), without a ``Pane`` object per row."""

from __future__ import annotations

import json
import json.encoder
import math
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Union

from jobs.engine.records import Pane, jsonable, key_json

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

    from jobs.engine.vectorized.emission_columns import PaneColumns

OUTPUT_DDL = (
    "kind STRING, seq BIGINT, key STRING, window_start BIGINT, window_end BIGINT, "
    "first_event_time BIGINT, last_event_time BIGINT, timing STRING, pane_index INT, "
    "is_first BOOLEAN, is_last BOOLEAN, retraction BOOLEAN, `values` STRING, emitted_at BIGINT, "
    "watermark BIGINT, payload STRING"
)
OUT_COLUMNS = [
    "kind", "seq", "key", "window_start", "window_end", "first_event_time", "last_event_time",
    "timing", "pane_index", "is_first", "is_last", "retraction", "values", "emitted_at",
    "watermark", "payload",
]

_JSON_CONST = {True: "true", False: "false"}
_encode_str = json.encoder.encode_basestring
"""JSON text of a str with non-ASCII kept: what json.dumps(s, ensure_ascii=False) returns."""


def _values_text(values: dict[str, Any], prefixes: dict[str, str]) -> str:
    """``json.dumps(jsonable(values), separators=(",", ":"), ensure_ascii=False)``, exactly,
    without the encoder for the common case (plain ints, finite floats, strings, nulls)."""
    parts = []
    for name, v in values.items():
        pre = prefixes.get(name)
        if pre is None:
            pre = prefixes[name] = (_encode_str(name) if type(name) is str
                                    else json.dumps(name, ensure_ascii=False)) + ":"
        t = type(v)
        if t is int:
            parts.append(pre + int.__repr__(v))
        elif t is float and math.isfinite(v):
            parts.append(pre + float.__repr__(v))
        elif v is None:
            parts.append(pre + "null")
        elif t is bool:
            parts.append(pre + _JSON_CONST[v])
        elif t is str:
            parts.append(pre + _encode_str(v))
        else:
            return json.dumps(jsonable(values), separators=(",", ":"), ensure_ascii=False)
    return "{" + ",".join(parts) + "}"


_PANE_FIELDS = (
    ("window_start", "window_start"), ("window_end", "window_end"), ("timing", "timing"),
    ("pane_index", "pane_index"), ("is_first", "is_first"), ("is_last", "is_last"),
    ("retraction", "retraction"), ("emitted_at", "emitted_at"), ("watermark", "watermark"),
)
"""(output column, Pane field) copied as they are."""


def _key_texts(keys: list[Any]) -> list[str]:
    """``key_json(jsonable(k))`` of each key, computed once per distinct key."""
    if set(map(type, keys)) == {str}:
        texts = {k: key_json(k) for k in set(keys)}
        return list(map(texts.__getitem__, keys))
    cache: dict[tuple[type, Any], str] = {}
    out = []
    for k in keys:
        t = cache.get((type(k), k))
        if t is None:
            t = cache[(type(k), k)] = key_json(jsonable(k))
        out.append(t)
    return out


def emission_columns(emissions: list[Any], late_counts: list[dict[str, Any]]
                     ) -> dict[str, list[Any]]:
    """The output rows as columns (``OUT_COLUMNS``), built from the emissions' fields: a pane
    row holds exactly what its ``to_json()`` holds (key and values as canonical JSON text),
    other rows their ``to_json()`` as ``payload``."""
    n = len(emissions) + len(late_counts)
    cols: dict[str, list[Any]] = {}
    prefixes: dict[str, str] = {}
    if set(map(type, emissions)) <= {Pane}:  # panes only (the common case): column by column
        panes = emissions
        m = len(panes)
        pad = [None] * len(late_counts)
        cols["kind"] = ["pane"] * m + ["late_count"] * len(late_counts)
        cols["seq"] = list(range(n))
        cols["key"] = _key_texts(list(map(attrgetter("key"), panes))) + pad
        for col, name in _PANE_FIELDS:
            cols[col] = list(map(attrgetter(name), panes)) + pad
        fet = list(map(attrgetter("first_event_time"), panes))
        if fet.count(None) == m:
            cols["first_event_time"] = [None] * n
            cols["last_event_time"] = [None] * n
        else:  # to_json() has last_event_time only with first_event_time
            cols["first_event_time"] = fet + pad
            cols["last_event_time"] = [
                None if f is None else p.last_event_time for f, p in zip(fet, panes, strict=True)
            ] + pad
        cols["values"] = [_values_text(p.values, prefixes) for p in panes] + pad
        cols["payload"] = [None] * m + [
            json.dumps(c, ensure_ascii=False, default=str) for c in late_counts]
        return {c: cols[c] for c in OUT_COLUMNS}
    cols = {c: [None] * n for c in OUT_COLUMNS}
    kind, seq, key, ws, we = cols["kind"], cols["seq"], cols["key"], cols["window_start"], cols["window_end"]
    fet, let, timing, pidx = (cols["first_event_time"], cols["last_event_time"], cols["timing"],
                              cols["pane_index"])
    first, last, retr, vals = cols["is_first"], cols["is_last"], cols["retraction"], cols["values"]
    emitted, wmk, payload = cols["emitted_at"], cols["watermark"], cols["payload"]
    keys: dict[tuple[type, Any], str] = {}
    for i, e in enumerate(emissions):
        seq[i] = i
        if type(e) is Pane:
            kind[i] = "pane"
            k = e.key
            kt = keys.get((type(k), k))
            if kt is None:
                kt = keys[(type(k), k)] = key_json(jsonable(k))
            key[i] = kt
            ws[i] = e.window_start
            we[i] = e.window_end
            if e.first_event_time is not None:
                fet[i] = e.first_event_time
                let[i] = e.last_event_time
            timing[i] = e.timing
            pidx[i] = e.pane_index
            first[i] = e.is_first
            last[i] = e.is_last
            retr[i] = e.retraction
            vals[i] = _values_text(e.values, prefixes)
            emitted[i] = e.emitted_at
            wmk[i] = e.watermark
        else:
            obj = e.to_json()
            kind[i] = obj["type"]
            payload[i] = json.dumps(obj, ensure_ascii=False, default=str)
    for j, c in enumerate(late_counts, start=len(emissions)):
        kind[j] = "late_count"
        seq[j] = j
        payload[j] = json.dumps(c, ensure_ascii=False, default=str)
    return cols


def _typed(values: list[Any]) -> Any:
    """A column for pandas: a NumPy array when it holds only ints or only bools (what pandas
    would infer from the list, without its per-element inference), else the list itself."""
    import numpy as np

    if not values or None in values:
        return values
    types = set(map(type, values))
    if types == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return values
    if types == {bool}:
        return np.array(values, dtype=bool)
    if types == {str}:
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    return values


def emission_frame(emissions: list[Any], late_counts: list[dict[str, Any]]
                   ) -> pd.DataFrame | None:
    """The output rows of ``emissions`` then ``late_counts`` (``None`` when there are none):
    the processor passes panes only (its other lines go to side files)."""
    import pandas as pd

    if not emissions and not late_counts:
        return None
    cols = emission_columns(emissions, late_counts)
    return pd.DataFrame({c: _typed(cols[c]) for c in OUT_COLUMNS}, columns=OUT_COLUMNS)



def _column_key_texts(cols: PaneColumns) -> NDArray[Any]:
    """``key_json(jsonable(key))`` per pane from the key codes (an object array of str): the
    key table's canonical JSON where every key is a str or an int (the same text), else
    computed once per distinct key."""
    import numpy as np

    codes = cols.key_codes
    uniq, inverse = np.unique(codes, return_inverse=True)
    keys = cols.key_table.object_array()[uniq].tolist()
    if set(map(type, keys)) <= {str, int}:
        return cols.key_table.json_array()[codes]
    texts = np.empty(len(keys), dtype=object)
    texts[:] = [key_json(jsonable(k)) for k in keys]
    return texts[inverse]


def _column_value_texts(cols: PaneColumns) -> list[str]:
    """``_values_text`` of each pane's values dict: one ``%`` template over the columns when
    each is int64 or finite float64 (``str`` of such a value is its JSON text), else through
    the values dicts."""
    import numpy as np

    names = list(cols.values)
    arrays = list(cols.values.values())
    simple = all(a.dtype == np.int64 or (a.dtype == np.float64 and bool(np.isfinite(a).all()))
                 for a in arrays)
    if not simple or not all(type(n) is str for n in names):
        prefixes: dict[str, str] = {}
        return [_values_text(v, prefixes) for v in (p.values for p in cols.to_panes())]
    if not names:
        return ["{}"] * len(cols)
    template = "{" + ",".join(_encode_str(n).replace("%", "%%") + ":%s" for n in names) + "}"
    lists = [a.tolist() for a in arrays]
    if len(lists) == 1:
        return [template % (v,) for v in lists[0]]
    return list(map(template.__mod__, zip(*lists, strict=True)))


Column = Union[list[Any], "NDArray[Any]"]
"""One output column of columnar panes: an array with the dtype ``_typed`` gives the same
values as a list (int64, bool, object for str), or a list where ``_typed`` keeps one."""


def _objects(values: list[Any]) -> NDArray[Any]:
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def pane_columns(cols: PaneColumns) -> dict[str, Column]:
    """The output rows of columnar panes (``seq`` from 0), exactly as ``emission_columns``
    builds them from the same panes as objects, each column already as the array ``_typed``
    makes of that list (no round trip through Python values for the number columns)."""
    import numpy as np

    from jobs.engine.vectorized.columns import WM_INF, WM_NONE, _wm_or_none
    from jobs.engine.vectorized.emission_columns import TIMINGS

    m = len(cols)
    i64 = np.int64
    out: dict[str, Column] = {"kind": _objects(["pane"] * m),
                              "seq": np.arange(m, dtype=i64),
                              "key": _column_key_texts(cols)}
    out["window_start"] = [None] * m if cols.window_start is None else cols.window_start.astype(i64)
    out["window_end"] = [None] * m if cols.window_end is None else cols.window_end.astype(i64)
    if cols.first_event_time is None or cols.last_event_time is None:
        out["first_event_time"] = [None] * m
        out["last_event_time"] = [None] * m
    else:
        out["first_event_time"] = cols.first_event_time.astype(i64)
        out["last_event_time"] = cols.last_event_time.astype(i64)
    out["timing"] = np.array(TIMINGS, dtype=object)[cols.timing]
    out["pane_index"] = cols.pane_index.astype(i64)
    out["is_first"] = cols.is_first.astype(bool)
    out["is_last"] = cols.is_last.astype(bool)
    out["retraction"] = cols.retraction.astype(bool)
    out["values"] = _objects(_column_value_texts(cols))
    out["emitted_at"] = cols.emitted_at.astype(i64)
    wm = cols.watermark
    if bool(((wm == WM_INF) | (wm == WM_NONE)).any()):
        out["watermark"] = list(map(_wm_or_none, wm.tolist()))
    else:
        out["watermark"] = wm.astype(i64)
    out["payload"] = [None] * m
    return {c: out[c] for c in OUT_COLUMNS}


def _joined(parts: list[Column]) -> Any:
    """Several calls' pieces of one column as one column for pandas: the arrays joined when
    every piece is an array of one dtype, else the values as one list through ``_typed``."""
    import numpy as np

    arrays = [p for p in parts if isinstance(p, np.ndarray)]
    if len(arrays) == len(parts) and len({a.dtype for a in arrays}) == 1:
        return np.concatenate(arrays)
    values: list[Any] = []
    for p in parts:
        values.extend(p.tolist() if isinstance(p, np.ndarray) else p)
    return _typed(values)


def pane_frame(parts: list[PaneColumns]) -> pd.DataFrame | None:
    """The output rows of several calls' columnar panes, in order (``None`` when there are
    none): the frame ``emission_frame`` builds from the same panes as objects."""
    import numpy as np
    import pandas as pd

    built = [pane_columns(p) for p in parts if len(p)]
    if not built:
        return None
    if len(built) == 1:
        cols = {c: v if isinstance(v, np.ndarray) else _typed(v) for c, v in built[0].items()}
    else:
        cols = {c: _joined([b[c] for b in built]) for c in OUT_COLUMNS}
        cols["seq"] = np.arange(len(cols["seq"]), dtype=np.int64)
    return pd.DataFrame(cols, columns=OUT_COLUMNS)
