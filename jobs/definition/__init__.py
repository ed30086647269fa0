"""The definition format: reading, validating, canonicalising and comparing window definitions.

Pure Python (no Spark, Airflow or Streamlit): the UI validates as the user types, the catalog
stores the canonical form, the engine and the Spark runtime read the typed
:class:`~jobs.definition.model.Definition`. See ``docs/definition.md``.
"""

from jobs.definition.canonical import canonical_json, spec_hash, to_canonical
from jobs.definition.diff import DefinitionDiff, FieldChange, diff_definitions
from jobs.definition.durations import format_duration, parse_duration
from jobs.definition.errors import DefinitionError, FieldError
from jobs.definition.expr import ExpressionError, compile_expression
from jobs.definition.model import (
    INFINITE,
    PROCESSING,
    Aggregation,
    Definition,
    EarlyTrigger,
    LateTrigger,
    Sink,
    Source,
    Trigger,
    Watermark,
    Window,
)
from jobs.definition.parse import load_definition, read_document, validate_raw
from jobs.definition.schema import Schema, parse_schema
from jobs.definition.sql import referenced_columns, spark_sql
from jobs.definition.store import store_name
from jobs.definition.trigger import EffectiveTrigger, effective_trigger

__all__ = [
    "INFINITE",
    "PROCESSING",
    "Aggregation",
    "Definition",
    "DefinitionDiff",
    "DefinitionError",
    "EarlyTrigger",
    "EffectiveTrigger",
    "ExpressionError",
    "FieldChange",
    "FieldError",
    "LateTrigger",
    "Schema",
    "Sink",
    "Source",
    "Trigger",
    "Watermark",
    "Window",
    "canonical_json",
    "compile_expression",
    "diff_definitions",
    "effective_trigger",
    "format_duration",
    "load_definition",
    "parse_duration",
    "parse_schema",
    "read_document",
    "referenced_columns",
    "spark_sql",
    "spec_hash",
    "store_name",
    "to_canonical",
    "validate_raw",
]
