"""The Spark DDL subset a source schema is written in."""

from __future__ import annotations

import pytest

from jobs.definition import DefinitionError, parse_schema


def test_flat_and_nested_types() -> None:
    s = parse_schema(
        "team STRING, score INT, et TIMESTAMP, meta STRUCT<region: STRING, tags: ARRAY<STRING>> "
        "NOT NULL COMMENT 'free text', attrs MAP<STRING, DOUBLE>, price DECIMAL(10, 2), "
        "`odd name` BIGINT, code VARCHAR(3)"
    )
    assert s.names == ["team", "score", "et", "meta", "attrs", "price", "odd name", "code"]
    meta = s.field("META")
    assert meta is not None and meta.type.name == "struct" and not meta.nullable
    tags = meta.type.field("tags")
    assert tags is not None and tags.type.name == "array"
    assert tags.type.element is not None and tags.type.element.name == "string"
    attrs = s.field("attrs")
    assert attrs is not None and attrs.type.key is not None and attrs.type.value is not None
    assert attrs.type.value.name == "double"
    price = s.field("price")
    assert price is not None and price.type.params == (10, 2)
    code = s.field("code")
    assert code is not None and code.type.name == "string"


def test_struct_fields_without_colon_and_aliases() -> None:
    s = parse_schema("a STRUCT<b LONG, c INTEGER>, d BOOL")
    a = s.field("a")
    assert a is not None
    assert [(f.name, f.type.name) for f in a.type.fields] == [("b", "bigint"), ("c", "int")]


@pytest.mark.parametrize(
    ("ddl", "words"),
    [
        ("", "at least one column"), ("a", "expected a type"), ("a INTT", "unknown type 'INTT'"),
        ("a INT,", "expected a column name"), ("a INT, A STRING", "duplicate column 'A'"),
        ("a STRUCT<b INT", "expected '>'"), ("a INT b", "unexpected 'b'"),
        ("a INT(3)", "takes no parameters"), ("a VARCHAR", "needs a length"),
        ("a MAP<STRING>", "expected ','"), ("a INT NOT", "expected NULL"), ("a INT; drop", "';'"),
    ],
)
def test_bad_schemas(ddl: str, words: str) -> None:
    with pytest.raises(DefinitionError) as info:
        parse_schema(ddl)
    assert words in str(info.value)
