"""Suite-wide set-up: tests never touch the developer's data or catalog.

Every test session gets its own TIDEMARK_HOME (catalog file, checkpoints, results) under a
temporary directory, and an inherited TIDEMARK_DB_URL is dropped; fixtures of each area build
their own catalogs on top of that.
"""

from __future__ import annotations

import logging
import os
import tempfile

# py4j says goodbye at INFO from its connections' __del__ when the interpreter exits, after
# pytest has closed the stream a handler (Airflow's logging set-up) writes to: the result was
# a "--- Logging error ---" traceback after every Spark run of the suite. Its warnings stay.
logging.getLogger("py4j").setLevel(logging.WARNING)

os.environ["TIDEMARK_HOME"] = tempfile.mkdtemp(prefix="tidemark-test-")
os.environ.pop("TIDEMARK_DB_URL", None)

# One uninterrupted run per crash-test definition, shared by the crash and cluster scenarios;
# one throwaway PostgreSQL server per test session, shared by every folder that needs one.
from crash_reference import crash_reference  # noqa: E402, F401
from pg import pg_server  # noqa: E402, F401
