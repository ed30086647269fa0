"""Fetch, verify and locate the jars of each bundle (see the package docstring)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

BUNDLES_DIR = Path(__file__).parent / "bundles"
LOCK_NAME = "sha256.txt"


class JvmDepsError(RuntimeError):
    """A bundle is unknown, not fetched yet, or its jars do not match its lock."""


def bundle_names() -> list[str]:
    return sorted(p.name for p in BUNDLES_DIR.iterdir() if (p / "pom.xml").is_file())


def cache_root(env: dict[str, str] | None = None) -> Path:
    e = os.environ if env is None else env
    default = Path.home() / ".cache" / "tidemark" / "jars"
    return Path(e.get("TIDEMARK_JAR_CACHE", str(default))).expanduser().absolute()


def _source(name: str) -> Path:
    src = BUNDLES_DIR / name
    if not (src / "pom.xml").is_file():
        raise JvmDepsError(f"unknown JVM bundle {name!r} (known: {', '.join(bundle_names())})")
    return src


def _digest(src: Path) -> str:
    """Names the cache folder after the pom and the lock, so a changed pin is fetched anew."""
    h = hashlib.sha256()
    for part in ("pom.xml", LOCK_NAME):
        f = src / part
        h.update(part.encode() + b"\0" + (f.read_bytes() if f.exists() else b"") + b"\0")
    return h.hexdigest()[:12]


def bundle_dir(name: str) -> Path:
    """The cache folder of a bundle's verified jars (it may not exist yet)."""
    src = _source(name)
    return cache_root() / f"{name}-{_digest(src)}"


def bundle_jars(name: str) -> list[Path]:
    """The bundle's jars, sorted by name; an error naming ``make install`` if not fetched."""
    target = bundle_dir(name)
    if not (target / ".verified").is_file():
        raise JvmDepsError(
            f"JVM bundle {name!r} is not installed under {target}: run `make install`"
        )
    return sorted(target.glob("*.jar"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_lock(src: Path) -> dict[str, str]:
    lock = src / LOCK_NAME
    if not lock.exists():
        return {}
    out: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, jar = line.split()
            out[jar] = digest
    return out


def _resolve(src: Path, out: Path) -> None:
    cmd = [
        "mvn", "-q", "-B", "-C",  # -C: fail on a checksum mismatch from the repository
        "-f", str(src / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise JvmDepsError(
            f"Maven could not resolve bundle {src.name!r}:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
        )


def fetch(name: str, *, update_lock: bool = False) -> Path:
    """Resolve a bundle into the cache and verify it against its lock (idempotent).

    ``update_lock`` rewrites ``sha256.txt`` from what Maven resolved: done by a developer when
    a pin changes, and reviewed in the commit; never by the install step.
    """
    src = _source(name)
    target = bundle_dir(name)
    if (target / ".verified").is_file() and not update_lock:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}-") as tmp:
        staging = Path(tmp) / "jars"
        staging.mkdir()
        _resolve(src, staging)
        got = {p.name: _sha256(p) for p in sorted(staging.glob("*.jar"))}
        if update_lock:
            lines = [f"{digest}  {jar}" for jar, digest in sorted(got.items())]
            (src / LOCK_NAME).write_text(
                "# sha256 of every jar this bundle resolves to; python -m jobs.jvmdeps lock NAME\n"
                + "\n".join(lines) + "\n"
            )
            target = bundle_dir(name)  # the digest covers the lock
        want = _read_lock(src)
        if got != want:
            missing = sorted(set(want) - set(got))
            extra = sorted(set(got) - set(want))
            changed = sorted(j for j in set(got) & set(want) if got[j] != want[j])
            raise JvmDepsError(
                f"bundle {name!r} does not match {src / LOCK_NAME}: "
                f"missing {missing}, unexpected {extra}, checksum differs {changed}"
            )
        (staging / ".verified").write_text("\n".join(sorted(got)) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    return target
