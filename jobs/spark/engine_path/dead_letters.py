"""Dead letters on the engine path: marked in SQL (``__dead``, null for a usable record) and
split off by the processor, so a record crosses into Python once (no gate ``mapInArrow``
before the operator). Their text is the gate's (``jobs.spark.gate``), rebuilt from pandas for
flat column types (:func:`dead_letter_kinds`; other schemas keep the gate). A marked record
does not move the watermark and never reaches the engine."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jobs.spark.engine_path.config import DEAD, HostConfig
from jobs.spark.extract import EVENT_TIME, EVENT_TIME_OUT, KEY
from jobs.spark.gate import ET_REASON, KEY_REASON, range_reason

if TYPE_CHECKING:
    import pandas as pd


def dead_letter_kinds(schema: Any, source_columns: Sequence[str]) -> tuple[str, ...] | None:
    """Per source column, how a dead letter's value is rebuilt from the pandas frame the
    processor gets, so that its record text equals the gate's (which reads Arrow); ``None``
    when a column's type has no exact rebuild (nested, binary, intervals...): such definitions
    keep the gate before the operator. Flat types are exact: integers arrive as floats when
    the column has nulls (made ints again), timestamps as wall times in the session zone, and
    which values are null comes from the ``__dead`` column (a float NaN is not a null)."""
    from pyspark.sql import types as T

    by_name = {f.name: f.dataType for f in schema.fields}
    kinds: list[str] = []
    for c in source_columns:
        t = by_name.get(c)
        if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            kinds.append("int")
        elif isinstance(t, (T.FloatType, T.DoubleType)):
            kinds.append("float")
        elif isinstance(t, T.BooleanType):
            kinds.append("bool")
        elif type(t) is T.StringType:
            kinds.append("str")
        elif isinstance(t, T.DecimalType):
            kinds.append("decimal")
        elif isinstance(t, T.DateType):
            kinds.append("date")
        elif isinstance(t, T.TimestampType):
            kinds.append("ts")
        elif isinstance(t, T.TimestampNTZType):
            kinds.append("ts_ntz")
        else:
            return None
    return tuple(kinds)


def dead_letter_column(has_key: bool, source_columns: Sequence[str], corrupt_column: str) -> Any:
    """``__dead``: null for a usable record; else a reason letter and what the processor needs
    to write the dead letter exactly as the gate does: ``u`` + the raw line (unparsable), or
    ``k`` (key) / ``e`` (event time) + one ``0``/``1`` per source column (1 = null), or ``r``
    (event time outside the representable instants) + those digits + the event time in ms
    (``__etx``). Computed in
    the JVM, so usable records cross into Python once (the processor) instead of twice (gate,
    then processor); the column is null, and so almost free, for every usable record."""
    from pyspark.sql import functions as F

    nulls = (F.concat(*[F.when(F.col(f"`{c}`").isNull(), F.lit("1")).otherwise(F.lit("0"))
                        for c in source_columns]) if source_columns else F.lit(""))
    dead = F.when(F.col(f"`{corrupt_column}`").isNotNull(),
                  F.concat(F.lit("u"), F.col(f"`{corrupt_column}`")))
    if has_key:
        dead = dead.when(F.col(KEY).isNull(), F.concat(F.lit("k"), nulls))
    dead = dead.when(F.col(EVENT_TIME_OUT).isNotNull(),
                     F.concat(F.lit("r"), nulls, F.col(EVENT_TIME_OUT).cast("string")))
    return dead.when(F.col(EVENT_TIME).isNull(), F.concat(F.lit("e"), nulls))


def _source_value(v: Any, kind: str, tz: str) -> Any:
    """A non-null source value from pandas as the gate's ``to_pylist()`` has it (timestamps
    already as epoch ms, which is what the gate's ``_jsonable`` makes of them)."""
    import datetime as dt

    import numpy as np
    import pandas as pd

    if kind == "int":
        return int(v)
    if kind == "float":
        return float(v)
    if kind == "bool":
        return bool(v)
    if kind in ("ts", "ts_ntz"):
        ts = pd.Timestamp(v)
        if kind == "ts" and ts.tzinfo is None:
            ts = ts.tz_localize(tz)
        return int(ts.value // 1_000_000)
    if kind == "date" and isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, np.generic):
        return v.item()
    return v


def dead_letter_lines(frame: pd.DataFrame, cfg: HostConfig) -> list[str]:
    """The dead-letter line of each row of ``frame`` (rows whose ``__dead`` is set): exactly
    the line the gate writes (jobs.spark.gate)."""
    from jobs.spark.gate import _jsonable

    kinds = cfg.source_kinds or ()
    columns = {c: frame[c].tolist() for c in cfg.source_columns}
    job, version, store = cfg.ident
    out: list[str] = []
    for i, code in enumerate(frame[DEAD].tolist()):
        tag, rest = code[0], code[1:]
        if tag == "u":
            reason, rec = "unparsable record", rest
        else:
            reason = KEY_REASON if tag == "k" else ET_REASON
            if tag == "r":
                reason = range_reason(int(rest[len(kinds):]))
                rest = rest[:len(kinds)]
            values = {
                c: None if rest[j] == "1" else _source_value(columns[c][i], kind, cfg.timezone)
                for j, (c, kind) in enumerate(zip(cfg.source_columns, kinds, strict=True))
            }
            rec = json.dumps(_jsonable(values), separators=(",", ":"), ensure_ascii=False,
                             default=str)
        out.append(json.dumps({"job": job, "version": version, "store": store,
                                "reason": reason, "record": rec}))
    return out
