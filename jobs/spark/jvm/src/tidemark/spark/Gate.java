package tidemark.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.TaskFailureListener;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF7;

/**
 * The native path's gate for the records that need a decision (JVM twin of jobs/spark/gate.py).
 *
 * Spark SQL keeps every ordinary record without calling this: it is only called for a record
 * that is malformed (corrupt line, key or event time null) or whose event time is behind the
 * batch's watermark. It returns whether the record goes on to the windowing, and collects what
 * the Python gate writes: dead letters, late records (pairs whose window expired, or records
 * before the watermark under ``lateness_basis: event``) and late counts per window. They are
 * written when the task succeeds, per (batch, input partition), through an atomic rename, so a
 * re-run batch or a retried task overwrites instead of duplicating (the decisions are the same:
 * same input, same watermark from the offsets log).
 *
 * Arguments: config (tab-separated: side root, ident JSON prefix, has key, size, step, align_to,
 * allowed lateness, event basis), corrupt text, key JSON text, event time ms, our watermark
 * (null = none yet), the record's source columns as a struct, and the dead-letter reason of an
 * event time outside the representable instants (null when it is inside; the text is made in
 * SQL by gate_jvm.py, the Python gate's words).
 */
public final class Gate implements UDF7<String, String, String, Long, Long, Row, String, Boolean> {
    private static final long serialVersionUID = 1L;

    static final class Config {
        final String root;
        final String ident;
        final boolean hasKey;
        final long size, step, align, lateness;
        final boolean eventBasis;

        Config(String text) {
            String[] p = text.split("\t", -1);
            root = p[0];
            ident = p[1];
            hasKey = Boolean.parseBoolean(p[2]);
            size = Long.parseLong(p[3]);
            step = Long.parseLong(p[4]);
            align = Long.parseLong(p[5]);
            lateness = Long.parseLong(p[6]);
            eventBasis = Boolean.parseBoolean(p[7]);
        }
    }

    static final class Buffers {
        final String root;
        final long batch;
        final int partition;
        final List<String> dead = new ArrayList<>();
        final List<String> late = new ArrayList<>();
        final TreeMap<String, long[]> counts = new TreeMap<>();
        volatile boolean failed;

        Buffers(String root, long batch, int partition) {
            this.root = root;
            this.batch = batch;
            this.partition = partition;
        }

        void flush() throws IOException {
            write("dead_letters", dead);
            write("late", late);
            List<String> lines = new ArrayList<>(counts.size());
            for (Map.Entry<String, long[]> e : counts.entrySet()) {
                String[] k = e.getKey().split("\u0000", -1);
                StringBuilder sb = new StringBuilder("{\"key\": ");
                PyJson.string(sb, k[0], true);
                sb.append(", \"window_start\": ").append(k[1])
                  .append(", \"window_end\": ").append(k[2])
                  .append(", \"accepted\": ").append(e.getValue()[0])
                  .append(", \"dropped\": ").append(e.getValue()[1]).append('}');
                lines.add(sb.toString());
            }
            write("late_counts", lines);
        }

        private void write(String kind, List<String> lines) throws IOException {
            if (lines.isEmpty()) return;
            String name = String.format("part-%05d.jsonl", partition);
            StringBuilder sb = new StringBuilder();
            for (String line : lines) sb.append(line).append('\n');
            Files.writeText(root + "/" + kind + "/batch_id=" + batch, name, sb.toString());
        }
    }

    private static final ConcurrentHashMap<String, Config> CONFIGS = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<Long, Buffers> TASKS = new ConcurrentHashMap<>();

    static Buffers buffers(Config cfg) {
        TaskContext ctx = TaskContext.get();
        Long batch = BatchWatermark.batchId(ctx);
        if (ctx == null || batch == null) return null;
        long attempt = ctx.taskAttemptId();
        Buffers b = TASKS.get(attempt);
        if (b == null) {
            Buffers fresh = new Buffers(cfg.root, batch, ctx.partitionId());
            b = fresh;
            TASKS.put(attempt, fresh);
            ctx.addTaskFailureListener((TaskFailureListener) (c, error) -> fresh.failed = true);
            ctx.addTaskCompletionListener((TaskCompletionListener) c -> {
                TASKS.remove(attempt);
                if (!fresh.failed) {
                    try {
                        fresh.flush();
                    } catch (IOException e) {
                        throw new IllegalStateException("tidemark: side files of batch "
                            + fresh.batch + " not written: " + e, e);
                    }
                }
            });
        }
        return b;
    }

    private static String record(Row r) {
        StringBuilder sb = new StringBuilder();
        PyJson.row(sb, r);
        return sb.toString();
    }

    private static void dead(Buffers b, Config cfg, String reason, String record) {
        if (b == null) return;
        StringBuilder sb = new StringBuilder(cfg.ident);
        sb.append(", \"reason\": ");
        PyJson.string(sb, reason, true);
        sb.append(", \"record\": ");
        PyJson.string(sb, record, true);
        b.dead.add(sb.append('}').toString());
    }

    /**
     * The starts of the windows holding {@code t} (size, a new one every step, aligned to
     * align), latest first: the JVM twin of FixedStarts in jobs/definition/windows/fixed.py,
     * checked against it by tests/spark/test_gate_starts_jvm.py.
     */
    static long[] starts(long t, long size, long step, long align) {
        long last = align + Math.floorDiv(t - align, step) * step;
        int n = (int) ((size + step - 1) / step);
        long[] out = new long[n];
        int k = 0;
        for (int j = 0; j < n; j++) {
            long s = last - j * step;
            if (s + size > t) out[k++] = s;
        }
        return k == n ? out : java.util.Arrays.copyOf(out, k);
    }

    @Override
    public Boolean call(String config, String corrupt, String key, Long et, Long wm, Row rec,
                        String outside) {
        Config cfg = CONFIGS.computeIfAbsent(config, Config::new);
        Buffers b = buffers(cfg);
        if (corrupt != null) {
            dead(b, cfg, "unparsable record", corrupt);
            return false;
        }
        if (cfg.hasKey && key == null) {
            dead(b, cfg, "key is null or did not evaluate", record(rec));
            return false;
        }
        if (et == null) {
            dead(b, cfg, outside != null ? outside : "event time is null or did not evaluate",
                 record(rec));
            return false;
        }
        if (wm == null) return true;
        long t = et;
        boolean dropRecord = cfg.eventBasis && t < wm;
        boolean anyKept = false;
        String text = null;
        for (long s : starts(t, cfg.size, cfg.step, cfg.align)) {
            boolean drop, accept;
            if (cfg.eventBasis) {
                drop = dropRecord;
                accept = false;
            } else {
                drop = wm >= s + cfg.size + cfg.lateness;
                accept = !drop && wm >= s + cfg.size;
            }
            if (!drop) anyKept = true;
            if (!(drop || accept) || b == null) continue;
            long[] c = b.counts.computeIfAbsent(
                key + "\u0000" + s + "\u0000" + (s + cfg.size), x -> new long[2]);
            if (drop) {
                c[1]++;
                if (text == null) text = record(rec);
                StringBuilder sb = new StringBuilder(cfg.ident);
                sb.append(", \"key\": ");
                PyJson.string(sb, key, true);
                sb.append(", \"event_time\": ").append(t)
                  .append(", \"window_start\": ").append(s)
                  .append(", \"window_end\": ").append(s + cfg.size)
                  .append(", \"reason\": ");
                PyJson.string(sb, cfg.eventBasis ? "before_watermark" : "expired", true);
                sb.append(", \"record\": ");
                PyJson.string(sb, text, true);
                b.late.add(sb.append('}').toString());
            } else {
                c[0]++;
            }
        }
        return cfg.eventBasis ? !dropRecord : anyKept;
    }
}
