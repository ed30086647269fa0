"""The Structured Streaming runtime: the only part of tidemark that imports pyspark.

Modules (see docs/spark.md):
- ``session``   SparkSession factory (master from Settings, RocksDB state store, changelogs)
- ``errors``    SparkRuntimeError, the one error type of this package
- ``schema``    Spark DDL -> StructType, the pane / late / dead-letter row schemas
- ``sources``   streaming readers for the ``files`` and ``rate`` sources
- ``extract``   key / event time / aggregation inputs as Spark columns, dead-letter split
- ``validate``  re-validation of the definition's SQL with Spark's analyzer
- ``native``    compiling qualifying definitions to native window aggregations
- ``sinks``     idempotent per-batch writers (results, late, dead letters)
- ``runner``    building and running a job's streaming query
- ``inspect``   reading a job's state store at a snapshot
- ``worker_daemon`` the Python worker daemon: workers import the installed, compiled pyspark
"""
