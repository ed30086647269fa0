package tidemark.spark;

import java.math.BigDecimal;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructField;

/**
 * JSON text exactly as the Python gate (jobs/spark/gate.py) writes it, so dead letters and late
 * records are byte for byte the same whichever gate ran: Python's json.dumps with ensure_ascii
 * on or off, floats in Python's repr, decimals and bytes through str() (json's default=str),
 * timestamps as epoch milliseconds, dates in ISO form, maps as lists of [key, value] pairs (what
 * pyarrow's to_pylist gives).
 */
final class PyJson {
    private PyJson() {}

    static void string(StringBuilder out, String s, boolean ensureAscii) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20 || (ensureAscii && c > 0x7e)) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    /** Python's repr of a float (json.dumps writes NaN / Infinity for the specials). */
    static String pyFloat(double d) {
        if (Double.isNaN(d)) return "NaN";
        if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
        if (d == 0.0) return (1.0 / d < 0) ? "-0.0" : "0.0";
        String j = Double.toString(Math.abs(d));
        String mant = j;
        int exp = 0;
        int e = j.indexOf('E');
        if (e >= 0) {
            mant = j.substring(0, e);
            exp = Integer.parseInt(j.substring(e + 1));
        }
        int dot = mant.indexOf('.');
        String intPart = dot >= 0 ? mant.substring(0, dot) : mant;
        String frac = dot >= 0 ? mant.substring(dot + 1) : "";
        String digits = intPart + frac;
        int decpt = intPart.length() + exp; // value = 0.digits * 10^decpt
        int lead = 0;
        while (lead < digits.length() - 1 && digits.charAt(lead) == '0') {
            lead++;
            decpt--;
        }
        digits = digits.substring(lead);
        int end = digits.length();
        while (end > 1 && digits.charAt(end - 1) == '0') end--;
        digits = digits.substring(0, end);
        StringBuilder sb = new StringBuilder();
        if (d < 0) sb.append('-');
        if (decpt <= -4 || decpt > 16) {
            sb.append(digits.charAt(0));
            if (digits.length() > 1) sb.append('.').append(digits, 1, digits.length());
            int x = decpt - 1;
            sb.append('e').append(x < 0 ? '-' : '+');
            int ax = Math.abs(x);
            if (ax < 10) sb.append('0');
            sb.append(ax);
        } else if (decpt <= 0) {
            sb.append("0.");
            for (int i = 0; i < -decpt; i++) sb.append('0');
            sb.append(digits);
        } else if (decpt >= digits.length()) {
            sb.append(digits);
            for (int i = digits.length(); i < decpt; i++) sb.append('0');
            sb.append(".0");
        } else {
            sb.append(digits, 0, decpt).append('.').append(digits, decpt, digits.length());
        }
        return sb.toString();
    }

    /** Python's str() of bytes: b'...' with escapes. */
    static String pyBytes(byte[] b) {
        boolean hasSingle = false, hasDouble = false;
        for (byte x : b) {
            if (x == '\'') hasSingle = true;
            if (x == '"') hasDouble = true;
        }
        char q = (hasSingle && !hasDouble) ? '"' : '\'';
        StringBuilder sb = new StringBuilder("b").append(q);
        for (byte x : b) {
            int c = x & 0xff;
            if (c == q || c == '\\') sb.append('\\').append((char) c);
            else if (c == '\t') sb.append("\\t");
            else if (c == '\n') sb.append("\\n");
            else if (c == '\r') sb.append("\\r");
            else if (c < 0x20 || c >= 0x7f) sb.append(String.format("\\x%02x", c));
            else sb.append((char) c);
        }
        return sb.append(q).toString();
    }

    static long micros(Instant i) {
        return Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000L), i.getNano() / 1000);
    }

    /** A value of a Spark row as the Python gate renders it (compact separators, no ASCII escaping). */
    static void value(StringBuilder out, Object v) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof String) {
            string(out, (String) v, false);
        } else if (v instanceof Boolean) {
            out.append(((Boolean) v) ? "true" : "false");
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            // non-finite: the strings "NaN", "Infinity", "-Infinity" (the output rule)
            if (Double.isNaN(d) || Double.isInfinite(d)) string(out, pyFloat(d), false);
            else out.append(pyFloat(d));
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            out.append(v.toString());
        } else if (v instanceof BigDecimal) {
            string(out, v.toString(), false);
        } else if (v instanceof Timestamp) {
            out.append(Math.floorDiv(micros(((Timestamp) v).toInstant()), 1000L));
        } else if (v instanceof Instant) {
            out.append(Math.floorDiv(micros((Instant) v), 1000L));
        } else if (v instanceof LocalDateTime) {
            out.append(Math.floorDiv(micros(((LocalDateTime) v).toInstant(ZoneOffset.UTC)), 1000L));
        } else if (v instanceof Date) {
            string(out, ((Date) v).toLocalDate().toString(), false);
        } else if (v instanceof LocalDate) {
            string(out, v.toString(), false);
        } else if (v instanceof byte[]) {
            string(out, pyBytes((byte[]) v), false);
        } else if (v instanceof Row) {
            row(out, (Row) v);
        } else if (v instanceof scala.collection.Map) {
            scala.collection.Iterator<?> it = ((scala.collection.Map<?, ?>) v).iterator();
            out.append('[');
            boolean first = true;
            while (it.hasNext()) {
                scala.Tuple2<?, ?> kv = (scala.Tuple2<?, ?>) it.next();
                if (!first) out.append(',');
                first = false;
                pair(out, kv._1(), kv._2());
            }
            out.append(']');
        } else if (v instanceof scala.collection.Iterable) {
            scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) v).iterator();
            out.append('[');
            boolean first = true;
            while (it.hasNext()) {
                if (!first) out.append(',');
                first = false;
                value(out, it.next());
            }
            out.append(']');
        } else if (v instanceof Map) {
            out.append('[');
            boolean first = true;
            for (Map.Entry<?, ?> kv : ((Map<?, ?>) v).entrySet()) {
                if (!first) out.append(',');
                first = false;
                pair(out, kv.getKey(), kv.getValue());
            }
            out.append(']');
        } else if (v instanceof List) {
            out.append('[');
            boolean first = true;
            for (Object x : (List<?>) v) {
                if (!first) out.append(',');
                first = false;
                value(out, x);
            }
            out.append(']');
        } else {
            string(out, v.toString(), false);
        }
    }

    /** One map entry as pyarrow's to_pylist gives it: a [key, value] pair. */
    private static void pair(StringBuilder out, Object k, Object v) {
        out.append('[');
        value(out, k);
        out.append(',');
        value(out, v);
        out.append(']');
    }

    static void row(StringBuilder out, Row r) {
        out.append('{');
        StructField[] fields = r.schema().fields();
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) out.append(',');
            string(out, fields[i].name(), false);
            out.append(':');
            value(out, r.get(i));
        }
        out.append('}');
    }
}
