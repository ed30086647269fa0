"""Evaluate an allow-listed SQL expression over a dict record, in Python, without ``eval``.

``tidemark replay`` runs a definition with no Spark, yet must compute the same key, event time
and aggregation inputs as the Spark job. So the sqlglot tree of an expression is compiled once
into nested closures (one per node), and calling the result on a record walks no tree and parses
no text. A bare column name (the common case) compiles to a single ``dict.get``.

Semantics follow Spark 4 as the platform's sessions run it: ANSI mode **off**
(``spark.sql.ansi.enabled=false``, :data:`SPARK_ANSI`) and session time zone UTC:

* null in, null out, for every operator and function, except the null-aware ones
  (``coalesce``, ``IS NULL``, ``<=>``, ``AND``/``OR`` three-valued logic, ``CASE``, ``if``,
  ``concat_ws`` is not offered);
* with ANSI off (the default), a value that cannot be converted (``CAST('x' AS INT)``) or a
  division by zero gives null and an integer overflow wraps around, as in the Spark job; a key
  or event time that is null makes the record a dead letter. Compiled with ``ansi=True`` they
  raise :class:`ExpressionError` instead, as Spark does in ANSI mode (``try_cast`` gives null
  in both modes);
* ``/`` always gives a double, ``div`` an integer truncated toward zero, ``%`` takes the sign
  of the dividend (Java), ``round`` rounds half up;
* timestamps are UTC-aware ``datetime`` values. A record field used where a timestamp is needed
  may be a datetime, an ISO-8601 string or an integer of epoch *milliseconds* (the replay input
  convention); ``CAST(number AS TIMESTAMP)`` reads *seconds*, as Spark does;
* field access ``a.b`` reads nested objects; names are looked up exactly first, then
  case-insensitively (Spark column names are case-insensitive).

The allow-list of :mod:`jobs.definition.sql` is this module's table: a node kind that is not in
:data:`ALLOWED_NODES` (or a function not in :data:`ALLOWED_FUNCTIONS`) is rejected before a
definition is saved, so every accepted expression can be evaluated here.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

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


def compile_expression(sql: str, field: str = "expression", *, ansi: bool = SPARK_ANSI) -> Fn:
    """A function ``record -> value`` for an allow-listed expression (raises
    :class:`DefinitionError` naming ``field`` when ``sql`` is not allowed).

    ``ansi`` picks Spark's ANSI mode semantics (see :data:`SPARK_ANSI`): with it, a value that
    cannot be converted (bad cast, division by zero, overflow) raises :class:`ExpressionError`
    naming the field and the expression; without it (the platform default), such a
    sub-expression is null, as in Spark with ANSI off."""
    from jobs.definition.sql import parse_expression

    tree = parse_expression(sql, field)
    token = _ANSI.set(ansi)
    try:
        inner = build(tree)
    finally:
        _ANSI.reset(token)
    if isinstance(tree, exp.Column) and len(tree.parts) == 1:
        return inner  # fast path: one dict lookup, nothing can raise, no mode to set
    text = sql.strip()

    def run(row: Row) -> Any:
        # the mode is read while evaluating; set it only when the caller's context differs
        mode = _ANSI.set(ansi) if _ANSI.get() is not ansi else None
        try:
            return inner(row)
        except ExpressionError as exc:
            raise ExpressionError(f"{exc.message} (in {text})", field) from None
        except (ArithmeticError, ValueError, TypeError, InvalidOperation) as exc:
            # a value no rule above anticipated (e.g. an infinite float where an integer is
            # needed): still data, so still an ExpressionError (a dead letter), not a crash
            raise ExpressionError(f"cannot evaluate: {exc} (in {text})", field) from None
        finally:
            if mode is not None:
                _ANSI.reset(mode)

    return run


# ---------------------------------------------------------------------------- value coercions


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


# ------------------------------------------------------------------------ Java date patterns

_PATTERN_TOKEN = re.compile(r"'[^']*'|y+|M+|d+|H+|h+|m+|s+|S+|a|X+|x+|Z+|E+|D+|.", re.DOTALL)


def _java_pattern_regex(pattern: str) -> re.Pattern[str]:
    """A regex with named groups for a Spark datetime pattern (``yyyy-MM-dd HH:mm:ss.SSS``)."""
    out: list[str] = []
    used: set[str] = set()
    for tok in _PATTERN_TOKEN.findall(pattern):
        c = tok[0]
        group_for = {"y": "year", "M": "month", "d": "day", "H": "hour", "h": "hour12",
                     "m": "minute", "s": "second", "S": "fraction", "a": "ampm"}
        if tok.startswith("'"):
            out.append(re.escape(tok[1:-1]) if len(tok) > 2 else "'")
            continue
        if c in group_for:
            name = group_for[c]
            if name in used:
                raise _fail(f"pattern letter {c!r} repeats in {pattern!r}")
            used.add(name)
            if c == "y":
                body = r"\d{4}" if len(tok) >= 3 or len(tok) == 1 else r"\d{2}"
                if len(tok) == 1:
                    body = r"\d{1,4}"
            elif c == "M" and len(tok) >= 3:
                body = r"[A-Za-z]+"
            elif c == "S":
                body = rf"\d{{1,{len(tok)}}}"
            elif c == "a":
                body = r"AM|PM|am|pm"
            else:
                body = r"\d{2}" if len(tok) == 2 else r"\d{1,2}"
            out.append(f"(?P<{name}>{body})")
        elif c in "XxZ":
            if "zone" in used:
                raise _fail(f"pattern letter {c!r} repeats in {pattern!r}")
            used.add("zone")
            out.append(r"(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)")
        elif c.isalpha():
            raise _fail(f"pattern letter {c!r} is not supported in {pattern!r}")
        else:
            out.append(re.escape(tok))
    return re.compile("^" + "".join(out) + "$")


_MONTHS = {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}


def _parse_with_pattern(text: str, regex: re.Pattern[str], pattern: str) -> datetime:
    m = regex.match(text.strip())
    if not m:
        raise _fail(f"{text!r} does not match the pattern {pattern!r}")
    g = m.groupdict()
    try:
        year = int(g.get("year") or 1970)
        if g.get("year") and len(g["year"]) == 2:
            year += 2000
        month_text = g.get("month") or "1"
        month = int(month_text) if month_text.isdigit() else _MONTHS[month_text[:3].lower()]
        hour = int(g.get("hour") or 0)
        if g.get("hour12"):
            hour = int(g["hour12"]) % 12 + (12 if (g.get("ampm") or "").lower() == "pm" else 0)
        frac = g.get("fraction") or "0"
        dt = datetime(year, month, int(g.get("day") or 1), hour, int(g.get("minute") or 0),
                      int(g.get("second") or 0), int(frac[:6].ljust(6, "0")), tzinfo=UTC)
    except (ValueError, KeyError):
        raise _fail(f"{text!r} is not a valid time for the pattern {pattern!r}") from None
    zone = g.get("zone")
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        dt -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    return dt


def _format_with_pattern(ts: datetime, pattern: str) -> str:
    ts = ts.astimezone(UTC)
    parts: list[str] = []
    for tok in _PATTERN_TOKEN.findall(pattern):
        c = tok[0]
        n = len(tok)
        if tok.startswith("'"):
            parts.append(tok[1:-1] if n > 2 else "'")
        elif c == "y":
            parts.append(f"{ts.year % 100:02d}" if n == 2 else f"{ts.year:0{max(n, 4)}d}")
        elif c == "M":
            parts.append(ts.strftime("%b") if n == 3 else ts.strftime("%B") if n >= 4
                         else f"{ts.month:0{n}d}")
        elif c == "d":
            parts.append(f"{ts.day:0{n}d}")
        elif c == "H":
            parts.append(f"{ts.hour:0{n}d}")
        elif c == "h":
            parts.append(f"{(ts.hour % 12) or 12:0{n}d}")
        elif c == "m":
            parts.append(f"{ts.minute:0{n}d}")
        elif c == "s":
            parts.append(f"{ts.second:0{n}d}")
        elif c == "S":
            parts.append(f"{ts.microsecond:06d}"[:n].ljust(n, "0"))
        elif c == "a":
            parts.append("AM" if ts.hour < 12 else "PM")
        elif c in "XxZ":
            parts.append("Z" if c == "X" else "+0000" if c == "Z" else "+00")
        elif c.isalpha():
            raise _fail(f"pattern letter {c!r} is not supported in {pattern!r}")
        else:
            parts.append(tok)
    return "".join(parts)


# -------------------------------------------------------------------------------- the compiler

Builder = Callable[[Any], Fn]
_BUILDERS: dict[type[exp.Expr], Builder] = {}


def _builds(*kinds: type[exp.Expr]) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        for kind in kinds:
            _BUILDERS[kind] = fn
        return fn

    return register


def build(node: exp.Expr) -> Fn:
    """Compile one allow-listed node (and its children) into a closure."""
    if isinstance(node, exp.Anonymous):
        name = str(node.name).lower()
        anon = ALLOWED_FUNCTIONS.get(name)
        if anon is None:
            raise _fail(f"function {name} is not allowed")
        return anon(node) if _ANSI.get() else _null_on_error(anon(node))
    builder = _BUILDERS.get(type(node))
    if builder is None:
        raise _fail(f"{type(node).__name__} is not allowed in an expression")
    fn = builder(node)
    if _ANSI.get() or type(node) in _CANNOT_FAIL:
        return fn
    return _null_on_error(fn)


def _null_on_error(fn: Fn) -> Fn:
    """Spark without ANSI: a sub-expression that cannot be computed is null (and its parent
    carries on with null), rather than an error."""

    def run(row: Row) -> Any:
        try:
            return fn(row)
        except ExpressionError:
            return None

    return run


def _lookup(row: Any, name: str) -> Any:
    if not isinstance(row, Mapping):
        return None
    if name in row:
        return row[name]
    lowered = name.lower()
    for k, v in row.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return None


@_builds(exp.Column)
def _column(node: exp.Column) -> Fn:
    parts = [p.name for p in node.parts]
    if len(parts) == 1:
        name = parts[0]

        def get(row: Row) -> Any:
            v = row.get(name)
            if v is None and name not in row:
                return _lookup(row, name)
            return v

        return get

    def get_path(row: Row) -> Any:
        value: Any = row
        for part in parts:
            value = _lookup(value, part)
            if value is None:
                return None
        return value

    return get_path


@_builds(exp.Dot)
def _dot(node: exp.Dot) -> Fn:
    base = build(node.this)
    name = node.expression.name
    if not isinstance(node.expression, exp.Identifier):
        raise _fail("only field names may follow '.'")
    return lambda row: _lookup(base(row), name)


@_builds(exp.Bracket)
def _map_value(node: exp.Bracket) -> Fn:
    """``m['name']``: a map column's value by its key (a string literal), exact and
    case-sensitive as Spark's map lookup; an absent key is null. Only maps take a subscript
    (arrays would need Spark's index rules), which ``sql.check_expression`` checks."""
    subscripts = node.expressions
    if not isinstance(node.this, exp.Column) or len(subscripts) != 1 or not (
            isinstance(subscripts[0], exp.Literal) and subscripts[0].is_string):
        raise _fail("a subscript [] must be a map column's key as a string literal, "
                    "as in kafka_headers['name']")
    base = build(node.this)
    key = str(subscripts[0].this)

    def get(row: Row) -> Any:
        m = base(row)
        return m.get(key) if isinstance(m, Mapping) else None

    return get


@_builds(exp.Paren)
def _paren(node: exp.Paren) -> Fn:
    return build(node.this)


@_builds(exp.Literal)
def _literal(node: exp.Literal) -> Fn:
    if node.is_string:
        text = str(node.this)
        return lambda row: text
    raw = str(node.this)
    value: int | float
    try:
        try:
            value = int(raw)
        except ValueError:
            if raw.upper().endswith(("L", "S", "Y")) and raw[:-1].isdigit():
                value = int(raw[:-1])
            else:
                value = float(raw.rstrip("DdFf").rstrip("B").rstrip("b"))
    except ValueError:  # sqlglot reads `0e` as a number; nothing can read it as one
        raise _fail(f"cannot read {raw[:40]!r} as a number") from None
    return lambda row: value


@_builds(exp.Boolean)
def _bool(node: exp.Boolean) -> Fn:
    value = bool(node.this)
    return lambda row: value


@_builds(exp.Null)
def _null(node: exp.Null) -> Fn:
    return lambda row: None


# arithmetic ------------------------------------------------------------------------------------


def _binary(node: exp.Binary, op: Callable[[Any, Any], Any]) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> Any:
        a = left(row)
        if a is None:
            return None
        b = right(row)
        if b is None:
            return None
        return op(a, b)

    return run


def _int_result(v: int | float) -> int | float:
    if isinstance(v, int):
        return _check_int(v)
    return v


@_builds(exp.Add)
def _add(node: exp.Add) -> Fn:
    return _binary(node, lambda a, b: _int_result(_number(a) + _number(b)))


@_builds(exp.Sub)
def _sub(node: exp.Sub) -> Fn:
    return _binary(node, lambda a, b: _int_result(_number(a) - _number(b)))


@_builds(exp.Mul)
def _mul(node: exp.Mul) -> Fn:
    return _binary(node, lambda a, b: _int_result(_number(a) * _number(b)))


def _divide(a: Any, b: Any) -> float:
    x, y = _number(a), _number(b)
    if y == 0:
        raise _fail("division by zero")
    return float(x) / float(y)


@_builds(exp.Div)
def _div(node: exp.Div) -> Fn:
    return _binary(node, _divide)


def _int_divide(a: Any, b: Any) -> int:
    x, y = _number(a), _number(b)
    if y == 0:
        raise _fail("division by zero")
    if isinstance(x, int) and isinstance(y, int):
        q = abs(x) // abs(y)
        return _check_int(q if (x >= 0) == (y >= 0) else -q)
    fx, fy = float(x), float(y)
    if not (math.isfinite(fx) and math.isfinite(fy)):
        raise _fail(f"cannot divide {fx} by {fy} to an integer")
    return _check_int(int(Decimal(repr(fx)) / Decimal(repr(fy))))


@_builds(exp.IntDiv)
def _intdiv(node: exp.IntDiv) -> Fn:
    return _binary(node, _int_divide)


def _remainder(a: Any, b: Any) -> int | float:
    x, y = _number(a), _number(b)
    if y == 0:
        raise _fail("division by zero")
    if isinstance(x, int) and isinstance(y, int):
        r = abs(x) % abs(y)
        return r if x >= 0 else -r
    if not math.isfinite(x) or math.isnan(y):
        return math.nan  # Java: Infinity % y and x % NaN are NaN
    return math.fmod(x, y)


@_builds(exp.Mod)
def _mod(node: exp.Mod) -> Fn:
    return _binary(node, _remainder)


@_builds(exp.Neg)
def _neg(node: exp.Neg) -> Fn:
    inner = build(node.this)

    def run(row: Row) -> Any:
        v = inner(row)
        return None if v is None else _int_result(-_number(v))

    return run


# comparison and logic ---------------------------------------------------------------------------


def _comparable(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, datetime) or isinstance(b, datetime):
        return _timestamp(a), _timestamp(b)
    if isinstance(a, bool) and isinstance(b, bool):
        return a, b
    if isinstance(a, bool) or isinstance(b, bool):
        return _boolean(a), _boolean(b)
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    if isinstance(a, int | float | str) and isinstance(b, int | float | str):
        return _number(a), _number(b)
    if type(a) is type(b):
        return a, b
    raise _fail(f"cannot compare a {type(a).__name__} with a {type(b).__name__}")


def _compare(node: exp.Binary, test: Callable[[Any, Any], bool]) -> Fn:
    def op(a: Any, b: Any) -> bool:
        x, y = _comparable(a, b)
        try:
            return test(x, y)
        except TypeError:
            raise _fail(f"cannot compare {a!r} with {b!r}") from None

    return _binary(node, op)


@_builds(exp.EQ)
def _eq(node: exp.EQ) -> Fn:
    return _compare(node, lambda a, b: bool(a == b))


@_builds(exp.NEQ)
def _neq(node: exp.NEQ) -> Fn:
    return _compare(node, lambda a, b: bool(a != b))


@_builds(exp.GT)
def _gt(node: exp.GT) -> Fn:
    return _compare(node, lambda a, b: bool(a > b))


@_builds(exp.GTE)
def _gte(node: exp.GTE) -> Fn:
    return _compare(node, lambda a, b: bool(a >= b))


@_builds(exp.LT)
def _lt(node: exp.LT) -> Fn:
    return _compare(node, lambda a, b: bool(a < b))


@_builds(exp.LTE)
def _lte(node: exp.LTE) -> Fn:
    return _compare(node, lambda a, b: bool(a <= b))


@_builds(exp.NullSafeEQ)
def _null_safe_eq(node: exp.NullSafeEQ) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> bool:
        a, b = left(row), right(row)
        if a is None or b is None:
            return a is None and b is None
        x, y = _comparable(a, b)
        return bool(x == y)

    return run


def _truth(v: Any) -> bool | None:
    """A condition: Spark accepts only booleans (and text it can cast), never numbers."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return _boolean(v)
    raise _fail(f"a condition must be a boolean, got {v!r}")


@_builds(exp.And)
def _and(node: exp.And) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> bool | None:
        a = _truth(left(row))
        if a is False:
            return False
        b = _truth(right(row))
        if b is False:
            return False
        return None if a is None or b is None else True

    return run


@_builds(exp.Or)
def _or(node: exp.Or) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> bool | None:
        a = _truth(left(row))
        if a is True:
            return True
        b = _truth(right(row))
        if b is True:
            return True
        return None if a is None or b is None else False

    return run


@_builds(exp.Not)
def _not(node: exp.Not) -> Fn:
    inner = build(node.this)

    def run(row: Row) -> bool | None:
        v = _truth(inner(row))
        return None if v is None else not v

    return run


@_builds(exp.Is)
def _is(node: exp.Is) -> Fn:
    inner = build(node.this)
    target = node.expression
    if isinstance(target, exp.Null):
        return lambda row: inner(row) is None
    if isinstance(target, exp.Boolean):
        wanted = bool(target.this)
        return lambda row: _truth(inner(row)) is wanted
    raise _fail("IS must be followed by NULL, TRUE or FALSE")


@_builds(exp.In)
def _in(node: exp.In) -> Fn:
    if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
        raise _fail("IN takes a list of values")
    value = build(node.this)
    options = [build(e) for e in node.expressions]

    def run(row: Row) -> bool | None:
        v = value(row)
        if v is None:
            return None
        saw_null = False
        for option in options:
            o = option(row)
            if o is None:
                saw_null = True
                continue
            x, y = _comparable(v, o)
            if x == y:
                return True
        return None if saw_null else False

    return run


@_builds(exp.Between)
def _between(node: exp.Between) -> Fn:
    value, low, high = build(node.this), build(node.args["low"]), build(node.args["high"])

    def run(row: Row) -> bool | None:
        v, lo, hi = value(row), low(row), high(row)
        above = None if v is None or lo is None else bool(_ge(v, lo))
        below = None if v is None or hi is None else bool(_ge(hi, v))
        if above is False or below is False:
            return False
        return None if above is None or below is None else True

    return run


def _ge(a: Any, b: Any) -> bool:
    x, y = _comparable(a, b)
    try:
        return bool(x >= y)
    except TypeError:
        raise _fail(f"cannot compare {a!r} with {b!r}") from None


def _like_regex(pattern: str, escape: str = "\\") -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


@_builds(exp.Like, exp.ILike)
def _like(node: exp.Like | exp.ILike) -> Fn:
    insensitive = isinstance(node, exp.ILike)
    value, pattern = build(node.this), node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        compiled = _like_regex(pattern.this)
        flags = re.IGNORECASE if insensitive else 0
        fixed = re.compile(compiled.pattern, compiled.flags | flags)

        def run_fixed(row: Row) -> bool | None:
            v = value(row)
            return None if v is None else fixed.fullmatch(_string(v)) is not None

        return run_fixed
    dynamic = build(pattern)

    def run(row: Row) -> bool | None:
        v, p = value(row), dynamic(row)
        if v is None or p is None:
            return None
        rx = _like_regex(_string(p))
        flags = re.IGNORECASE if insensitive else 0
        return re.fullmatch(rx.pattern, _string(v), flags | re.DOTALL) is not None

    return run


# conditionals ----------------------------------------------------------------------------------


@_builds(exp.Case)
def _case(node: exp.Case) -> Fn:
    operand = build(node.this) if node.this is not None else None
    branches = [(build(i.this), build(i.args["true"])) for i in node.args.get("ifs") or []]
    default = build(node.args["default"]) if node.args.get("default") is not None else None

    def run(row: Row) -> Any:
        if operand is not None:
            v = operand(row)
            for when, then in branches:
                w = when(row)
                if v is not None and w is not None:
                    x, y = _comparable(v, w)
                    if x == y:
                        return then(row)
        else:
            for when, then in branches:
                if _truth(when(row)) is True:
                    return then(row)
        return default(row) if default is not None else None

    return run


@_builds(exp.If)
def _if(node: exp.If) -> Fn:
    cond, then = build(node.this), build(node.args["true"])
    other = build(node.args["false"]) if node.args.get("false") is not None else None

    def run(row: Row) -> Any:
        if _truth(cond(row)) is True:
            return then(row)
        return other(row) if other is not None else None

    return run


@_builds(exp.Coalesce)
def _coalesce(node: exp.Coalesce) -> Fn:
    parts = [build(node.this)] + [build(e) for e in node.expressions]

    def run(row: Row) -> Any:
        for part in parts:
            v = part(row)
            if v is not None:
                return v
        return None

    return run


@_builds(exp.Nullif)
def _nullif(node: exp.Nullif) -> Fn:
    left, right = build(node.this), build(node.expression)

    def run(row: Row) -> Any:
        a = left(row)
        if a is None:
            return None
        b = right(row)
        if b is None:
            return a
        x, y = _comparable(a, b)
        return None if x == y else a

    return run


# casts -----------------------------------------------------------------------------------------


@_builds(exp.Cast, exp.TryCast)
def _cast_node(node: exp.Cast) -> Fn:
    to = node.args.get("to")
    if not isinstance(to, exp.DataType):
        raise _fail("CAST needs a target type")
    type_name = to.this.name if hasattr(to.this, "name") else str(to.this)
    target = _CAST_TYPES.get(str(type_name).upper())
    if target is None or to.expressions:
        raise _fail(
            f"CAST to {to.sql(dialect='spark')} is not supported (use STRING, TINYINT, SMALLINT, "
            "INT, BIGINT, FLOAT, DOUBLE, BOOLEAN or TIMESTAMP)"
        )
    if node.args.get("format"):
        raise _fail("CAST ... FORMAT is not supported")
    inner = build(node.this)
    safe = isinstance(node, exp.TryCast) and bool(node.args.get("safe"))

    if safe:
        def run_safe(row: Row) -> Any:
            try:
                return _cast(inner(row), target)
            except ExpressionError:
                return None

        return run_safe
    return lambda row: _cast(inner(row), target)


# strings -----------------------------------------------------------------------------------------


def _unary(node: exp.Func, op: Callable[[Any], Any]) -> Fn:
    inner = build(node.this)

    def run(row: Row) -> Any:
        v = inner(row)
        return None if v is None else op(v)

    return run


@_builds(exp.Lower)
def _lower(node: exp.Lower) -> Fn:
    return _unary(node, lambda v: _string(v).lower())


@_builds(exp.Upper)
def _upper(node: exp.Upper) -> Fn:
    return _unary(node, lambda v: _string(v).upper())


@_builds(exp.Length)
def _length(node: exp.Length) -> Fn:
    return _unary(node, lambda v: len(_string(v)))


@_builds(exp.Concat, exp.DPipe)
def _concat(node: exp.Expr) -> Fn:
    if isinstance(node, exp.DPipe):
        parts = [build(node.this), build(node.expression)]
    else:
        parts = [build(e) for e in node.expressions]

    def run(row: Row) -> str | None:
        out: list[str] = []
        for part in parts:
            v = part(row)
            if v is None:
                return None
            out.append(_string(v))
        return "".join(out)

    return run


def _substring_sql(text: str, pos: int, length: int | None) -> str:
    """Spark's ``UTF8String.substringSQL``: 1-based, 0 acts as 1, negative counts from the end."""
    n = len(text)
    start = pos - 1 if pos > 0 else (n + pos if pos < 0 else 0)
    end = n if length is None else start + length
    start = max(start, 0)
    if start >= end:
        return ""
    return text[start:end]


def _whole(v: Any) -> int:
    """An integer argument (positions, lengths); Spark truncates doubles toward zero."""
    n = _number(v)
    if isinstance(n, float):
        if not math.isfinite(n):
            raise _fail(f"{n} is not a valid position or length")
        return int(n)
    return n


@_builds(exp.Substring)
def _substring(node: exp.Substring) -> Fn:
    value = build(node.this)
    start = build(node.args["start"]) if node.args.get("start") is not None else (lambda row: 1)
    length = build(node.args["length"]) if node.args.get("length") is not None else None

    def run(row: Row) -> str | None:
        v, p = value(row), start(row)
        n = length(row) if length is not None else None
        if v is None or p is None or (length is not None and n is None):
            return None
        return _substring_sql(_string(v), _whole(p), None if n is None else _whole(n))

    return run


@_builds(exp.Trim)
def _trim(node: exp.Trim) -> Fn:
    value = build(node.this)
    chars = build(node.expression) if node.args.get("expression") is not None else None
    position = str(node.args.get("position") or "BOTH").upper()
    if node.args.get("collation"):
        raise _fail("TRIM ... COLLATE is not supported")

    def run(row: Row) -> str | None:
        v = value(row)
        if v is None:
            return None
        c = " "
        if chars is not None:
            cv = chars(row)
            if cv is None:
                return None
            c = _string(cv)
        text = _string(v)
        if position == "LEADING":
            return text.lstrip(c)
        if position == "TRAILING":
            return text.rstrip(c)
        return text.strip(c)

    return run


# math ---------------------------------------------------------------------------------------------


@_builds(exp.Abs)
def _abs(node: exp.Abs) -> Fn:
    return _unary(node, lambda v: _int_result(abs(_number(v))))


def _floor_ceil(node: exp.Func, op: Callable[[float], int]) -> Fn:
    if node.args.get("decimals") is not None or node.args.get("to") is not None:
        raise _fail(f"{node.sql_name().lower()} with a scale is not supported")

    def run(v: Any) -> int:
        x = _number(v)
        if isinstance(x, int):
            return x
        if not math.isfinite(x):
            raise _fail(f"cannot round {x} to an integer")
        return _check_int(op(x))

    return _unary(node, run)


@_builds(exp.Floor)
def _floor(node: exp.Floor) -> Fn:
    return _floor_ceil(node, math.floor)


@_builds(exp.Ceil)
def _ceil(node: exp.Ceil) -> Fn:
    return _floor_ceil(node, math.ceil)


def _round_half_up(x: int | float, scale: int) -> int | float:
    if isinstance(x, int):
        if scale >= 0:
            return x
        q = Decimal(x).scaleb(scale).quantize(Decimal(1), rounding=ROUND_HALF_UP).scaleb(-scale)
        return int(q)
    if not math.isfinite(x):
        return x
    quantum = Decimal(1).scaleb(-scale)
    return float(Decimal(repr(x)).quantize(quantum, rounding=ROUND_HALF_UP))


@_builds(exp.Round)
def _round(node: exp.Round) -> Fn:
    scale_node = node.args.get("decimals")
    scale = 0
    if scale_node is not None:
        if not (isinstance(scale_node, exp.Literal) and not scale_node.is_string) and not (
            isinstance(scale_node, exp.Neg) and isinstance(scale_node.this, exp.Literal)
        ):
            raise _fail("round: the scale must be an integer literal")
        scale = int(scale_node.sql())
    return _unary(node, lambda v: _round_half_up(_number(v), scale))


# time -------------------------------------------------------------------------------------------


def _literal_string(node: exp.Expr | None, what: str) -> str:
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise _fail(f"{what} must be a string literal")
    return str(node.this)


def _original_format(node: exp.Expr) -> str | None:
    """The Java pattern as the user wrote it: sqlglot keeps formats in strftime form
    internally but renders them back in Spark's form (``FUNC(arg, 'pattern')``)."""
    rendered = node.sql(dialect="spark")
    m = re.search(r",\s*'((?:[^'\\]|\\.)*)'\s*\)$", rendered)
    return m.group(1).replace("\\'", "'") if m else None


@_builds(exp.StrToTime)
def _str_to_time(node: exp.StrToTime) -> Fn:
    value = build(node.this)
    if not isinstance(node.args.get("format"), exp.Literal):
        raise _fail("to_timestamp: the format must be a string literal")
    pattern = _original_format(node)
    if pattern is None:
        raise _fail("to_timestamp: the format must be a string literal")
    regex = _java_pattern_regex(pattern)

    def run(row: Row) -> datetime | None:
        v = value(row)
        if v is None:
            return None
        if isinstance(v, datetime):
            return _timestamp(v)
        return _parse_with_pattern(_string(v), regex, pattern)

    return run


@_builds(exp.UnixToStr)
def _from_unixtime(node: exp.UnixToStr) -> Fn:
    value = build(node.this)
    fmt = node.args.get("format")
    pattern = "yyyy-MM-dd HH:mm:ss"
    if fmt is not None:
        if not isinstance(fmt, exp.Literal):
            raise _fail("from_unixtime: the format must be a string literal")
        pattern = _original_format(node) or pattern
    _java_pattern_regex(pattern)  # validates the letters

    def run(row: Row) -> str | None:
        v = value(row)
        if v is None:
            return None
        return _format_with_pattern(_from_epoch(_number(v), 1), pattern)

    return run


@_builds(exp.UnixMillis)
def _unix_millis(node: exp.UnixMillis) -> Fn:
    return _unary(node, lambda v: _epoch_micros(_timestamp(v)) // 1000)


@_builds(exp.UnixSeconds)
def _unix_seconds(node: exp.UnixSeconds) -> Fn:
    return _unary(node, lambda v: _epoch_micros(_timestamp(v)) // 1_000_000)


_TRUNC_UNITS = {
    "YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "MONTH": "month",
    "MM": "month", "MON": "month", "WEEK": "week", "DAY": "day", "DD": "day", "HOUR": "hour",
    "MINUTE": "minute", "SECOND": "second", "MILLISECOND": "millisecond",
    "MICROSECOND": "microsecond",
}


def _truncate(ts: datetime, unit: str) -> datetime:
    ts = ts.astimezone(UTC)
    if unit == "year":
        return ts.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "quarter":
        month = 3 * ((ts.month - 1) // 3) + 1
        return ts.replace(month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "month":
        return ts.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        day = ts.replace(hour=0, minute=0, second=0, microsecond=0)
        return day - timedelta(days=day.weekday())
    if unit == "day":
        return ts.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "hour":
        return ts.replace(minute=0, second=0, microsecond=0)
    if unit == "minute":
        return ts.replace(second=0, microsecond=0)
    if unit == "second":
        return ts.replace(microsecond=0)
    if unit == "millisecond":
        return ts.replace(microsecond=ts.microsecond // 1000 * 1000)
    return ts


@_builds(exp.TimestampTrunc)
def _date_trunc(node: exp.TimestampTrunc) -> Fn:
    unit_node = node.args.get("unit")
    unit_text = unit_node.name.upper() if unit_node is not None else ""
    unit = _TRUNC_UNITS.get(unit_text)
    if unit is None:
        raise _fail(
            f"date_trunc: unknown unit {unit_text!r} (use YEAR, QUARTER, MONTH, WEEK, DAY, "
            "HOUR, MINUTE, SECOND or MILLISECOND)"
        )
    return _unary(node, lambda v: _truncate(_timestamp(v), unit))


def _timestamp_millis(node: exp.Anonymous) -> Fn:
    return _anon_unary(node, "timestamp_millis", lambda v: _from_epoch(_exact_int(v), 1000))


def _timestamp_seconds(node: exp.Anonymous) -> Fn:
    return _anon_unary(node, "timestamp_seconds", lambda v: _from_epoch(_number(v), 1))


def _exact_int(v: Any) -> int:
    n = _number(v)
    if isinstance(n, float):
        if not n.is_integer():
            raise _fail(f"timestamp_millis needs an integer, got {n}")
        return int(n)
    return n


def _anon_unary(node: exp.Anonymous, name: str, op: Callable[[Any], Any]) -> Fn:
    if len(node.expressions) != 1:
        raise _fail(f"{name} takes exactly one argument")
    inner = build(node.expressions[0])

    def run(row: Row) -> Any:
        v = inner(row)
        return None if v is None else op(v)

    return run


# JSON --------------------------------------------------------------------------------------------


@_builds(exp.JSONExtractScalar, exp.JSONExtract)
def _get_json_object(node: exp.Expr) -> Fn:
    value = build(node.this)
    path = node.expression
    if not isinstance(path, exp.JSONPath):
        raise _fail("get_json_object: the path must be a string literal such as '$.a.b[0]'")
    steps: list[str | int] = []
    for part in path.expressions:
        if isinstance(part, exp.JSONPathRoot):
            continue
        if isinstance(part, exp.JSONPathKey):
            steps.append(str(part.this))
        elif isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int):
            steps.append(part.this)
        else:
            raise _fail("get_json_object: only $.field and [index] steps are supported")

    def run(row: Row) -> str | None:
        v = value(row)
        if v is None:
            return None
        if isinstance(v, str):
            try:
                doc: Any = json.loads(v)
            except ValueError:
                return None
        else:
            doc = v
        for step in steps:
            if isinstance(step, int):
                if not isinstance(doc, list) or step >= len(doc):
                    return None
                doc = doc[step]
            else:
                if not isinstance(doc, dict) or step not in doc:
                    return None
                doc = doc[step]
        if doc is None:
            return None
        if isinstance(doc, str):
            return doc
        return json.dumps(doc, separators=(",", ":"))

    return run


SUPPORTED_FUNCTIONS: tuple[str, ...] = (
    "abs", "ceil", "ceiling", "char_length", "character_length", "coalesce", "concat",
    "date_trunc", "floor", "from_unixtime", "get_json_object", "if", "ifnull", "lcase", "length",
    "lower", "ltrim", "mod", "nullif", "nvl", "round", "rtrim", "substr", "substring",
    "timestamp_millis", "timestamp_seconds", "to_timestamp", "trim", "try_cast", "ucase",
    "unix_millis", "unix_seconds", "upper",
)
"""The function names users may write (for messages and docs; tests check each one)."""

ALLOWED_FUNCTIONS: dict[str, Callable[[exp.Anonymous], Fn]] = {
    "timestamp_millis": _timestamp_millis,
    "timestamp_seconds": _timestamp_seconds,
}
"""Functions sqlglot does not model as their own node kind, by lower-case name."""

_CANNOT_FAIL: frozenset[type[exp.Expr]] = frozenset(
    {exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.Paren, exp.Coalesce, exp.Is}
)

ALLOWED_NODES: frozenset[type[exp.Expr]] = frozenset(_BUILDERS) | {
    exp.Identifier, exp.DataType, exp.DataTypeParam, exp.Var, exp.JSONPath, exp.JSONPathRoot,
    exp.JSONPathKey, exp.JSONPathSubscript,
}
"""Node kinds an expression may contain; the helper kinds (identifiers, type names, date units,
JSON path steps) are only accepted where their parent's builder reads them."""
