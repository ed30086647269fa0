package tidemark.spark;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.objects.StaticInvoke;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A string's JSON text exactly as Spark's {@code to_json} writes it (Jackson), in one call the
 * generated code makes: most strings need no escaping and are copied between quotes; only a
 * string holding a character Jackson escapes (control characters, {@code "} and {@code \}) or
 * bytes that are not valid UTF-8 (which Spark decodes as U+FFFD) goes through Jackson itself.
 * Why Java: in SQL the same rule takes a regular expression over a Java copy of the string, a
 * UTF-8 check and {@code to_json} in a branch, all compiled into each projection that needs a
 * key's text (every record on the engine path, every pane on the native path).
 */
public final class JsonText {
    private static final JsonFactory FACTORY = new JsonFactory();

    private JsonText() {}

    /** {@code "s"} with JSON escapes; called by generated code (null never reaches it). */
    public static UTF8String quote(UTF8String s) {
        int n = s.numBytes();
        byte[] out = new byte[n + 2];
        s.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET + 1);
        boolean ascii = true;
        for (int i = 1; i <= n; i++) {
            byte b = out[i];
            if (b < 0) {
                ascii = false;
            } else if (b < 0x20 || b == '"' || b == '\\') {
                return jackson(s);
            }
        }
        if (!ascii && !s.isValid()) return jackson(s);
        out[0] = '"';
        out[n + 1] = '"';
        return UTF8String.fromBytes(out);
    }

    private static UTF8String jackson(UTF8String s) {
        StringWriter w = new StringWriter();
        try (JsonGenerator g = FACTORY.createGenerator(w)) {
            g.writeString(s.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);  // a StringWriter does not fail
        }
        return UTF8String.fromString(w.toString());
    }

    /** {@code quote(c)} as a column (null where {@code c} is null), for Python through py4j. */
    public static Column column(Column c) {
        Expression child = ExpressionUtils.expression(c);
        StaticInvoke call = new StaticInvoke(JsonText.class, DataTypes.StringType, "quote",
            CollectionConverters.asScala(java.util.List.of(child)).toList(),
            CollectionConverters.asScala(java.util.List.<AbstractDataType>of()).toList(),
            true, false, true, Option.empty());
        return ExpressionUtils.column(call);
    }
}
