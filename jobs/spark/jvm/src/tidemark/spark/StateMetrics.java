package tidemark.spark;

import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.streaming.runtime.IncrementalExecution;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * The streaming aggregation's operator metrics of one executed micro-batch plan, summed over
 * its operators, in one py4j call (jobs/spark/state_rows.py uses them to count the state's
 * rows without RocksDB's read-before-write, and the native path's panes without an observed
 * metric on its write).
 *
 * <p>Operators are recognised by their class name, not their class: Spark moved them between
 * packages across releases (``execution.streaming`` to ``...operators.stateful``), and the
 * names have stayed.
 */
public final class StateMetrics {
    private StateMetrics() {}

    /** Index of each value in {@link #of}'s result. */
    public static final int RESTORED_OUTPUT = 0;
    public static final int UPDATED = 1;
    public static final int REMOVED = 2;
    public static final int DROPPED = 3;
    public static final int TOTAL = 4;
    public static final int SAVE_OPERATORS = 5;
    public static final int SAVE_OUTPUT = 6;

    /**
     * {restore operators' output rows, rows written, rows evicted, rows dropped as late, the
     * store's own total (-1 per operator when RocksDB does not track it), number of save
     * operators, save operators' output rows (in append mode: the expired groups it emits)}.
     */
    public static long[] of(SparkPlan plan) {
        long[] out = new long[7];
        visit(plan, out);
        return out;
    }

    /**
     * {@link #of} the running query's last executed micro-batch, as comma-separated text (one
     * py4j call per batch, no Java array crossing element by element); null before the query
     * has executed a batch.
     */
    public static String ofQuery(StreamingQuery query) {
        IncrementalExecution last = ((StreamingQueryWrapper) query).streamingQuery().lastExecution();
        if (last == null) {
            return null;
        }
        long[] v = of(last.executedPlan());
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < v.length; i++) {
            text.append(i == 0 ? "" : ",").append(v[i]);
        }
        return text.toString();
    }

    private static void visit(SparkPlan node, long[] out) {
        String name = node.getClass().getSimpleName();
        if (name.equals("StateStoreRestoreExec")) {
            out[RESTORED_OUTPUT] += value(node, "numOutputRows");
        } else if (name.equals("StateStoreSaveExec")) {
            out[UPDATED] += value(node, "numUpdatedStateRows");
            out[REMOVED] += value(node, "numRemovedStateRows");
            out[DROPPED] += value(node, "numRowsDroppedByWatermark");
            out[TOTAL] += value(node, "numTotalStateRows");
            out[SAVE_OPERATORS] += 1;
            out[SAVE_OUTPUT] += value(node, "numOutputRows");
        }
        scala.collection.Iterator<SparkPlan> children = node.children().iterator();
        while (children.hasNext()) {
            visit(children.next(), out);
        }
    }

    private static long value(SparkPlan node, String metric) {
        scala.Option<SQLMetric> m = node.metrics().get(metric);
        return m.isDefined() ? m.get().value() : 0L;
    }
}
