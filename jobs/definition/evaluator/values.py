"""Values as Spark sees them: coercions between numbers, strings, booleans and timestamps,
Spark's casts, and the error an expression raises on a value it cannot use.

:data:`SPARK_ANSI` and the per-compilation ANSI switch live here because every coercion reads
them (ANSI off: a value that cannot be converted is null; on: an :class:`ExpressionError`).
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from jobs.definition.errors import DefinitionError

Row = Mapping[str, Any]


Fn = Callable[[Row], Any]


_INT_RANGES: dict[str, tuple[int, int]] = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}


_CAST_TYPES: dict[str, str] = {
    "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "BIGINT": "bigint",
    "FLOAT": "float", "REAL": "float", "DOUBLE": "double", "BOOLEAN": "boolean", "TEXT": "string",
    "VARCHAR": "string", "CHAR": "string", "NCHAR": "string", "NVARCHAR": "string",
    "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamp", "TIMESTAMPLTZ": "timestamp",
    "TIMESTAMPNTZ": "timestamp", "DATETIME": "timestamp",
}


SPARK_ANSI = False
"""The ANSI mode the platform's Spark sessions run with (``spark.sql.ansi.enabled`` in
``jobs/spark/session.py``: off, so a value that cannot be converted becomes null and the record a
dead letter instead of failing a micro-batch). The evaluator follows the same mode by default so
that ``tidemark replay`` and the Spark job agree; ``ansi=True`` gives Spark 4's default."""


_ANSI: ContextVar[bool] = ContextVar("tidemark_sql_ansi", default=SPARK_ANSI)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


class ExpressionError(DefinitionError):
    """An expression that is not supported, or a record it cannot be evaluated on."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message, field)


def _fail(message: str) -> ExpressionError:
    return ExpressionError(message)


def _number(v: Any, what: str = "value") -> int | float:
    if isinstance(v, bool):
        raise _fail(f"cannot use the boolean {str(v).lower()} as a number")
    if isinstance(v, int | float):
        return v
    if isinstance(v, str):
        text = v.strip()
        if _ANSI.get():
            try:
                return int(text)
            except ValueError:
                pass
        try:
            result = float(text)  # without ANSI, Spark reads text in arithmetic as a double
        except ValueError:
            raise _fail(f"cannot read {v!r} as a number") from None
        return result
    raise _fail(f"cannot use a {type(v).__name__} as a number")


def _string(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _spark_double_str(v)
    if isinstance(v, datetime):
        return _ts_str(v)
    if isinstance(v, list | dict):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _spark_double_str(v: float) -> str:
    """Java's ``Double.toString`` (what Spark's CAST(double AS STRING) prints): plain decimal
    for 1e-3 <= |v| < 1e7, else ``d.dddE<exp>``; shortest round-trip digits."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "0.0"
    if 1e-3 <= abs(v) < 1e7:
        text = repr(v)
        return text if ("." in text or "e" in text) else text + ".0"
    _, digit_tuple, exponent = Decimal(repr(abs(v))).as_tuple()
    digits = list(digit_tuple)
    exp = int(exponent)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    power = exp + len(digits) - 1
    mantissa = f"{digits[0]}." + ("".join(str(d) for d in digits[1:]) or "0")
    return f"{'-' if v < 0 else ''}{mantissa}E{power}"


def _ts_str(ts: datetime) -> str:
    ts = ts.astimezone(UTC)
    text = ts.strftime("%Y-%m-%d %H:%M:%S")
    if ts.microsecond:
        text += ("." + f"{ts.microsecond:06d}").rstrip("0")
    return text


def _timestamp(v: Any) -> datetime:
    """A timestamp argument: datetime, ISO string, or epoch milliseconds (record convention)."""
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=UTC)
    if isinstance(v, bool):
        raise _fail(f"cannot use the boolean {str(v).lower()} as a timestamp")
    if isinstance(v, int | float):
        return _from_epoch(v, 1000)
    if isinstance(v, str):
        return _parse_ts(v)
    raise _fail(f"cannot use a {type(v).__name__} as a timestamp")


_TS_TEXT = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?)?"
    r"\s*(Z|UTC|[+-]\d{2}(?::?\d{2})?)?\s*$",
    re.IGNORECASE,
)


def _parse_ts(text: str) -> datetime:
    if len(text) >= 19 and text[4] == "-" and text[10] in "T ":  # the common ISO shape: fast
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    m = _TS_TEXT.match(text)
    if not m:
        raise _fail(f"cannot read {text!r} as a timestamp")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    try:
        dt = datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
            micros, tzinfo=UTC,
        )
    except ValueError:
        raise _fail(f"cannot read {text!r} as a timestamp") from None
    if zone and zone.upper() not in ("Z", "UTC"):
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        dt = dt - sign * offset
    return dt


def _from_epoch(v: int | float, per_second: int) -> datetime:
    if isinstance(v, int) and per_second == 1000:  # epoch ms: exact integer arithmetic
        try:
            return _EPOCH + timedelta(milliseconds=v)
        except OverflowError:
            raise _fail(f"{v} is out of the timestamp range") from None
    if isinstance(v, float) and not math.isfinite(v):
        raise _fail(f"cannot use {v} as a time")
    micros = math.floor(Decimal(repr(v) if isinstance(v, float) else v) * 1_000_000 / per_second)
    try:
        return _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        raise _fail(f"{v} is out of the timestamp range") from None


def _epoch_micros(ts: datetime) -> int:
    delta = ts - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _boolean(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float):
        return v != 0
    if isinstance(v, str):
        lowered = v.strip().lower()
        if lowered in ("t", "true", "y", "yes", "1"):
            return True
        if lowered in ("f", "false", "n", "no", "0"):
            return False
    raise _fail(f"cannot read {v!r} as a boolean")


def _check_int(v: int, type_name: str = "bigint") -> int:
    """ANSI: overflow is an error. Otherwise two's-complement wrap-around, as the JVM does."""
    low, high = _INT_RANGES[type_name]
    if not low <= v <= high:
        if _ANSI.get():
            raise _fail(f"{v} overflows {type_name.upper()}")
        span = high - low + 1
        return (v - low) % span + low
    return v


def _saturate(v: float, type_name: str) -> int:
    """Spark without ANSI casts a double to INT/BIGINT saturating (Scala ``toInt``/``toLong``)
    and to SMALLINT/TINYINT via INT, wrapping."""
    if _ANSI.get():
        return _check_int(int(v), type_name)
    if math.isnan(v):
        return 0
    wide = "bigint" if type_name == "bigint" else "int"
    low, high = _INT_RANGES[wide]
    clamped = high if v >= high else low if v <= low else int(v)
    return _check_int(clamped, type_name)


def _float32(v: float) -> float:
    """Round a double to the nearest 32-bit float (Spark FLOAT), overflowing to infinity."""
    try:
        return float(struct.unpack("f", struct.pack("f", v))[0])
    except OverflowError:
        return math.copysign(math.inf, v)


def _cast(v: Any, target: str) -> Any:
    if v is None:
        return None
    if target == "string":
        return _string(v)
    if target in _INT_RANGES:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, datetime):
            return _check_int(math.floor(_epoch_micros(v) / 1_000_000), target)
        if isinstance(v, float):
            if not math.isfinite(v) and _ANSI.get():
                raise _fail(f"cannot cast {v} to {target.upper()}")
            return _saturate(v, target)
        if isinstance(v, str):
            text = v.strip()
            if _INT_TEXT.fullmatch(text):
                number = int(text)
            elif _ANSI.get() or not _DECIMAL_TEXT.fullmatch(text):
                raise _fail(f"cannot cast {v!r} to {target.upper()}")  # ANSI: '2.7' is no int
            else:
                number = int(Decimal(text))  # without ANSI: '2.7' -> 2
            low, high = _INT_RANGES[target]
            if not low <= number <= high:  # text out of range is invalid in both modes
                raise _fail(f"{text} overflows {target.upper()}")
            return number
        if isinstance(v, int):
            return _check_int(v, target)
    if target == "double":
        if isinstance(v, bool):
            return 1.0 if v else 0.0
        if isinstance(v, int | float):
            return float(v)
        if isinstance(v, datetime):
            return _epoch_micros(v) / 1_000_000
        if isinstance(v, str):
            text = v.strip()
            special = {"nan": math.nan, "infinity": math.inf, "inf": math.inf,
                       "-infinity": -math.inf, "-inf": -math.inf, "+infinity": math.inf}
            if text.lower() in special:
                return special[text.lower()]
            try:
                return float(text)
            except ValueError:
                raise _fail(f"cannot cast {v!r} to DOUBLE") from None
    if target == "float":
        return _float32(_cast(v, "double"))
    if target == "boolean":
        if isinstance(v, datetime):
            raise _fail("cannot cast a timestamp to BOOLEAN")
        return _boolean(v)
    if target == "timestamp":
        if isinstance(v, datetime):
            return _timestamp(v)
        if isinstance(v, bool):
            raise _fail("cannot cast a boolean to TIMESTAMP")
        if isinstance(v, int | float):
            return _from_epoch(v, 1)  # Spark: numbers are seconds since the epoch
        if isinstance(v, str):
            return _parse_ts(v)
    raise _fail(f"cannot cast a {type(v).__name__} to {target.upper()}")
