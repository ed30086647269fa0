"""Random JSON values for the plain-case parser's tests: the plain case (flat objects of
printable-ASCII names and strings, integers in and just past each column's range, booleans,
nulls) mixed with everything it must leave to Spark."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

SCHEMA = "s STRING, i INT, l BIGINT, b BOOLEAN, d DOUBLE"
CORRUPT = "_tidemark_corrupt"
OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}

NAMES = ["s", "i", "l", "b", "d", "x", "S", " s", "s\\u0073", "é", CORRUPT, ""]
SCALARS = [
    '"abc"', '""', '"a b"', '"say \\"hi\\""', '"tab\\t"', '"é"', '"\\u00e9"', '"日本"',
    "0", "7", "-7", "123456789", "2147483647", "2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "123456789012345", "1234567890123456",
    "01", "-0", "-", "1.5", "1e3", "-0.0", "1E2", "NaN", "Infinity", "-Infinity",
    "true", "false", "null", "True", "nul", "truex", "'q'", "{}", '{"a":1}', "[]", "[1,2]",
    '"\x01"', "\"x", "12abc",
]
WHITESPACE = ["", " ", "\n", "\t", "\r\n", "  "]
TRAILING = ["", "", "", " ", "\n", "x", "}", "{}", ","]


PLAIN_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E,
                                    exclude_characters='"\\'), max_size=8)


def _number(low: int, high: int) -> Any:
    """Integers in and just past a column's range."""
    return st.one_of(st.integers(low, high), st.integers(low * 4 - 9, high * 4 + 9),
                     st.sampled_from([low, high, low - 1, high + 1, 0])).map(str)


PLAIN: dict[str, Any] = {
    "s": PLAIN_TEXT.map(lambda t: f'"{t}"'),
    "i": _number(-(2**31), 2**31 - 1),
    "l": st.one_of(_number(-(10**15) + 1, 10**15 - 1), _number(-(2**63), 2**63 - 1)),
    "b": st.sampled_from(["true", "false"]),
    "d": _number(-(10**15) + 1, 10**15 - 1),
    "x": st.one_of(PLAIN_TEXT.map(lambda t: f'"{t}"'), st.integers(-999, 999).map(str)),
}


@st.composite
def plain_record(draw: Any) -> list[tuple[str, str]]:
    """A record the plain case covers: some of the columns and an unknown name, any order."""
    names = draw(st.lists(st.sampled_from(sorted(PLAIN)), unique=True, max_size=6))
    return [(n, draw(st.one_of(PLAIN[n], st.just("null")))) for n in names]


@st.composite
def values(draw: Any) -> bytes | None:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return None
    if kind == 1:
        return draw(st.binary(max_size=12))
    if kind == 2:
        return draw(st.sampled_from(SCALARS + ["", " ", "[]", "{", "{}"])).encode()
    ws = st.sampled_from(WHITESPACE)
    if kind <= 4:  # anything goes
        members = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(SCALARS)),
                                max_size=6))
    else:  # plain, or plain with one thing changed
        members = draw(plain_record())
        change = draw(st.integers(0, 3))
        if change == 1 and members:  # a value of any kind
            at = draw(st.integers(0, len(members) - 1))
            members[at] = (members[at][0], draw(st.sampled_from(SCALARS)))
        elif change == 2:  # any name
            members.append((draw(st.sampled_from(NAMES)), draw(st.sampled_from(SCALARS))))
        elif change == 3 and members:  # a name twice
            members.append(members[draw(st.integers(0, len(members) - 1))])
    spaced = [(n, v, draw(ws), draw(ws)) for n, v in members]
    body = ",".join(f'{a}"{n}"{b}:{a}{v}{b}' for n, v, a, b in spaced)
    trailing = draw(st.sampled_from(TRAILING)) if kind <= 6 else ""
    text = "{" + draw(ws) + body + draw(ws) + "}" + trailing
    raw = text.encode()
    if kind == 3 and raw:  # a byte that is not UTF-8 somewhere
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + b"\xff" + raw[at:]
    return raw

EDGES = [
    *SCALARS, "00", "-00", "-01", "0.0", "1.", ".5", "+1", "- 1", "1 2", "2147483647",
    "-2147483648", "2147483648", "-2147483649", "02147483647", "999999999", "1000000000",
    "9999999999", "999999999999999", "-999999999999999", "1000000000000000",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "99999999999999999999", '"x"', '" "', '"~"', '"1"', '"true"', '"null"', '"\\/"',
]


def one_change_texts() -> list[str]:
    """Every column of a plain record, and a repeated or unknown name, set to each edge value
    in turn."""
    base = {"s": '"k"', "i": "1", "l": "-2", "b": "true", "d": "3"}
    texts = []
    for name in [*base, "x", CORRUPT]:
        for edge in EDGES:
            fields = {**base, name: edge}
            texts.append("{" + ",".join(f'"{n}":{v}' for n, v in fields.items()) + "}")
            texts.append("{" + ",".join(f'"{n}": {v}' for n, v in base.items())
                         + f', "{name}" : {edge} }}')
    return texts
