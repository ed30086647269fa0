"""Java (Spark) date-time patterns such as ``yyyy-MM-dd HH:mm:ss``: read a timestamp with one,
and format one with it (``to_timestamp``, ``from_unixtime``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from jobs.definition.evaluator.values import _fail

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
