package dev.agentstream;

import dev.agentstream.generated.WireName;
import dev.agentstream.generated.WireTag;
import java.lang.reflect.RecordComponent;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Map;

/**
 * The JSON this library reads and writes: events and results as the core emits them, and the
 * records of {@code dev.agentstream.generated} (their wire keys come from {@link WireName}).
 *
 * <p>Parsing never recurses, so input of any depth is safe; containers nested deeper than {@link
 * #MAX_DEPTH} levels are delivered as {@code {"$rawJson": "<their JSON text>"}} (the marker the
 * core uses for records nested too deep), never as a tree a recursive walk could overflow on. A
 * tool input nested a million levels deep therefore arrives as a small map holding its text.
 */
public final class Json {
    private Json() {}

    /**
     * How many containers deep a parsed value is built; a deeper container becomes a {@link
     * #RAW_JSON_KEY} marker holding its text.
     */
    public static final int MAX_DEPTH = 256;

    /** The key of the marker object that stands for a container nested too deep. */
    public static final String RAW_JSON_KEY = "$rawJson";

    /**
     * Parses JSON text into plain values: {@code Map<String, Object>} (key order kept), {@code
     * List<Object>}, {@code String}, {@code Long} ({@code BigInteger} beyond 64 bits), {@code
     * Double}, {@code Boolean} and {@code null}.
     *
     * @param text the JSON text
     * @return its value
     * @throws IllegalArgumentException when it is not JSON (the message says where)
     */
    public static Object parse(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        return new JsonReader().parse(b, 0, b.length);
    }

    /**
     * Parses UTF-8 JSON bytes (see {@link #parse(String)}).
     *
     * @param utf8 the bytes
     * @return their value
     */
    public static Object parse(byte[] utf8) {
        return new JsonReader().parse(utf8, 0, utf8.length);
    }

    /**
     * Reads JSON text as one of the generated types (or a plain value: {@code Map.class}, {@code
     * String.class}, …). Keys the type does not know are ignored.
     *
     * @param text the JSON text
     * @param type the type, e.g. {@code OutputEvent.class}
     * @param <T> the type
     * @return the value
     */
    public static <T> T read(String text, Class<T> type) {
        return type.cast(Wire.read(parse(text), type));
    }

    /**
     * Converts a parsed value (see {@link #parse(String)}) to one of the generated types, e.g. the
     * {@code details} of an {@code AgentEvent} to its hook type's details record.
     *
     * @param value the parsed value
     * @param type the type
     * @param <T> the type
     * @return the converted value
     */
    public static <T> T convert(Object value, Class<T> type) {
        return type.cast(Wire.read(value, type));
    }

    /**
     * Writes a value as compact JSON: the generated records with their wire keys (an absent
     * optional value is left out), enums as their wire strings, maps, collections, strings,
     * numbers (a non-finite double is {@code null}), booleans and {@code null}.
     *
     * @param value the value
     * @return its JSON text
     */
    public static String write(Object value) {
        StringBuilder sb = new StringBuilder(256);
        write(sb, value);
        return sb.toString();
    }

    /**
     * Appends a value's JSON (see {@link #write(Object)}).
     *
     * @param sb where to append
     * @param value the value
     */
    public static void write(StringBuilder sb, Object value) {
        if (value == null) {
            sb.append("null");
        } else if (value instanceof String s) {
            string(sb, s);
        } else if (value instanceof Boolean bool) {
            sb.append(bool.booleanValue());
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isFinite(d)) {
                sb.append(d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) + ".0" : Double.toString(d));
            } else {
                sb.append("null");
            }
        } else if (value instanceof BigDecimal big) {
            sb.append(big.toString());
        } else if (value instanceof Number n) {
            sb.append(n instanceof BigInteger ? n.toString() : Long.toString(n.longValue()));
        } else if (value instanceof Map<?, ?> map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                string(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (value instanceof Collection<?> list) {
            sb.append('[');
            boolean first = true;
            for (Object o : list) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                write(sb, o);
            }
            sb.append(']');
        } else if (value instanceof Enum<?> e) {
            string(sb, Wire.wireOf(e));
        } else if (value instanceof Record r) {
            record(sb, r);
        } else if (value instanceof Event event) {
            write(sb, event.toWire());
        } else {
            string(sb, value.toString());
        }
    }

    /** A record type's wire form: its tag (if a union kind), keys, accessors, required flags. */
    private record RecordShape(WireTag tag, String[] keys, java.lang.invoke.MethodHandle[] accessors, boolean[] required) {}

    private static final ClassValue<RecordShape> SHAPES = new ClassValue<>() {
        @Override
        protected RecordShape computeValue(Class<?> type) {
            RecordComponent[] rc = type.getRecordComponents();
            String[] keys = new String[rc.length];
            java.lang.invoke.MethodHandle[] accessors = new java.lang.invoke.MethodHandle[rc.length];
            boolean[] required = new boolean[rc.length];
            for (int i = 0; i < rc.length; i++) {
                WireName wire = rc[i].getAnnotation(WireName.class);
                keys[i] = wire != null ? wire.value() : rc[i].getName();
                required[i] = wire != null && wire.required();
                try {
                    java.lang.invoke.MethodHandle h = java.lang.invoke.MethodHandles.publicLookup().unreflect(rc[i].getAccessor());
                    accessors[i] = h.asType(java.lang.invoke.MethodType.methodType(Object.class, Object.class));
                } catch (IllegalAccessException e) {
                    throw new IllegalArgumentException("agentstream: cannot write " + type.getName() + " (not public): " + e, e);
                }
            }
            WireTag tag = type.getAnnotation(WireTag.class);
            return new RecordShape(tag != null && !tag.value().isEmpty() ? tag : null, keys, accessors, required);
        }
    };

    private static void record(StringBuilder sb, Record r) {
        RecordShape shape = SHAPES.get(r.getClass());
        sb.append('{');
        boolean first = true;
        // A kind of a tagged union carries its discriminator first, as the core writes it.
        if (shape.tag() != null) {
            string(sb, shape.tag().key());
            sb.append(':');
            string(sb, shape.tag().value());
            first = false;
        }
        for (int i = 0; i < shape.keys().length; i++) {
            Object v;
            try {
                v = shape.accessors()[i].invoke((Object) r);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            if (v == null && !shape.required()[i]) {
                continue;
            }
            if (!first) {
                sb.append(',');
            }
            first = false;
            string(sb, shape.keys()[i]);
            sb.append(':');
            write(sb, v);
        }
        sb.append('}');
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** A JSON string literal (lone surrogates written as escapes, so nothing is lost). */
    static void string(StringBuilder sb, String s) {
        sb.append('"');
        int run = 0;
        int n = s.length();
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            String esc = null;
            boolean hex = false;
            if (c == '"') {
                esc = "\\\"";
            } else if (c == '\\') {
                esc = "\\\\";
            } else if (c < 0x20) {
                esc = switch (c) {
                    case '\n' -> "\\n";
                    case '\r' -> "\\r";
                    case '\t' -> "\\t";
                    case '\b' -> "\\b";
                    case '\f' -> "\\f";
                    default -> null;
                };
                hex = esc == null;
            } else if (Character.isSurrogate(c)) {
                boolean paired = Character.isHighSurrogate(c)
                        ? i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))
                        : i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
                hex = !paired;
            }
            if (esc == null && !hex) {
                continue;
            }
            sb.append(s, run, i);
            if (hex) {
                sb.append("\\u").append(HEX[c >> 12]).append(HEX[(c >> 8) & 15]).append(HEX[(c >> 4) & 15]).append(HEX[c & 15]);
            } else {
                sb.append(esc);
            }
            run = i + 1;
        }
        sb.append(s, run, n).append('"');
    }
}
