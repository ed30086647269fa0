"""tidemark: windowed stream aggregations on Apache Spark.

Pure logic (``jobs.definition``, ``jobs.engine``) never imports pyspark, airflow or streamlit;
the Spark runtime lives in ``jobs.spark``, the catalog service in ``jobs.catalog``, process
lifecycle in ``jobs.lifecycle``.
"""

__version__ = "0.1.0"
