package tidemark.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.CreateStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.CatalystSerde;
import org.apache.spark.sql.catalyst.plans.logical.DeserializeToObject;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MapPartitions;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ObjectType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The engine path's packing stage in the JVM (JVM twin of jobs/spark/engine_path/packing.py's
 * ``pack_by_bucket``): every chunk of a partition's records becomes one row per bucket
 * (column 0), holding that bucket's records, in their order, as an Arrow IPC stream.
 *
 * Written with Spark's own Arrow writer, with the schema, time zone and large-types setting
 * pyspark's ``mapInArrow`` hands its Python function, so the processor reads the same Arrow
 * table it read from the Python stage; no Python worker runs before the shuffle. A chunk holds
 * at most ``chunk`` records (``spark.sql.execution.arrow.maxRecordsPerBatch``, the batch size
 * the Python stage saw), which bounds the memory a task holds.
 *
 * The records reach the packer as Spark's internal rows (a ``DeserializeToObject`` whose
 * deserializer is the struct of the input's columns, under a ``MapPartitions``): no external
 * ``Row`` per record and no conversion back, which ``Dataset.mapPartitions`` over rows costs.
 * Each record goes straight into its bucket's Arrow writer, so no record is held by reference
 * (the input's rows and strings may be reused by the operator below).
 */
public final class Pack {
    private Pack() {}

    /** ``input`` packed: columns (``bucketName``: column 0's type, ``packedName``: binary). */
    public static Dataset<Row> byBucket(Dataset<Row> input, String bucketName, String packedName,
                                        String timeZone, boolean largeVarTypes, int chunk) {
        org.apache.spark.sql.classic.Dataset<Row> ds =
            (org.apache.spark.sql.classic.Dataset<Row>) input;
        StructType schema = input.schema();
        StructField bucket = schema.fields()[0];
        StructType out = new StructType(new StructField[] {
            DataTypes.createStructField(bucketName, bucket.dataType(), bucket.nullable()),
            DataTypes.createStructField(packedName, DataTypes.BinaryType, false),
        });
        LogicalPlan child = ds.logicalPlan();
        @SuppressWarnings("unchecked")
        Seq<Expression> columns = (Seq<Expression>) (Seq<?>) child.output();
        Expression record = CreateStruct.apply(columns);
        Attribute records = objectAttribute(InternalRow.class);
        LogicalPlan deserialized = new DeserializeToObject(record, records, child);
        Encoder<Row> encoder = Encoders.row(out);
        LogicalPlan mapped = new MapPartitions(
            new Fn(schema, bucket.dataType(), timeZone, largeVarTypes, chunk),
            objectAttribute(Row.class), deserialized);
        LogicalPlan plan = CatalystSerde.serialize(mapped, encoder);
        return org.apache.spark.sql.classic.Dataset.ofRows(ds.sparkSession(), plan);
    }

    private static Attribute objectAttribute(Class<?> cls) {
        return new AttributeReference("obj", new ObjectType(cls), false, Metadata.empty(),
                                      NamedExpression.newExprId(),
                                      CollectionConverters.asScala(
                                          java.util.List.<String>of()).toList());
    }

    static final class Fn extends AbstractFunction1<scala.collection.Iterator<Object>,
                                                    scala.collection.Iterator<Object>>
            implements java.io.Serializable {
        private static final long serialVersionUID = 2L;
        final StructType schema;
        final DataType bucketType;
        final String timeZone;
        final boolean largeVarTypes;
        final int chunk;

        Fn(StructType schema, DataType bucketType, String timeZone, boolean largeVarTypes,
           int chunk) {
            this.schema = schema;
            this.bucketType = bucketType;
            this.timeZone = timeZone;
            this.largeVarTypes = largeVarTypes;
            this.chunk = Math.max(1, chunk);
        }

        @Override
        public scala.collection.Iterator<Object> apply(scala.collection.Iterator<Object> input) {
            @SuppressWarnings("unchecked")
            Iterator<Object> out = (Iterator<Object>) (Iterator<?>)
                new Packer(this, CollectionConverters.asJava(input));
            return CollectionConverters.asScala(out);
        }
    }

    /** Packs a chunk of records when its packed rows are used up: each record into its
     * bucket's Arrow writer (one per bucket, kept for the task); frees the Arrow buffers when
     * the input ends or the task does (whichever comes first). */
    static final class Packer implements Iterator<Row> {
        private final Fn fn;
        private final Iterator<Object> input;
        private final ArrayDeque<Row> ready = new ArrayDeque<>();
        private final Map<Object, ArrowWriter> writers = new HashMap<>();
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        Packer(Fn fn, Iterator<Object> input) {
            this.fn = fn;
            this.input = input;
            TaskContext ctx = TaskContext.get();
            if (ctx != null) ctx.addTaskCompletionListener((TaskCompletionListener) c -> close());
        }

        @Override
        public boolean hasNext() {
            while (ready.isEmpty() && input.hasNext()) packChunk();
            if (ready.isEmpty()) close();
            return !ready.isEmpty();
        }

        @Override
        public Row next() {
            if (!hasNext()) throw new java.util.NoSuchElementException();
            return ready.poll();
        }

        private void packChunk() {
            // first appearance order of the buckets, record order within each
            Set<Object> order = new LinkedHashSet<>();
            for (int n = 0; n < fn.chunk && input.hasNext(); n++) {
                InternalRow row = (InternalRow) input.next();
                Object bucket = InternalRow.copyValue(row.get(0, fn.bucketType));
                ArrowWriter writer = writers.get(bucket);
                if (writer == null) {
                    writer = ArrowWriter.create(fn.schema, fn.timeZone, true, fn.largeVarTypes);
                    writers.put(bucket, writer);
                }
                if (order.add(bucket)) writer.reset();
                writer.write(row);
            }
            for (Object bucket : order) {
                ready.add(RowFactory.create(external(bucket), ipcBytes(writers.get(bucket))));
            }
        }

        /** The bucket value as a ``Row`` holds it (the bucket column is integral or null). */
        private Object external(Object bucket) {
            return bucket instanceof org.apache.spark.unsafe.types.UTF8String
                ? bucket.toString() : bucket;
        }

        private byte[] ipcBytes(ArrowWriter writer) {
            writer.finish();
            bytes.reset();
            try (ArrowStreamWriter stream =
                     new ArrowStreamWriter(writer.root(), null, Channels.newChannel(bytes))) {
                stream.start();
                stream.writeBatch();
                stream.end();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return bytes.toByteArray();
        }

        private void close() {
            for (ArrowWriter writer : writers.values()) writer.root().close();
            writers.clear();
        }
    }
}
