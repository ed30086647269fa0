package tidemark.spark;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;

import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction2;

/**
 * One micro-batch's panes written as the Parquet files of one directory, replacing what the
 * directory held, in one Spark job with no write query of its own (jobs/spark/sinks.py).
 *
 * <p>Spark's own {@code df.write.mode("overwrite").parquet(dir)} plans a write command per
 * call, copies and ships the whole Hadoop configuration to every task and commits through
 * {@code _temporary} directories and renames; for a micro-batch of a few ten thousand panes
 * that fixed work was most of the write's cost (docs/performance.md). Here the files are the
 * ones Spark's Parquet writer produces (its {@link ParquetFileFormat} output writer, the same
 * session settings, the same schema metadata), each task writes its partition's rows to a
 * hidden file and renames it into place, and the tasks take the executor's own Hadoop
 * configuration plus the few keys the Parquet format sets for this schema.
 *
 * <p>Exactly once: the directory is emptied first, a task's file name depends only on its
 * partition index, so a re-run batch replaces every file it wrote before; readers ignore the
 * hidden in-flight names ({@code .} prefix), as they ignore Spark's {@code _temporary}.
 */
public final class PaneFiles {
    private PaneFiles() {}

    /** Writes {@code panes} into {@code dir} (replacing its contents); returns the rows written. */
    public static long write(Dataset<Row> panes, String dir) throws IOException {
        org.apache.spark.sql.classic.Dataset<Row> ds = (org.apache.spark.sql.classic.Dataset<Row>) panes;
        SparkSession spark = ds.sparkSession();
        StructType schema = ds.schema();
        Job job = Job.getInstance(new Configuration(false));
        OutputWriterFactory factory = new ParquetFileFormat().prepareWrite(
                spark, job, scala.collection.immutable.Map$.MODULE$.<String, String>empty(),
                schema);
        HashMap<String, String> keys = new HashMap<>();
        for (Map.Entry<String, String> e : job.getConfiguration()) {
            keys.put(e.getKey(), e.getValue());
        }
        String ext = factory.getFileExtension(context(job.getConfiguration(), 0, 0));

        Path target = new Path(dir);
        FileSystem fs = target.getFileSystem(spark.sparkContext().hadoopConfiguration());
        fs.delete(target, true);
        fs.mkdirs(target);

        RDD<InternalRow> rows = ds.queryExecution().toRdd();
        long[] counts = (long[]) spark.sparkContext().runJob(
                rows, new WriteTask(dir, ext, schema, factory, keys), ClassTag$.MODULE$.Long());
        long total = 0;
        for (long n : counts) {
            total += n;
        }
        if (total == 0) {
            // no task wrote a file: one empty file carries the schema, as Spark's writer does
            Configuration conf = new Configuration(spark.sparkContext().hadoopConfiguration());
            keys.forEach(conf::set);
            Path file = new Path(target, name(0, ext));
            Path tmp = new Path(target, "." + file.getName() + ".tmp-driver");
            factory.newInstance(tmp.toString(), schema, context(conf, 0, 0)).close();
            moveInto(fs, tmp, file);
        }
        removeLeftovers(fs, target);
        return total;
    }

    /**
     * One task's work: its partition's rows into one file. A named class rather than a lambda:
     * Spark runs its closure cleaner on every lambda a job is given (reading and parsing the
     * class file that declares it, every batch), and skips objects that are not closures.
     */
    static final class WriteTask
            extends AbstractFunction2<TaskContext, scala.collection.Iterator<InternalRow>, Object>
            implements Serializable {
        private static final long serialVersionUID = 1L;
        private final String dir;
        private final String ext;
        private final StructType schema;
        private final OutputWriterFactory factory;
        private final HashMap<String, String> keys;

        WriteTask(String dir, String ext, StructType schema, OutputWriterFactory factory,
                  HashMap<String, String> keys) {
            this.dir = dir;
            this.ext = ext;
            this.schema = schema;
            this.factory = factory;
            this.keys = keys;
        }

        @Override
        public Object apply(TaskContext tc, scala.collection.Iterator<InternalRow> it) {
            try {
                return writePartition(tc.partitionId(), it, dir, ext, schema, factory, keys);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private static long writePartition(int index, scala.collection.Iterator<InternalRow> it,
                                       String dir,
                                       String ext, StructType schema,
                                       OutputWriterFactory factory, Map<String, String> keys)
            throws IOException {
        if (!it.hasNext()) {
            return 0L;
        }
        Configuration conf = new Configuration(Files.hadoopConf());
        keys.forEach(conf::set);
        TaskContext tc = TaskContext.get();
        int attempt = tc == null ? 0 : tc.attemptNumber();
        Path file = new Path(dir, name(index, ext));
        Path tmp = new Path(dir, "." + file.getName() + ".tmp-" + attempt);
        OutputWriter writer = factory.newInstance(tmp.toString(), schema,
                                                  context(conf, index, attempt));
        long n = 0;
        try {
            while (it.hasNext()) {
                writer.write(it.next());
                n++;
            }
        } finally {
            writer.close();
        }
        moveInto(file.getFileSystem(conf), tmp, file);
        return n;
    }

    private static String name(int index, String ext) {
        return String.format("part-%05d-c000%s", index, ext);
    }

    private static TaskAttemptContext context(Configuration conf, int index, int attempt) {
        return new TaskAttemptContextImpl(
                conf, new TaskAttemptID("tidemark", 0, TaskType.MAP, index, attempt));
    }

    private static void moveInto(FileSystem fs, Path tmp, Path file) throws IOException {
        if (!fs.rename(tmp, file)) {
            fs.delete(file, false);
            if (!fs.rename(tmp, file)) {
                throw new IOException("could not move " + tmp + " to " + file);
            }
        }
    }

    /** Hidden files a failed task attempt left behind (its file was never renamed). */
    private static void removeLeftovers(FileSystem fs, Path target) throws IOException {
        List<Path> stale = new ArrayList<>();
        for (FileStatus st : fs.listStatus(target)) {
            String n = st.getPath().getName();
            if (n.startsWith(".part-") && n.contains(".tmp-") && !n.endsWith(".crc")) {
                stale.add(st.getPath());
            }
        }
        for (Path p : stale) {
            fs.delete(p, false);
        }
    }
}
