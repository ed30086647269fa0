package tidemark.spark;

import java.io.Serializable;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.json.JSONOptionsInRead;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.json.JsonFileFormat;
import org.apache.spark.sql.execution.datasources.json.TextInputJsonDataSource;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import scala.Function1;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * Spark's JSON Lines file source ({@code format("json")}), with each line's plain case parsed
 * by {@link FastJson} and every other line by Spark's parser, through Spark's own line reader
 * and failure handling: the same rows, corrupt-record texts and modes as the source it
 * extends. Lines in multi-line mode, with a declared encoding, in archives, under pushed
 * filters or for columns {@link FastJson} does not cover are read by Spark's reader as is.
 */
public final class FastJsonFileFormat extends JsonFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(
            SparkSession spark, StructType dataSchema, StructType partitionSchema,
            StructType requiredSchema, Seq<Filter> filters, Map<String, String> options,
            Configuration hadoopConf) {
        SQLConf conf = spark.sessionState().conf();
        JSONOptions parsed = new JSONOptionsInRead(options, conf.sessionLocalTimeZone(),
            conf.columnNameOfCorruptRecord());
        String corrupt = parsed.columnNameOfCorruptRecord();
        StructType actual = new StructType(java.util.Arrays.stream(requiredSchema.fields())
            .filter(f -> !f.name().equals(corrupt)).toArray(StructField[]::new));
        boolean plain = !parsed.multiLine() && parsed.encoding().isEmpty()
            && !parsed.archiveFormatEnabled() && filters.isEmpty()
            && actual.fields().length > 0 && FastJson.covers(actual);
        if (!plain) {
            return super.buildReader(spark, dataSchema, partitionSchema, requiredSchema, filters,
                options, hadoopConf);
        }
        Broadcast<SerializableConfiguration> shared =
            SerializableConfiguration.broadcast(spark.sparkContext(), hadoopConf);
        return new Reader(shared, parsed, actual, requiredSchema, filters,
            FastJson.forColumns(actual, corrupt));
    }

    /** One file's rows: Spark's JSON Lines reading with {@link FastJsonParser}. */
    private static final class Reader extends AbstractFunction1<PartitionedFile,
            Iterator<InternalRow>> implements Serializable {
        private static final long serialVersionUID = 1L;
        private final Broadcast<SerializableConfiguration> conf;
        private final JSONOptions options;
        private final StructType actual;
        private final StructType required;
        private final Seq<Filter> filters;
        private final FastJson fast;

        Reader(Broadcast<SerializableConfiguration> conf, JSONOptions options, StructType actual,
               StructType required, Seq<Filter> filters, FastJson fast) {
            this.conf = conf;
            this.options = options;
            this.actual = actual;
            this.required = required;
            this.filters = filters;
            this.fast = fast;
        }

        @Override
        public Iterator<InternalRow> apply(PartitionedFile file) {
            FastJsonParser parser = new FastJsonParser(actual, options, filters, fast);
            return TextInputJsonDataSource.readFile(conf.value().value(), file, parser, required);
        }
    }
}
