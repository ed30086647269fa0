package tidemark.spark;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import org.apache.hadoop.io.Text;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.json.JacksonParser;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Function1;
import scala.Function2;
import scala.collection.Iterable;
import scala.collection.immutable.$colon$colon;
import scala.collection.immutable.Nil$;
import scala.collection.immutable.Seq;

/**
 * Spark's JSON parser for a file source's lines, answering a plain line
 * ({@link FastJson}) itself and handing every other line to Spark's own parsing, so the
 * source's modes, corrupt-record column and error rows are Spark's.
 */
final class FastJsonParser extends JacksonParser {
    private final FastJson fast;

    FastJsonParser(StructType schema, JSONOptions options, Seq<Filter> filters, FastJson fast) {
        super(schema, options, true, filters);
        this.fast = fast;
    }

    @Override
    public <T> Iterable<InternalRow> parse(T record, Function2<JsonFactory, T, JsonParser> create,
                                           Function1<T, UTF8String> literal) {
        if (record instanceof Text) {
            Text line = (Text) record;
            InternalRow row = fast.parse(line.getBytes(), line.getLength());
            if (row != null) return one(row);
        }
        return super.parse(record, create, literal);
    }

    @SuppressWarnings("unchecked")
    private static Iterable<InternalRow> one(InternalRow row) {
        scala.collection.immutable.List<InternalRow> nil =
            (scala.collection.immutable.List<InternalRow>) (Object) Nil$.MODULE$;
        return new $colon$colon<>(row, nil);
    }
}
