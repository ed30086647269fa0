"""Locations keep a URI's scheme and authority; only local paths become absolute paths, and
a malformed location is one error naming the setting it came from."""

from __future__ import annotations

import os

import pytest

from jobs.storage import StorageError, is_local, join, local_path, scheme, validate


def test_uris_are_kept_and_local_paths_made_absolute(tmp_path: object) -> None:
    assert validate("s3a://bucket/ck/") == "s3a://bucket/ck"
    assert validate("hdfs://nn:8020/tidemark/ck") == "hdfs://nn:8020/tidemark/ck"
    assert validate("HDFS://nn/ck") == "hdfs://nn/ck"
    assert validate("file:///tmp/x/") == "/tmp/x"
    assert validate("file:/tmp/x") == "/tmp/x"
    assert validate("rel/ck") == os.path.join(os.getcwd(), "rel", "ck")
    assert join("s3a://bucket/ck", "store", "offsets") == "s3a://bucket/ck/store/offsets"
    assert join("/", "a") == "/a"
    assert scheme("/a/b") is None and scheme("s3a://b/x") == "s3a"
    assert is_local("file:/a") and is_local("/a") and not is_local("hdfs://nn/a")
    assert local_path("file:///a/b") == "/a/b" and local_path("file:/a/b") == "/a/b"


@pytest.mark.parametrize(("text", "words"), [
    ("s3://bucket/ck", "use the s3a:// scheme"),
    ("ftp://host/ck", "unsupported scheme 'ftp'"),
    ("hdfs:///ck", "needs a host"),
    ("hdfs://nn:port/ck", "bad port"),
    ("   ", "is empty"),
    ("s3a://bucket/ck?x=1", "no query"),
])
def test_a_bad_location_names_the_setting(text: str, words: str) -> None:
    with pytest.raises(StorageError) as err:
        validate(text, "TIDEMARK_CHECKPOINT_ROOT")
    assert str(err.value).startswith("TIDEMARK_CHECKPOINT_ROOT: ") and words in str(err.value)
    assert err.value.setting == "TIDEMARK_CHECKPOINT_ROOT"
