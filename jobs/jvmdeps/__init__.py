"""JVM artifacts tidemark runs beside Spark, fetched from Maven Central at install time.

A *bundle* is one folder under ``bundles/``: a ``pom.xml`` whose dependencies are the jars
(transitive ones resolved by Maven) and a committed ``sha256.txt`` lock listing every jar the
bundle resolves to with its SHA-256. ``make install`` runs ``python -m jobs.jvmdeps fetch``,
which copies each bundle's jars into a cache (``TIDEMARK_JAR_CACHE``, default
``~/.cache/tidemark/jars``) and refuses a bundle whose jars differ from its lock. At run time
:func:`bundle_jars` only reads that cache: a job never downloads anything.
"""

from jobs.jvmdeps.bundles import (
    BUNDLES_DIR,
    JvmDepsError,
    bundle_dir,
    bundle_jars,
    bundle_names,
    cache_root,
    fetch,
)

__all__ = [
    "BUNDLES_DIR",
    "JvmDepsError",
    "bundle_dir",
    "bundle_jars",
    "bundle_names",
    "cache_root",
    "fetch",
]
