package tidemark.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

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
 */
public final class Pack {
    private Pack() {}

    /** ``input`` packed: columns (``bucketName``: column 0's type, ``packedName``: binary). */
    public static Dataset<Row> byBucket(Dataset<Row> input, String bucketName, String packedName,
                                        String timeZone, boolean largeVarTypes, int chunk) {
        StructType schema = input.schema();
        StructField bucket = schema.fields()[0];
        StructType out = new StructType(new StructField[] {
            DataTypes.createStructField(bucketName, bucket.dataType(), bucket.nullable()),
            DataTypes.createStructField(packedName, DataTypes.BinaryType, false),
        });
        return input.mapPartitions(new Fn(schema, timeZone, largeVarTypes, chunk),
                                   Encoders.row(out));
    }

    static final class Fn implements MapPartitionsFunction<Row, Row> {
        private static final long serialVersionUID = 1L;
        final StructType schema;
        final String timeZone;
        final boolean largeVarTypes;
        final int chunk;

        Fn(StructType schema, String timeZone, boolean largeVarTypes, int chunk) {
            this.schema = schema;
            this.timeZone = timeZone;
            this.largeVarTypes = largeVarTypes;
            this.chunk = Math.max(1, chunk);
        }

        @Override
        public Iterator<Row> call(Iterator<Row> input) {
            return new Packer(this, input);
        }
    }

    /** Reads a chunk of records when its packed rows are used up; frees the Arrow buffers when
     * the input ends or the task does (whichever comes first). */
    static final class Packer implements Iterator<Row> {
        private final Fn fn;
        private final Iterator<Row> input;
        private final scala.Function1<Object, Object> toCatalyst;
        private final ArrayDeque<Row> ready = new ArrayDeque<>();
        private ArrowWriter writer;

        Packer(Fn fn, Iterator<Row> input) {
            this.fn = fn;
            this.input = input;
            this.toCatalyst = CatalystTypeConverters.createToCatalystConverter(fn.schema);
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
            Map<Object, List<InternalRow>> groups = new LinkedHashMap<>();
            for (int n = 0; n < fn.chunk && input.hasNext(); n++) {
                Row row = input.next();
                groups.computeIfAbsent(row.get(0), k -> new ArrayList<>())
                      .add((InternalRow) toCatalyst.apply(row));
            }
            if (writer == null) {
                writer = ArrowWriter.create(fn.schema, fn.timeZone, true, fn.largeVarTypes);
            }
            for (Map.Entry<Object, List<InternalRow>> e : groups.entrySet()) {
                ready.add(RowFactory.create(e.getKey(), ipcBytes(e.getValue())));
            }
        }

        private byte[] ipcBytes(List<InternalRow> rows) {
            writer.reset();
            for (InternalRow r : rows) writer.write(r);
            writer.finish();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
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
            if (writer != null) {
                writer.root().close();
                writer = null;
            }
        }
    }
}
