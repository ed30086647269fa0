"""The engine path: the pure windowing engine hosted in Spark's state store, once per bucket.

Records are grouped by ``bucket = pmod(xxhash64(key), buckets)``; Spark calls the stateful
processor (``transformWithStateInPandas``, RocksDB) once per bucket and micro-batch with all of
that bucket's records as columnar pandas frames. The processor restores one engine (all keys of
the bucket) from the bucket's state blob, feeds it the batch as ONE arrival unit (its records
in arrival order, restored after the shuffle from the source's order columns), and saves the
blob back: one Python call and one state round trip per bucket, never per key.

One module per concern:

| module | holds |
|---|---|
| ``config`` | the column names, :class:`HostConfig` (what a processor needs), the engine's watermark mode |
| ``stream`` | :func:`build_engine_stream`: the stateful stream from the projected source (:class:`EngineStreamSpec`) |
| ``buckets`` | the bucket layout of a checkpoint and the grouping values that spread buckets over partitions |
| ``time_mode`` | the operator's time mode (``EventTime`` / ``ProcessingTime``), fixed per checkpoint |
| ``processor`` | :class:`EngineProcessor`, Spark's ``StatefulProcessor``: catch-up, ingest, timers, side files |
| ``processor_shell`` | :class:`ProcessorShell`, the processor Spark pickles: light to import on the driver, builds the ``EngineProcessor`` on a task's first call |
| ``batch_input`` | a pandas frame of one bucket's records as the engine's ``RecordBatch`` |
| ``engine_calls`` | the engine calls of one processor call, columnar where the engine has it, and their output split into panes and side emissions |
| ``output`` | the operator's output rows (panes) as a pandas frame, from ``Pane`` objects or pane columns |
| ``dead_letters`` | dead letters marked in SQL and their text rebuilt from pandas, as the gate writes it |
| ``state_blob`` | the state blob codec (engine state <-> bytes in the ``engine`` value state) |
| ``engine_cache`` | a Python worker's engines kept between micro-batches |

docs/spark.md describes the path as a whole (watermark, clock, order inside one call).
"""
