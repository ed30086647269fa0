"""Building blocks of hostile inputs, for the hypothesis strategies and the atheris seeds:
the shapes that crashed or stalled tidemark before the limits (deep nesting, long chains, huge
numbers, invalid UTF-8, lone surrogates, out-of-range instants)."""

from __future__ import annotations

DEFINITION_FRAGMENTS = [
    "name: x\n", "window: ", "{type: tumbling, size: ", "2m}", "\n", "key: ", "team", "user",
    "`current_user`", "aggregations: [", "{name: n, fn: count}", "]", "{", "}", "[", "]",
    "size: ", "\"99999999999999999999d\"", "9" * 120, "P9999999999999999999999D", "&a ", "*a",
    "source: {kind: files, path: p, format: parquet}\n", "schema: ", "STRUCT<a: ", ">",
    "event_time: ", "(", ")", "lower(", "CASE WHEN a THEN ", " END", " + 1", " AND b", ": ",
    ", ", "- ", "'", "\"", "\\", "#", "!!binary ", "? ", "null", "~", "\t", "\ud800", "\x00",
]
EXPRESSION_FRAGMENTS = [
    "team", "score", "user", "`current_date`", "current_time", "(", ")", "lower(", "upper(",
    "coalesce(", ", ", "CASE WHEN ", " THEN ", " ELSE ", " END", " + ", " - ", " * ", " / ",
    " AND ", " OR ", "NOT ", "1", "1e308", "9" * 50, "'x'", "CAST(", " AS INT)", "[", "]",
    "meta.region", "rand()", "reflect(", ";", "--", "/*", "*/", "`", "'", "\"", "\\", "\ud800",
    " IN (", " BETWEEN ", " LIKE ", "timestamp_millis(", "date_trunc('hour', ",
]
REPLAY_FRAGMENTS = [
    b'{"team":"a","et":1000,"score":1}', b'{"team":"b","et":', b"9223372036854775807",
    b"-9223372036854775809", b"1e300", b"NaN", b"Infinity", b"-Infinity", b'"\\ud800"',
    b'"\\ud83d\\ude00"', b"\xff", b"\xc3\x28", b"[" * 70, b"]" * 70, b"{", b"}", b'"x":',
    b",", b'"score":', b"1" + b"0" * 309, b'{"$processing_time":', b'{"$watermark":', b"5000",
    b"1000", b'"2026-01-01T00:00:00Z"', b"\n", b"null", b'"team":', b'"et":', b"}\n",
]
