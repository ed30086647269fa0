"""Locations: a local path or a Hadoop filesystem URI, as plain strings (pure, no I/O).

Why strings and not ``pathlib.Path``: ``Path("s3a://bucket/ck").absolute()`` becomes
``<cwd>/s3a:/bucket/ck``. A location keeps its scheme and authority; only local paths are made
absolute. Accepted: a local path, ``file:/...`` (or ``file:///...``), ``hdfs://host[:port]/...``
and ``s3a://bucket/...``.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from jobs.storage.errors import StorageError

REMOTE_SCHEMES = ("hdfs", "s3a")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def scheme(location: str) -> str | None:
    """The URI scheme in lower case, or None for a plain local path."""
    m = _SCHEME.match(location)
    if m is None or (len(m.group(1)) == 1 and os.name == "nt"):
        return None
    return m.group(1).lower()


def is_local(location: str) -> bool:
    return scheme(location) in (None, "file")


def local_path(location: str) -> str:
    """The filesystem path of a local location (``file:`` stripped)."""
    if scheme(location) == "file":
        rest = location[len("file:"):]
        return "/" + rest.lstrip("/") if rest.startswith("//") else rest
    return location


def validate(location: str, setting: str | None = None) -> str:
    """``location`` normalised (local paths absolute, no trailing slash), or a StorageError
    naming ``setting`` that says what is wrong with it."""
    text = location.strip()
    if not text:
        raise StorageError("is empty", setting)
    s = scheme(text)
    if s is None or s == "file":
        return os.path.abspath(local_path(text))
    if s == "s3":
        raise StorageError(f"{text!r}: use the s3a:// scheme (Hadoop's S3A connector)", setting)
    if s not in REMOTE_SCHEMES:
        raise StorageError(
            f"{text!r}: unsupported scheme {s!r} (a local path, file:, hdfs:// or s3a://)",
            setting)
    parts = urlsplit(text)
    if not parts.netloc:
        raise StorageError(f"{text!r}: {s}:// needs a host (hdfs://namenode:8020/path) "
                           "or bucket (s3a://bucket/path)", setting)
    try:
        parts.port  # noqa: B018 (raises on a non-numeric port)
    except ValueError as exc:
        raise StorageError(f"{text!r}: bad port ({exc})", setting) from exc
    if parts.query or parts.fragment:
        raise StorageError(f"{text!r}: a location has no query or fragment", setting)
    path = parts.path.rstrip("/")
    return f"{s}://{parts.netloc}{path}"


def join(location: str, *parts: str) -> str:
    """``location/part/...`` (a URI keeps its scheme; no normalisation of ``..``)."""
    out = location.rstrip("/") or "/"
    for p in parts:
        p = str(p).strip("/")
        if p:
            out = f"{out}/{p}" if out != "/" else f"/{p}"
    return out


def parent(location: str) -> str:
    head, _sep, _tail = location.rstrip("/").rpartition("/")
    return head or "/"


def name(location: str) -> str:
    return location.rstrip("/").rpartition("/")[2]
