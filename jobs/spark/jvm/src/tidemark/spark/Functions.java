package tidemark.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/** Registers tidemark's JVM functions in a session (called from Python through py4j). */
public final class Functions {
    private Functions() {}

    public static void register(SparkSession spark) {
        // Nondeterministic: the gate has side effects (dead letters, late records), so the
        // optimizer must neither duplicate nor reorder its evaluation.
        spark.udf().register("tidemark_gate",
            functions.udf(new Gate(), DataTypes.BooleanType).asNondeterministic());
    }

    /** ``name()``: tidemark's watermark before the batch of ``checkpoint`` (null: none yet; one
     * per checkpoint, BatchWatermark says why). */
    public static void registerOurWatermark(SparkSession spark, String name, String checkpoint,
                                            long shift, long allowedLateness) {
        spark.udf().register(name, functions.udf(
            new BatchWatermark(checkpoint, shift, allowedLateness), DataTypes.LongType));
    }

    /** ``name()``: the batch timestamp of ``checkpoint`` (the panes' ``emitted_at``). */
    public static void registerBatchTimestamp(SparkSession spark, String name, String checkpoint) {
        spark.udf().register(name,
            functions.udf(new BatchWatermark(checkpoint, true), DataTypes.LongType));
    }
}
