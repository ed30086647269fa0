"""The vectorized fast path of the engine (numpy columnar state) for final-emission fixed
windows. ``qualifies(defn)`` says whether a definition may use it; ``make_engine`` in
``jobs.engine`` picks it then. Its columnar output (``VectorizedEngine.ingest_columns`` and
friends) is a :class:`ColumnarOutput` of late records and :class:`FinalPanes`."""

from jobs.engine.vectorized.columns import ColumnarOutput, FinalPanes
from jobs.engine.vectorized.engine import VectorizedEngine
from jobs.engine.vectorized.qualify import qualification_problems, qualifies
from jobs.engine.vectorized.values import Unsupported

__all__ = [
    "ColumnarOutput", "FinalPanes", "Unsupported", "VectorizedEngine", "qualification_problems",
    "qualifies",
]
