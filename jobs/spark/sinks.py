"""Writing one micro-batch of panes, idempotently per batch id.

Exactly once across crashes rests on two facts: a re-run batch N reads the same input with the
same watermark (offsets log) from state version N-1, so it produces the same panes; and every
write here *replaces* what batch N wrote before instead of appending to it:
- ``parquet``: ``panes/batch_id=N/`` is emptied and written again as a whole, each file under
  a hidden name first (``write_parquet``; Spark's writer, without tidemark's jar, goes through
  a ``_temporary`` directory); readers ignore names starting with ``.`` or ``_``;
- ``catalog``: ``Catalog.write_panes`` is idempotent per (store, batch id);
- ``kafka``: written as ``parquet`` is, then sent to the topic, one message per pane, the
  same bytes again on a re-run (jobs/spark/kafka_sink.py);
- ``delta``: one Delta commit per batch carrying an application transaction (store, batch id);
  a batch the table already recorded is skipped (``jobs/spark/delta_sink.py``);
- ``console``: printed (a crash may print a batch twice; it is a debugging sink).
``emitted_at`` is the batch's timestamp from the offsets log, so a re-run writes identical rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jobs.spark.context import JobContext
from jobs.storage.manifest import read_batch_info

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

PANE_COLUMNS = [
    "key", "window_start", "window_end", "first_event_time", "last_event_time", "timing",
    "pane_index", "is_first", "is_last", "retraction", "values", "emitted_at", "watermark",
]


FLOAT_TYPES = frozenset({"float", "double"})
"""Key types whose canonical text can be a bare NaN / Infinity (``pane_projection``)."""


def pane_frame(ctx: JobContext, batch: DataFrame, columns: list[Column], batch_id: int,
               watermark: int | None) -> DataFrame:
    """The batch's panes in the results schema (jobs.spark.schema.PANE_DDL)."""
    from pyspark.sql import functions as F

    info = read_batch_info(ctx.checkpoint, batch_id)
    return pane_projection(ctx, batch, columns, F.lit(info.timestamp_ms), F.lit(watermark))


def pane_projection(ctx: JobContext, frame: DataFrame, columns: list[Column],
                    emitted_at: Column, watermark: Column, *, bare_key: bool = True
                    ) -> DataFrame:
    """``frame``'s panes in the results schema: identity, ``columns``, then the batch facts
    (as literals per batch in ``pane_frame``; as the JVM's batch functions inside the native
    path's streaming query). ``bare_key``: the key's text may be a bare NaN / Infinity (a
    float key); without it the check is left out of the plan."""
    from pyspark.sql import functions as F

    ident = [
        F.lit(ctx.job).alias("job"),
        F.lit(ctx.version).cast("int").alias("version"),
        F.lit(ctx.store).alias("store"),
    ]
    # a float key's canonical text may be bare NaN/Infinity: output writes it as a JSON string
    key = F.col("key")
    out_key = key.alias("key")
    if bare_key:
        bare = key.isin("NaN", "Infinity", "-Infinity")
        out_key = F.when(bare, F.concat(F.lit('"'), key, F.lit('"'))).otherwise(key).alias("key")
    return frame.select(*ident, *columns).select(
        "job", "version", "store", out_key, "window_start", "window_end", "first_event_time",
        "last_event_time", "timing", F.col("pane_index").cast("int").alias("pane_index"),
        "is_first", "is_last", "retraction", "values",
        emitted_at.cast("bigint").alias("emitted_at"),
        watermark.cast("bigint").alias("watermark"),
    )


def write_panes(ctx: JobContext, panes: DataFrame, batch_id: int,
                catalog_writer: Callable[[int, list[dict[str, Any]]], None] | None,
                written: Callable[[], int | None] | None = None) -> int:
    """Write one batch of panes to the definition's sink; returns the number of panes.
    ``written``: for the file sinks when Spark's own writer writes them (``write_parquet``),
    the number of rows the write just wrote as its query's metrics know it (None: unknown),
    in place of an observed count."""
    kind = ctx.defn.sink.kind
    if kind in ("parquet", "kafka"):
        path = f"{ctx.panes_path}/batch_id={batch_id}"
        n = write_parquet(panes, path, written)
        if kind == "kafka":
            from jobs.spark.kafka_sink import send_panes, send_side

            if n:
                send_panes(ctx, panes.sparkSession.read.parquet(path))
            send_side(ctx, panes.sparkSession, batch_id)
        return n
    if kind == "delta":
        from jobs.spark.delta_sink import write_delta

        return write_delta(ctx, panes, batch_id)
    rows = [r.asDict() for r in panes.collect()]
    if kind == "catalog":
        if catalog_writer is None:
            raise RuntimeError("sink.kind catalog needs a catalog")
        catalog_writer(batch_id, [pane_json(r) for r in rows])
    else:  # console
        for r in rows:
            print(json.dumps(pane_json(r), sort_keys=True), flush=True)
    return len(rows)


def write_parquet(panes: DataFrame, path: str,
                  written: Callable[[], int | None] | None = None) -> int:
    """Replace ``path``'s files by ``panes`` as Parquet; returns the rows written.

    With tidemark's jar on the session's class path, ``PaneFiles`` (jobs/spark/jvm) writes the
    files in one Spark job without planning a write query, shipping the Hadoop configuration or
    committing through ``_temporary`` renames, and counts the rows as it writes them: the same
    files for 89 against 127 ms of CPU per 45k-pane batch (docs/performance.md). Without the jar, Spark's
    writer in overwrite mode (no cache, no second job to count, no coalesce: a coalesce(1) here
    would squeeze the stateful stage that produces the panes into a single task); the count then
    comes from ``written`` (the rows the write's query wrote, as its metrics know them; None:
    unknown, re-counted from the files) or rides along the write as an observed metric, which
    costs a metrics node over every row and a listener round trip."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from jobs.spark.jvm import pane_files

    write = pane_files(panes.sparkSession)
    if write is not None:
        return int(write(panes._jdf, path))
    if written is not None:
        panes.write.mode("overwrite").parquet(path)
        known = written()
        return known if known is not None else panes.sparkSession.read.parquet(path).count()
    observed = Observation("tidemark_panes_" + hashlib.sha256(path.encode()).hexdigest()[:16])
    (panes.observe(observed, F.count(F.lit(1)).alias("n"))
     .write.mode("overwrite").parquet(path))
    return int(observed.get.get("n") or 0)


def pane_json(row: dict[str, Any]) -> dict[str, Any]:
    """A results row as the replay output object (``{"type": "pane", ...}``)."""
    out: dict[str, Any] = {
        "type": "pane",
        "key": json.loads(row["key"]),
        "window_start": row["window_start"],
        "window_end": row["window_end"],
        "timing": row["timing"],
        "pane_index": row["pane_index"],
        "is_first": row["is_first"],
        "is_last": row["is_last"],
        "retraction": row["retraction"],
        "values": json.loads(row["values"]),
        "emitted_at": row["emitted_at"],
        "watermark": row["watermark"],
    }
    if row.get("first_event_time") is not None or row.get("last_event_time") is not None:
        out["first_event_time"] = row["first_event_time"]
        out["last_event_time"] = row["last_event_time"]
    return out


SIDE_KINDS = ("dead_letters", "late", "late_counts", "arrival")
"""The side-file directories a batch's tasks write under the job's output root."""


def clear_side_files(root: str, batch_id: int) -> None:
    """Remove every side file of one batch before it runs again: each task of a re-run writes
    the file of its partition index, but that index may now read other records (Kafka's
    partitions may come in another order when a batch is replayed from the offset log) or
    have none to write, so a file the first attempt wrote must not be left beside them."""
    from jobs.storage import join, storage_for

    st = storage_for(root)
    for kind in SIDE_KINDS:
        d = join(root, kind, f"batch_id={batch_id}")
        for name in st.list(d):
            if name.startswith("part-"):
                st.delete(join(d, name))


def read_side(root: str, kind: str, batch_id: int) -> list[dict[str, Any]]:
    """The gate's side records of one batch (``dead_letters``, ``late`` or ``late_counts``)."""
    from jobs.storage import join, storage_for

    out: list[dict[str, Any]] = []
    d = join(root, kind, f"batch_id={batch_id}")
    st = storage_for(root)
    for name in st.list(d):
        if name.startswith("part-") and name.endswith(".jsonl"):
            text = st.read_text(join(d, name))
            out.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return out


def engine_side_line(ident: tuple[str, int, str], obj: dict[str, Any]) -> tuple[str, str] | None:
    """(directory, line) for one side record the engine emitted (``to_json()`` of a late
    record, or a late count with ``"type": "late_count"``), in the gate's line format; ``None``
    for anything else. The object goes through the JSON text the engine path always sent (so
    values the encoder turns into strings read the same)."""
    from jobs.engine.records import key_json

    kind = obj.get("type")
    if kind not in ("late", "late_count"):
        return None
    obj = json.loads(json.dumps(obj, ensure_ascii=False, default=str))
    if kind == "late":
        job, version, store = ident
        return "late", json.dumps({
            "job": job, "version": version, "store": store,
            "key": key_json(obj.get("key")), "event_time": obj.get("event_time"),
            "window_start": obj.get("window_start"), "window_end": obj.get("window_end"),
            "reason": obj.get("reason"),
            "record": json.dumps(obj.get("record"), ensure_ascii=False, default=str),
        }, ensure_ascii=False)
    return "late_counts", json.dumps({
        "key": key_json(obj.get("key")), "window_start": obj.get("window_start"),
        "window_end": obj.get("window_end"), "accepted": int(obj.get("accepted", 0)),
        "dropped": int(obj.get("dropped", 0)),
    }, ensure_ascii=False)


def write_engine_side(side_root: str, batch_id: int, partition: int,
                      lines: dict[str, list[str]]) -> None:
    """Side files of one engine-path task: ``<kind>/batch_id=N/part-engine-<partition>.jsonl``
    for each kind given (late, late_counts, dead_letters, arrival), written by the stateful
    processor in the executor, as the gate writes its own. Every kind given is written, an
    empty one by removing the file, so a re-run batch or a retried task replaces what the
    first attempt wrote and never adds to it."""
    from jobs.spark.gate import _write_lines
    from jobs.storage import join

    part = f"part-engine-{partition:05d}.jsonl"
    for kind, kind_lines in lines.items():
        _write_lines(join(side_root, kind, f"batch_id={batch_id}", part), kind_lines)
