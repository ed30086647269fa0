package tidemark.spark;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF0;

/**
 * Spark's watermark (or, with {@link #timestamp}, the batch timestamp) of the running
 * micro-batch of one checkpoint, read from its offsets log (local or a Hadoop URI: {@link Files}).
 *
 * Why: docs/semantics.md judges lateness against the watermark as it stood before a
 * micro-batch, but no Spark SQL expression exposes it (Spark's own late-row filter uses the
 * previous batch's). The
 * batch id is a task-local property Spark sets for every streaming task; the offsets log entry
 * of that batch is written before the batch runs and reused when it is re-run after a crash, so
 * the value is a pure function of (checkpoint, batch) and may be cached per JVM.
 * Returns 0 (= no watermark yet) outside a streaming task.
 *
 * The checkpoint is bound at registration (one function per checkpoint, no argument): with the
 * checkpoint as a string argument Spark converted that constant to a Java String for every
 * record (profiled: about 5% of a native-path run). The function runs for every record and
 * within one task the answer never changes, so the last (task, value) pair is kept in one
 * immutable holder: the common case is one field read and one identity comparison (a racy
 * read still sees a consistent pair).
 *
 * The timestamp variant gives the native path's pane rows their ``emitted_at`` inside the
 * streaming query: as a per-batch literal it changed the generated code every batch (Spark
 * compiled the pane projection again each time), as a function call the code stays the same.
 */
public final class BatchWatermark implements UDF0<Long> {
    private static final long serialVersionUID = 1L;
    private static final Pattern WM = Pattern.compile("\"batchWatermarkMs\"\\s*:\\s*(-?\\d+)");
    private static final Pattern TS = Pattern.compile("\"batchTimestampMs\"\\s*:\\s*(-?\\d+)");
    private static final ConcurrentHashMap<String, Long> CACHE = new ConcurrentHashMap<>();

    private final String checkpoint;
    private final boolean timestamp;
    private final boolean ours;
    private final long shift;
    private final long allowedLateness;
    private transient volatile Object[] last;

    /** ``timestamp``: the batch's timestamp (``batchTimestampMs``) instead of its watermark. */
    public BatchWatermark(String checkpoint, boolean timestamp) {
        this.checkpoint = checkpoint;
        this.timestamp = timestamp;
        this.ours = false;
        this.shift = 0L;
        this.allowedLateness = 0L;
    }

    /**
     * tidemark's watermark before the batch (docs/semantics.md): null while Spark's is 0 (none
     * yet), else Spark's minus the native path's event-time ``shift`` plus the allowed lateness
     * (``GateConfig.our_watermark``). Computed here rather than as SQL around the plain
     * watermark: that expression sat three times in every batch's plan (gate condition, gate
     * argument, pane rows) for the optimizer and the code generator to walk.
     */
    public BatchWatermark(String checkpoint, long shift, long allowedLateness) {
        this.checkpoint = checkpoint;
        this.timestamp = false;
        this.ours = true;
        this.shift = shift;
        this.allowedLateness = allowedLateness;
    }

    static Long batchId(TaskContext ctx) {
        String prop = ctx == null ? null : ctx.getLocalProperty("streaming.sql.batchId");
        return prop == null ? null : Long.valueOf(prop);
    }

    static long field(String checkpoint, long batch, boolean timestamp) {
        String key = checkpoint + (timestamp ? "\u0000t" : "\u0000") + batch;
        Long cached = CACHE.get(key);
        if (cached != null) return cached;
        long value;
        try {
            String[] lines = Files.readText(
                checkpoint + "/offsets/" + Long.toString(batch)).split("\n", 3);
            Matcher m = (timestamp ? TS : WM).matcher(lines.length > 1 ? lines[1] : "");
            value = m.find() ? Long.parseLong(m.group(1)) : 0L;
        } catch (IOException e) {
            throw new IllegalStateException(
                "tidemark: offsets log of batch " + batch + " unreadable under " + checkpoint, e);
        }
        if (CACHE.size() > 1024) CACHE.clear();
        CACHE.put(key, value);
        return value;
    }

    @Override
    public Long call() {
        TaskContext ctx = TaskContext.get();
        Object[] l = last;
        if (ctx != null && l != null && l[0] == ctx) return (Long) l[1];
        Long batch = batchId(ctx);
        Long wm = batch == null ? 0L : field(checkpoint, batch, timestamp);
        if (ours) wm = wm > 0 ? Long.valueOf(wm - shift + allowedLateness) : null;
        if (ctx != null) last = new Object[] {ctx, wm};
        return wm;
    }
}
