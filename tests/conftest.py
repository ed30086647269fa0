"""Suite-wide set-up: tests never touch the developer's data or catalog.

Every test session gets its own TIDEMARK_HOME (catalog file, checkpoints, results) under a
temporary directory, and an inherited TIDEMARK_DB_URL is dropped; fixtures of each area build
their own catalogs on top of that.
"""

from __future__ import annotations

import os
import tempfile

os.environ["TIDEMARK_HOME"] = tempfile.mkdtemp(prefix="tidemark-test-")
os.environ.pop("TIDEMARK_DB_URL", None)

# One throwaway PostgreSQL server per test session, shared by every folder that needs one.
from pg import pg_server  # noqa: E402, F401
