package tidemark.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF0;

/**
 * The id of the running micro-batch (-1 outside a streaming task).
 *
 * Why: the native path writes its panes with Spark's own file sink, partitioned by
 * ``batch_id`` so the results keep their ``panes/batch_id=N/`` layout. No Spark SQL expression
 * exposes the batch id; Spark sets it as a task-local property on every task of a micro-batch
 * (the same one {@link BatchWatermark} reads), also when the batch is re-run after a crash.
 */
public final class BatchId implements UDF0<Long> {
    private static final long serialVersionUID = 1L;

    @Override
    public Long call() {
        Long batch = BatchWatermark.batchId(TaskContext.get());
        return batch == null ? -1L : batch;
    }
}
