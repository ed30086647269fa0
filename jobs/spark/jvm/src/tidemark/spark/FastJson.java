package tidemark.spark;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.objects.Invoke;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ObjectType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A flat JSON object parsed straight from its UTF-8 bytes into the row Spark's {@code from_json}
 * would give (PERMISSIVE, corrupt-record column last), for the common, plain case only:
 * an object whose names and string values are printable ASCII without escapes, whose numbers
 * are integers, and whose other values are {@code true}, {@code false} or {@code null}.
 * Anything else (escapes, non-ASCII text, fractions, nested values, a repeated name, trailing
 * text, a value of the wrong kind for its column) returns null, and the caller falls back to
 * {@code from_json} for that record ({@code coalesce(fast, from_json)}), so every answer is
 * Spark's own. Why: Spark's parser creates a Jackson parser and a reader per record, several
 * times the CPU of reading a small record at all (benchmarks/json_parse.py).
 */
public final class FastJson implements Serializable {
    private static final long serialVersionUID = 1L;

    static final byte STRING = 0;
    static final byte INT = 1;
    static final byte LONG = 2;
    static final byte BOOLEAN = 3;
    static final byte DOUBLE = 4;

    private final byte[][] names;
    private final byte[] types;
    private final byte[] corruptName;
    private final int slots;

    /** {@code slots}: the row's width, the columns plus a corrupt-record slot or not. */
    FastJson(byte[][] names, byte[] types, byte[] corruptName, int slots) {
        this.names = names;
        this.types = types;
        this.corruptName = corruptName;
        this.slots = slots;
    }

    /** A parser whose rows hold exactly the columns of {@code schema} (a JSON file
     * source's required columns), which must pass {@link #covers}; a name equal to
     * {@code corruptColumn} falls back. */
    static FastJson forColumns(StructType schema, String corruptColumn) {
        return build(schema, corruptColumn, schema.fields().length);
    }

    /** {@code slots} wide rows for the columns of {@code schema}; a null
     * {@code corruptColumn} matches no name. */
    private static FastJson build(StructType schema, String corruptColumn, int slots) {
        StructField[] fields = schema.fields();
        byte[][] names = new byte[fields.length][];
        byte[] types = new byte[fields.length];
        for (int f = 0; f < fields.length; f++) {
            int code = code(fields[f].dataType());
            if (code < 0) throw new IllegalArgumentException("not covered: " + fields[f]);
            names[f] = fields[f].name().getBytes(StandardCharsets.UTF_8);
            types[f] = (byte) code;
        }
        byte[] corrupt = corruptColumn == null ? new byte[] {'"'}  // matches no name
            : corruptColumn.getBytes(StandardCharsets.UTF_8);
        return new FastJson(names, types, corrupt, slots);
    }

    /** The row for {@code s}, or null when the plain case does not cover it (fall back). */
    public InternalRow parse(UTF8String s) {
        byte[] b = s.getBytes();
        return parse(b, b.length);
    }

    /** The row for the text b[0, n), or null when the plain case does not cover it. */
    InternalRow parse(byte[] b, int n) {
        Object[] out = new Object[slots];
        long seen = 0L;
        int i = skip(b, 0, n);
        if (i >= n || b[i] != '{') return null;
        i = skip(b, i + 1, n);
        if (i < n && b[i] == '}') {
            return skip(b, i + 1, n) == n ? new GenericInternalRow(out) : null;
        }
        while (true) {
            if (i >= n || b[i] != '"') return null;
            int nameStart = i + 1;
            int j = nameStart;
            while (j < n) {
                byte c = b[j];
                if (c == '"') break;
                if (c < 0x20 || c == '\\' || c < 0) return null;
                j++;
            }
            if (j >= n) return null;
            int field = find(b, nameStart, j - nameStart);
            if (field == -2) return null;  // the corrupt-record column's own name
            i = skip(b, j + 1, n);
            if (i >= n || b[i] != ':') return null;
            i = skip(b, i + 1, n);
            if (i >= n) return null;
            int end = value(b, i, n, field < 0 ? -1 : types[field], out, field);
            if (end < 0) return null;
            if (field >= 0) {
                if (field < 64) {
                    long bit = 1L << field;
                    if ((seen & bit) != 0) return null;  // a repeated name
                    seen |= bit;
                } else {
                    return null;
                }
            }
            i = skip(b, end, n);
            if (i >= n) return null;
            if (b[i] == ',') {
                i = skip(b, i + 1, n);
                continue;
            }
            if (b[i] != '}') return null;
            return skip(b, i + 1, n) == n ? new GenericInternalRow(out) : null;
        }
    }

    private static int skip(byte[] b, int i, int n) {
        while (i < n) {
            byte c = b[i];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return i;
            i++;
        }
        return i;
    }

    /** The column of the name at b[start, start + len): its index, -1 if none, -2 for the
     * corrupt-record column's name. */
    private int find(byte[] b, int start, int len) {
        for (int f = 0; f < names.length; f++) {
            if (same(names[f], b, start, len)) return f;
        }
        return same(corruptName, b, start, len) ? -2 : -1;
    }

    private static boolean same(byte[] name, byte[] b, int start, int len) {
        if (name.length != len) return false;
        for (int k = 0; k < len; k++) {
            if (name[k] != b[start + k]) return false;
        }
        return true;
    }

    /** Parses the value at b[i]; stores it in out[field] (type {@code type}) unless field < 0;
     * returns the index after it, or -1 to fall back. */
    private static int value(byte[] b, int i, int n, int type, Object[] out, int field) {
        byte c = b[i];
        if (c == '"') {
            int j = i + 1;
            while (j < n) {
                byte d = b[j];
                if (d == '"') break;
                if (d < 0x20 || d == '\\') return -1;  // control, escape or non-ASCII byte
                j++;
            }
            if (j >= n) return -1;
            if (field >= 0) {
                if (type != STRING) return -1;
                out[field] = UTF8String.fromBytes(Arrays.copyOfRange(b, i + 1, j));
            }
            return delimited(b, j + 1, n);
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            int j = i;
            boolean negative = c == '-';
            if (negative) j++;
            int digitsStart = j;
            long v = 0L;
            while (j < n && b[j] >= '0' && b[j] <= '9') {
                v = v * 10 + (b[j] - '0');
                j++;
            }
            int digits = j - digitsStart;
            if (digits == 0 || digits > 15) return -1;
            if (b[digitsStart] == '0' && (digits > 1 || negative)) return -1;  // 01, -0
            int end = delimited(b, j, n);  // a '.', 'e' or letter after the digits falls back
            if (end < 0 || field < 0) return end;
            if (negative) v = -v;
            switch (type) {
                case INT:
                    if (digits > 9) return -1;
                    out[field] = (int) v;
                    return end;
                case LONG:
                    out[field] = v;
                    return end;
                case DOUBLE:
                    out[field] = (double) v;
                    return end;
                default:
                    return -1;
            }
        }
        if (matches(b, i, n, "true") || matches(b, i, n, "false")) {
            int len = c == 't' ? 4 : 5;
            int end = delimited(b, i + len, n);
            if (end < 0 || field < 0) return end;
            if (type != BOOLEAN) return -1;
            out[field] = c == 't';
            return end;
        }
        if (matches(b, i, n, "null")) {
            // out[field] stays null: a JSON null is a null column of every type
            return delimited(b, i + 4, n);
        }
        return -1;  // an object, an array or anything else
    }

    private static boolean matches(byte[] b, int i, int n, String word) {
        int len = word.length();
        if (i + len > n) return false;
        for (int k = 0; k < len; k++) {
            if (b[i + k] != word.charAt(k)) return false;
        }
        return true;
    }

    /** {@code i} if a value may end there (whitespace, ',', '}' or the end), else -1. */
    private static int delimited(byte[] b, int i, int n) {
        if (i >= n) return i;
        byte c = b[i];
        return c == ',' || c == '}' || c == ' ' || c == '\n' || c == '\r' || c == '\t' ? i : -1;
    }

    /** The type code of a column of {@code type}, or -1 when the plain case does not cover it. */
    static int code(DataType type) {
        if (type.equals(DataTypes.StringType)) return STRING;
        if (type.equals(DataTypes.IntegerType)) return INT;
        if (type.equals(DataTypes.LongType)) return LONG;
        if (type.equals(DataTypes.BooleanType)) return BOOLEAN;
        if (type.equals(DataTypes.DoubleType)) return DOUBLE;
        return -1;
    }

    /** Whether every column of {@code schema} is of a type the plain case covers (at most 64). */
    public static boolean covers(StructType schema) {
        if (schema.fields().length > 64) return false;
        for (StructField f : schema.fields()) {
            if (code(f.dataType()) < 0) return false;
        }
        return true;
    }

    /**
     * {@code parse(text)} as a column of {@code from_json(text, schema + corrupt)}'s type: the
     * declared columns (nullable) and the corrupt-record column; null where the plain case
     * does not cover the record. {@code schema} must pass {@link #covers}.
     */
    public static Column column(Column text, StructType schema, String corruptColumn) {
        List<StructField> out = new ArrayList<>();
        for (StructField f : schema.fields()) {
            out.add(new StructField(f.name(), f.dataType(), true, Metadata.empty()));
        }
        out.add(new StructField(corruptColumn, DataTypes.StringType, true, Metadata.empty()));
        FastJson parser = build(schema, corruptColumn, out.size());
        Expression target = new Literal(parser, new ObjectType(FastJson.class));
        Expression child = ExpressionUtils.expression(text);
        Invoke call = new Invoke(target, "parse", new StructType(out.toArray(new StructField[0])),
            CollectionConverters.asScala(List.of(child)).toList(),
            CollectionConverters.asScala(List.<AbstractDataType>of()).toList(),
            true, true, true);
        return ExpressionUtils.column(call);
    }
}
