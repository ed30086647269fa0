"""Durations: the human forms a definition may use, and the one form everything else uses.

Accepted: ``250ms``, ``10s``, ``1.5s``, ``2m``, ``1h``, ``1d``, ``1w``, compounds such as
``1h30m``, ISO-8601 durations (``PT2M``, ``P1D``, ``PT0.5S``, ``P1DT2H``), an integer of
milliseconds (``120000`` or ``"120000"``) and, only where the caller allows it, ``infinite``
(:data:`jobs.definition.model.INFINITE`). The result is always an ``int`` of milliseconds.

Rejected, with a message that says why: negative values, fractions of a millisecond, booleans
(YAML turns ``yes`` into ``True``; a duration of ``True`` is a typo, not 1 ms), months and years
(not a fixed length), empty strings and anything else.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from jobs.definition.errors import DefinitionError
from jobs.definition.limits import MAX_DURATION_DIGITS
from jobs.definition.model import INFINITE

_UNIT_MS: dict[str, int] = {
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 7 * 86_400_000,
}
_HUMAN_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.IGNORECASE)
_HUMAN = re.compile(r"^(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)\s*)+$", re.IGNORECASE)
_ISO = re.compile(
    r"^P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)
_ISO_UNITS = {"w": "w", "d": "d", "h": "h", "m": "m", "s": "s"}

EXAMPLES = "e.g. 250ms, 10s, 2m, 1h, 1d, PT2M or an integer of milliseconds"


def parse_duration(value: object, field: str = "duration", *, allow_infinite: bool = False) -> int:
    """Milliseconds from any accepted duration form; raises :class:`DefinitionError` naming
    ``field`` otherwise. ``allow_infinite`` admits ``infinite`` (returned as ``INFINITE``)."""
    if isinstance(value, bool) or value is None:
        raise DefinitionError(f"expected a duration ({EXAMPLES}), got {_show(value)}", field)
    if isinstance(value, int):
        return _non_negative(value, field)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DefinitionError(f"expected a duration ({EXAMPLES}), got {value!r}", field)
        if value != int(value):
            raise DefinitionError(
                f"{value!r} is not a whole number of milliseconds", field
            )
        return _non_negative(int(value), field)
    if not isinstance(value, str):
        raise DefinitionError(f"expected a duration ({EXAMPLES}), got {_show(value)}", field)
    text = value.strip()
    if not text:
        raise DefinitionError(f"expected a duration ({EXAMPLES}), got an empty string", field)
    if text.lower() == "infinite":
        if allow_infinite:
            return INFINITE
        raise DefinitionError("infinite is not allowed here", field)
    if text.startswith("-"):
        raise DefinitionError(f"must not be negative, got {_clip(text)}", field)
    longest = max((len(run) for run in re.findall(r"\d+", text)), default=0)
    if longest > MAX_DURATION_DIGITS:
        raise DefinitionError(
            f"a number of {longest} digits is too large for a duration (at most "
            f"{MAX_DURATION_DIGITS} digits, and less than {INFINITE} ms; use infinite)", field)
    if re.fullmatch(r"\+?\d+", text):
        return _non_negative(int(text), field)
    if _HUMAN.match(text):
        total = Decimal(0)
        for number, unit in _HUMAN_PART.findall(text):
            total += Decimal(number) * _UNIT_MS[unit.lower()]
        return _whole_ms(total, text, field)
    iso = _ISO.match(text)
    if iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        total = Decimal(0)
        for group, unit in _ISO_UNITS.items():
            part = iso.group(group)
            if part is not None:
                total += Decimal(part) * _UNIT_MS[unit]
        return _whole_ms(total, text, field)
    if re.match(r"^P.*[YM]", text.upper()) and "T" not in text.upper().split("M")[0]:
        raise DefinitionError(
            f"{text!r}: months and years have no fixed length; use days", field
        )
    raise DefinitionError(f"cannot read {_clip(text)} as a duration ({EXAMPLES})", field)


def format_duration(ms: int) -> str:
    """The shortest human form that :func:`parse_duration` reads back to ``ms``:
    ``600000`` -> ``10m``, ``5400000`` -> ``1h30m``, ``1500`` -> ``1s500ms``, ``0`` -> ``0s``."""
    if ms == INFINITE:
        return "infinite"
    if ms == 0:
        return "0s"
    sign = "-" if ms < 0 else ""
    rest = abs(ms)
    parts: list[str] = []
    for unit in ("d", "h", "m", "s", "ms"):
        size = _UNIT_MS[unit]
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return sign + "".join(parts)


def _whole_ms(total: Decimal, text: str, field: str) -> int:
    try:
        whole = int(total)
    except (InvalidOperation, OverflowError) as exc:  # pragma: no cover - regex prevents it
        raise DefinitionError(f"cannot read {text!r} as a duration", field) from exc
    if total != whole:
        raise DefinitionError(f"{text!r} is not a whole number of milliseconds", field)
    return _non_negative(whole, field)


def _non_negative(ms: int, field: str) -> int:
    shown = (str(ms) if ms.bit_length() < 128
             else f"a number of about {int(ms.bit_length() * 0.30103) + 1} digits")
    if ms < 0:
        raise DefinitionError(f"must not be negative, got {shown}", field)
    if ms >= INFINITE:
        raise DefinitionError(f"{shown} ms is too large (use infinite)", field)
    return ms


def _clip(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def _show(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "nothing (null)"
    return f"a {type(value).__name__}"
