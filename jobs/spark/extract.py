"""The definition's SQL expressions as Spark columns, re-validated by Spark's analyzer.

The definition layer already parsed and allow-listed every expression (sqlglot); here Spark
itself resolves them against the source schema before the query starts, so a typo or a type
error fails the launch with the field's name instead of failing batch 0 with a stack trace.

The projection produces the columns everything downstream reads:
- ``__key``  canonical JSON text of the key (``"null"`` without a key; null = did not evaluate),
  so grouping by it keeps ``1``, ``1.0``, ``true`` and ``"1"`` apart exactly as the engine does;
  or, when asked for (``raw_key``, native path, see key_layout.py), the key's raw value, whose
  JSON text :func:`key_json_column` computes later;
- ``__et``   event time as epoch ms (BIGINT; null = missing or did not evaluate);
- ``__a<i>`` the input of aggregation i (timestamps as epoch ms, decimals as doubles, so values
  print like replay's);
plus the source columns, the corrupt-record text and ``__etx`` (an event time outside the
representable instants, for its dead letter's reason), which the gate needs for dead letters and
late records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.definition.errors import DefinitionError
from jobs.definition.model import Definition
from jobs.definition.sql import plain_column, referenced_columns, spark_sql
from jobs.engine.extract import BOUND_LIMIT, EARLIEST_MS, LATEST_MS, window_reach
from jobs.spark.errors import SparkRuntimeError
from jobs.spark.schema import CORRUPT_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructField, StructType

KEY = "__key"
EVENT_TIME = "__et"
EVENT_TIME_OUT = "__etx"
"""The event time (epoch ms) of a record whose event time is outside the representable
instants or whose windows pass ±2^62 ms (its ``__et`` is null), null otherwise: the gates name
it in the dead letter."""
NUMERIC_FNS = frozenset({"sum", "mean"})


def agg_column(index: int) -> str:
    return f"__a{index}"


@dataclass(frozen=True)
class Projection:
    """The analysed projection of one definition over one source schema."""

    columns: list[Column]
    """Select list: __key, __et, __a<i>..., then the source columns, the corrupt text and
    __etx."""
    agg_types: dict[str, str]
    """Aggregation name -> Spark simple type name of its (converted) input."""
    source_columns: list[str]
    key_raw: bool = False
    """``__key`` holds the raw key value (its JSON text is ``key_json_column(__key)``)."""
    key_type: str | None = None
    """Spark simple type name of the key expression (None without a key)."""


def _analyse(empty: DataFrame, expr: str, field: str) -> DataType:
    """The type of ``expr`` over the source schema, or a SparkRuntimeError naming ``field``."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    # a name that is no column must not reach Spark, which may read it as a function
    # (`user`, `current_date`): names resolve to the columns Spark reads, declared or inferred
    columns = {f.name.lower() for f in empty.schema.fields}
    try:
        missing = sorted(c for c in referenced_columns(expr) if c.lower() not in columns)
    except DefinitionError as exc:
        raise SparkRuntimeError(f"Spark rejects {expr!r}: {exc.message}", field) from exc
    if missing:
        shown = ", ".join(f.name for f in empty.schema.fields if f.name != CORRUPT_COLUMN)
        raise SparkRuntimeError(
            f"{missing[0]!r} is not a column of the source (its columns: {shown})", field)
    field_of = _source_field(empty, expr)
    if field_of is not None:
        return field_of.dataType
    try:
        return empty.select(F.expr(spark_sql(expr)).alias("x")).schema.fields[0].dataType
    except (PySparkException, ValueError, DefinitionError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkRuntimeError(f"Spark rejects {expr!r}: {first}", field) from exc


def _source_field(empty: DataFrame, expr: str) -> StructField | None:
    """The source field an expression is nothing but (one top-level column, matched as Spark
    matches names: case-insensitively, and only when exactly one field matches), else None.
    Such an expression needs neither Spark's SQL parser nor a trip through its analyser: its
    type is the field's, and its column is the field itself (:func:`source_column`)."""
    name = plain_column(expr)
    if name is None:
        return None
    found = [f for f in empty.schema.fields if f.name.lower() == name.lower()]
    return found[0] if len(found) == 1 else None


def source_column(empty: DataFrame, expr: str) -> Column:
    """``expr`` (an allowed expression over ``empty``'s columns) as a Spark column: the source
    field itself when the expression is nothing but that field, else ``expr`` parsed by Spark."""
    from pyspark.sql import functions as F

    field_of = _source_field(empty, expr)
    if field_of is not None:
        return F.col("`" + field_of.name.replace("`", "``") + "`")
    return F.expr(spark_sql(expr))


def key_json_column(k: Column, atomic: bool = True) -> Column:
    """The canonical JSON text of key value ``k`` (null when ``k`` is null), as a Spark column:
    the same text as the engine's one :func:`jobs.engine.records.key_json` (non-ASCII kept).

    ``to_json(array(k))`` is ``[<json of k>]``. For an atomic ``k`` (string, number, boolean,
    date, ...), whose JSON text never starts with ``[`` or ends with ``]``, the brackets are
    trimmed with ``btrim``: ``substring(text, 2, length(text) - 2)`` named the text twice, and
    where Spark does not eliminate the common subexpression (the aggregation's result
    expressions) it ran Jackson twice per row. ``atomic=False`` (arrays, structs, maps: an
    array's own brackets must stay) keeps the substring, which removes exactly one bracket on
    each side."""
    from pyspark.sql import functions as F

    text = F.to_json(F.array(k))
    inner = F.btrim(text, F.lit("[]")) if atomic else F.substring(
        text, F.lit(2), F.length(text) - 2)
    return F.when(k.isNull(), F.lit(None).cast("string")).otherwise(inner)


def key_text(k: Column, dtype: DataType) -> Column:
    """:func:`key_json_column` of ``k`` of type ``dtype``, the cheapest exact way: plain
    strings by :func:`string_json`, other atomic types by the trimmed ``to_json``, the rest by the
    substring (the JSON-key layout computes this for every record)."""
    from pyspark.sql.types import AtomicType

    if _plain_string(dtype):
        return string_json(k)
    return key_json_column(k, atomic=isinstance(dtype, AtomicType))


JSON_ESCAPED = '[\\x00-\\x1f"\\\\]'
"""Java regex: a character Jackson escapes in a JSON string (control characters, ``"`` and
``\\``); every other character, non-ASCII included, is written as it is."""


def string_json(k: Column) -> Column:
    """:func:`key_json_column` of a string column, without Jackson for the common string.

    Jackson writes a string that holds no character it escapes as ``"`` + text + ``"``; only a
    string with such a character, or with bytes that are not valid UTF-8 (Jackson sees them as
    U+FFFD), needs Jackson. Profiled on the native path: ``to_json`` per pane was the largest
    single cost of building pane rows (docs/performance.md, "What limits each number"). One
    JVM call where the session has tidemark's jar, else :func:`sql_string_json`."""
    jvm = _jvm_string_json(k)
    return jvm if jvm is not None else sql_string_json(k)


def sql_string_json(k: Column) -> Column:
    """:func:`string_json` in Spark SQL alone: the concatenation, and :func:`key_json_column`
    for a string with a character Jackson escapes or with bytes that are not valid UTF-8."""
    from pyspark.sql import functions as F

    plain = F.concat(F.lit('"'), k, F.lit('"'))
    needs_jackson = k.rlike(JSON_ESCAPED) | ~F.is_valid_utf8(k)
    return F.when(k.isNull(), F.lit(None).cast("string")).when(
        needs_jackson, key_json_column(k)).otherwise(plain)


def _jvm_string_json(k: Column) -> Column | None:
    """:func:`string_json` as one call of tidemark's JVM function (``JsonText.java``): the
    same text, without a regular expression over a Java copy of every string and with far less
    code for the JIT to compile into each projection; None when the session's JVM has no
    tidemark classes (jobs/spark/jvm.py)."""
    from py4j.java_gateway import JavaClass
    from pyspark import SparkContext
    from pyspark.sql.classic.column import Column as ClassicColumn

    sc = SparkContext._active_spark_context
    jvm: Any = None if sc is None else sc._jvm
    if jvm is None:
        return None
    cls = jvm.tidemark.spark.JsonText
    if not isinstance(cls, JavaClass):
        return None
    return ClassicColumn(cls.column(k._jc))


def raw_key_possible(defn: Definition, empty: DataFrame) -> bool:
    """Whether grouping by the key's raw value groups exactly as by its JSON text: a plain
    (binary-collation) string, an integral number or a boolean (key_layout.py says why)."""
    return defn.key is not None and _groups_as_json(_analyse(empty, defn.key, "key"))


def _plain_string(dtype: DataType) -> bool:
    """A string with binary collation: equal exactly when its bytes are."""
    from pyspark.sql.types import StringType

    return isinstance(dtype, StringType) and getattr(dtype, "collation", "UTF8_BINARY") == "UTF8_BINARY"


def _groups_as_json(dtype: DataType) -> bool:
    from pyspark.sql.types import BooleanType

    return _plain_string(dtype) or _integral(dtype) or isinstance(dtype, BooleanType)


def build_projection(defn: Definition, schema: StructType, empty: DataFrame,
                     raw_key: bool = False) -> Projection:
    """Analyse every expression of ``defn`` against ``schema`` (``empty`` is a DataFrame with
    that schema, only analysed: the job passes its source stream) and return the select list;
    raises SparkRuntimeError.
    ``raw_key``: ``__key`` holds the key's raw value (only where :func:`raw_key_possible`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        DateType,
        DecimalType,
        NumericType,
        StringType,
        TimestampNTZType,
        TimestampType,
    )

    def to_ms(col: Column, dtype: DataType) -> Column:
        if isinstance(dtype, TimestampType | TimestampNTZType):
            return F.unix_millis(col.cast("timestamp"))
        if isinstance(dtype, DateType):
            return F.unix_millis(col.cast("timestamp"))
        if isinstance(dtype, NumericType):
            if _integral(dtype):
                return col.cast("bigint")
            return F.floor(col.cast("double")).cast("bigint")  # truncate toward -infinity
        if isinstance(dtype, StringType):  # ISO text or epoch-ms text
            as_long = col.try_cast("bigint") if hasattr(col, "try_cast") else col.cast("bigint")
            return F.coalesce(as_long, F.unix_millis(F.try_to_timestamp(col)))
        raise SparkRuntimeError(
            f"must be a timestamp or epoch milliseconds, not {dtype.simpleString()}", "event_time"
        )

    cols: list[Column] = []
    key_type: str | None = None
    if defn.key is None:
        cols.append(F.lit("null").alias(KEY))
    else:
        key_dtype = _analyse(empty, defn.key, "key")
        key_type = key_dtype.simpleString()
        if raw_key and not _groups_as_json(key_dtype):
            raise SparkRuntimeError("cannot group by this key's raw value", "key")
        k = source_column(empty, defn.key)
        cols.append((k if raw_key else key_text(k, key_dtype)).alias(KEY))
    if defn.uses_processing_time:
        # the processing clock: the engine stamps records with the batch's processing time
        # itself; the column holds the micro-batch's time (Spark fixes current_timestamp per
        # batch, also on a re-run) so that it is never null (a null marks a dead letter)
        cols.append(F.unix_millis(F.current_timestamp()).alias(EVENT_TIME))
        out_of_range = F.lit(None).cast("bigint")
    else:
        et_type = _analyse(empty, defn.event_time, "event_time")
        et = to_ms(source_column(empty, defn.event_time), et_type)
        # outside the representable instants, or with windows past ±2^62 ms
        # (jobs.engine.extract), is null: a dead letter, never int64 overflow
        reach = window_reach(defn)
        in_range = et.between(F.lit(max(EARLIEST_MS, reach - BOUND_LIMIT)),
                              F.lit(min(LATEST_MS, BOUND_LIMIT - reach)))
        cols.append(F.when(in_range, et).alias(EVENT_TIME))
        out_of_range = F.when(~in_range, et)
    agg_types: dict[str, str] = {}
    for i, agg in enumerate(defn.aggregations):
        field = f"aggregations[{i}].of"
        if agg.of is None:
            if agg.fn != "count":
                raise SparkRuntimeError(f"{agg.fn} needs an input expression", field)
            cols.append(F.lit(1).alias(agg_column(i)))
            agg_types[agg.name] = "int"
            continue
        dtype = _analyse(empty, agg.of, field)
        col = source_column(empty, agg.of)
        if agg.fn in NUMERIC_FNS and not isinstance(dtype, NumericType):
            raise SparkRuntimeError(
                f"{agg.fn} needs a numeric input, {agg.of!r} is {dtype.simpleString()}", field
            )
        if isinstance(dtype, TimestampType | TimestampNTZType | DateType):
            col, tname = F.unix_millis(col.cast("timestamp")), "bigint"
        elif isinstance(dtype, DecimalType):
            col, tname = col.cast("double"), "double"
        else:
            tname = dtype.simpleString()
        cols.append(col.alias(agg_column(i)))
        agg_types[agg.name] = tname
    source = [f.name for f in schema.fields if f.name != CORRUPT_COLUMN]
    cols.extend(F.col(f"`{c}`") for c in source)
    cols.append(F.col(CORRUPT_COLUMN))
    cols.append(out_of_range.alias(EVENT_TIME_OUT))
    projection = Projection(columns=cols, agg_types=agg_types, source_columns=source,
                            key_raw=raw_key, key_type=key_type)
    try:
        empty.select(*cols).schema  # noqa: B018  (analysis of the whole select list)
    except SparkRuntimeError:
        raise
    except Exception as exc:
        raise SparkRuntimeError(f"Spark rejects the projection: {exc}", "aggregations") from exc
    return projection


def _integral(dtype: DataType) -> bool:
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    return isinstance(dtype, ByteType | ShortType | IntegerType | LongType)
