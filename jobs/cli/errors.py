"""The exit codes of ``tidemark`` and the one place that turns an error into them.

| code | meaning |
|---|---|
| 0 | success |
| 1 | error (the operation failed; the message says why) |
| 2 | invalid definition or argument (each field error on a line of its own) |
| 3 | edit conflict (the edit is based on a version that is no longer the latest) |
| 4 | permission refused (``--as USER`` lacks the role) |
| 5 | not found (no such job, version, user, run or migration) |
| 130 | interrupted (Ctrl-C) |

Command handlers return an exit code, or raise one of tidemark's error types; :func:`report`
prints such an error as one line on stderr (plus its field errors) and picks the code. An error
of no tidemark type is a defect: it gets one line too, and the traceback only with
``--log-level DEBUG``.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INVALID = 2
EXIT_CONFLICT = 3
EXIT_FORBIDDEN = 4
EXIT_NOT_FOUND = 5
EXIT_INTERRUPTED = 130

_CATALOG_CODES = {"invalid": EXIT_INVALID, "conflict": EXIT_CONFLICT, "forbidden": EXIT_FORBIDDEN,
                  "not_found": EXIT_NOT_FOUND}

# tidemark's error types by module, with their exit code; looked up in sys.modules, so the
# handler imports nothing heavy (an error of a module never imported cannot have been raised)
_ERROR_TYPES = (
    ("jobs.definition.errors", "DefinitionError", EXIT_INVALID),
    ("jobs.timeutil", "TimeParseError", EXIT_INVALID),
    ("jobs.logsetup", "LogSetupError", EXIT_INVALID),
    ("jobs.engine.errors", "EngineError", EXIT_ERROR),
    ("jobs.spark.errors", "SparkRuntimeError", EXIT_ERROR),
    ("jobs.lifecycle.errors", "LifecycleError", EXIT_ERROR),
    ("jobs.jvmdeps.bundles", "JvmDepsError", EXIT_ERROR),
    ("jobs.sample", "SampleError", EXIT_ERROR),
    ("jobs.kafka.errors", "KafkaSetupError", EXIT_ERROR),
)

log = logging.getLogger(__name__)


def _known(exc: BaseException) -> tuple[int, list[str]] | None:
    """(exit code, detail lines) for an error of one of tidemark's types, else None."""
    catalog = sys.modules.get("jobs.catalog.errors")
    if catalog is not None and isinstance(exc, catalog.CatalogError):
        details = [f"{f}: {m}" if f else m for f, m in exc.errors]
        return _CATALOG_CODES.get(exc.code, EXIT_ERROR), details
    for module, name, code in _ERROR_TYPES:
        mod = sys.modules.get(module)
        cls = getattr(mod, name, None) if mod is not None else None
        if cls is not None and isinstance(exc, cls):
            lines = getattr(exc, "lines", None)  # DefinitionError: every field error
            many = callable(lines) and len(getattr(exc, "errors", ())) > 1
            return code, list(lines()) if many else []  # type: ignore[misc]
    return None


def report(exc: BaseException, *, stream: TextIO | None = None) -> int:
    """Print ``exc`` for a user (one line, plus field errors) and return the exit code."""
    out = sys.stderr if stream is None else stream
    if isinstance(exc, KeyboardInterrupt):
        print("tidemark: interrupted", file=out)
        return EXIT_INTERRUPTED
    known = _known(exc)
    if known is not None:
        code, details = known
        print(f"tidemark: {exc}", file=out)
        for line in details:
            print(f"  {line}", file=out)
        return code
    if isinstance(exc, OSError):
        what = f"{exc.filename}: " if exc.filename else ""
        print(f"tidemark: {what}{exc.strerror or exc}", file=out)
        return EXIT_ERROR
    log.debug("unexpected error", exc_info=exc)
    hint = "" if log.isEnabledFor(logging.DEBUG) else " (--log-level DEBUG shows the traceback)"
    print(f"tidemark: unexpected {type(exc).__name__}: {exc}{hint}", file=out)
    return EXIT_ERROR
