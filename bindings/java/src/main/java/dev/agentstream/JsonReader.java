package dev.agentstream;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A JSON parser over UTF-8 bytes that never recurses: containers are kept on an explicit stack,
 * so no input, however deep, can overflow the thread's stack. Past {@link Json#MAX_DEPTH} open
 * containers, a container is not built: it is delivered as {@code {"$rawJson": "<its JSON
 * text>"}}, the marker the core itself uses for records nested too deep, so that code which walks
 * the result recursively (the JDK's own {@code toString}, {@code equals}, {@code hashCode}) stays
 * safe too.
 *
 * <p>Values: {@link LinkedHashMap} (key order kept), {@link ArrayList}, {@link String}, {@link
 * Long} (an integer that fits; {@link BigInteger} beyond), {@link Double} (a number with a
 * fraction or an exponent), {@link Boolean}, {@code null}. Not thread-safe; a reader may be
 * reused for many inputs (it keeps a small cache of object keys, which repeat).
 */
final class JsonReader {
    private byte[] b;
    private int pos;
    private int end;
    private final int maxDepth;
    /** Containers the cursor methods opened and have not closed (they count toward maxDepth). */
    private int openDepth;

    private final String[] keyCache = new String[512];
    private final byte[][] keyBytes = new byte[512][];

    JsonReader() {
        this(Json.MAX_DEPTH);
    }

    JsonReader(int maxDepth) {
        this.maxDepth = maxDepth;
    }

    /** The one JSON value of {@code bytes[off, end)} (whitespace around it allowed). */
    Object parse(byte[] bytes, int off, int endExclusive) {
        start(bytes, off, endExclusive);
        try {
            Object v = value();
            finish();
            return v;
        } finally {
            this.b = null;
        }
    }

    // ---- the cursor: typed readers (Wire) read the values they know straight from the bytes ----

    /** Starts reading {@code bytes[off, end)} with the cursor methods below. */
    void start(byte[] bytes, int off, int endExclusive) {
        this.b = bytes;
        this.pos = off;
        this.end = endExclusive;
        this.openDepth = 0;
    }

    /** Checks that only whitespace is left, and lets go of the input. */
    void finish() {
        ws();
        if (pos != end) {
            throw error("unexpected text after the value");
        }
        this.b = null;
    }

    /** Where the cursor is: its position and open containers (for {@link #rewind}). */
    long mark() {
        return ((long) openDepth << 32) | pos;
    }

    void rewind(long mark) {
        pos = (int) mark;
        openDepth = (int) (mark >>> 32);
    }

    /** The next value's first byte (after whitespace), not consumed. */
    byte peekValue() {
        ws();
        return peek();
    }

    /** Consumes a {@code null} if one comes next. */
    boolean nextIsNull() {
        if (peekValue() == 'n') {
            literal("null");
            return true;
        }
        return false;
    }

    /** Consumes the opening bracket of an object. */
    void beginObject() {
        expect((byte) '{');
        openDepth++;
    }

    /**
     * The next key of the object being read (its colon consumed), or null at its end (the closing
     * brace consumed). {@code first}: right after {@link #beginObject()}.
     */
    String nextKey(boolean first) {
        ws();
        byte c = peek();
        if (c == '}') {
            pos++;
            openDepth--;
            return null;
        }
        if (!first) {
            if (c != ',') {
                throw error("expected ',' or '}'");
            }
            pos++;
        }
        return key();
    }

    /** Consumes the opening bracket of an array. */
    void beginArray() {
        expect((byte) '[');
        openDepth++;
    }

    /** Whether another element follows in the array being read (its end consumed when not). */
    boolean nextElement(boolean first) {
        ws();
        byte c = peek();
        if (c == ']') {
            pos++;
            openDepth--;
            return false;
        }
        if (!first) {
            if (c != ',') {
                throw error("expected ',' or ']'");
            }
            pos++;
        }
        return true;
    }

    /** A string value, or null for {@code null}. */
    String readString() {
        byte c = peekValue();
        if (c == '"') {
            return string(false);
        }
        if (c == 'n') {
            literal("null");
            return null;
        }
        throw error("expected a string");
    }

    /** A number value ({@code Long}, {@code Double} or {@code BigInteger}), or null. */
    Object readNumber() {
        byte c = peekValue();
        if (c == 'n') {
            literal("null");
            return null;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
        }
        throw error("expected a number");
    }

    /**
     * Any value as a plain tree (see the class doc), containers iteratively; the containers the
     * cursor has open count toward the depth limit, so a value is bounded the same way however
     * it is read.
     */
    Object readAny() {
        return value();
    }

    /** Skips one value. */
    void skipValue() {
        byte c = peekValue();
        if (c == '{' || c == '[') {
            rawContainer(false);
        } else {
            scalar(c);
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("invalid JSON at byte " + pos + ": " + what);
    }

    private void ws() {
        while (pos < end) {
            byte c = b[pos];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                pos++;
            } else {
                return;
            }
        }
    }

    private byte peek() {
        if (pos >= end) {
            throw error("unexpected end of input");
        }
        return b[pos];
    }

    private void expect(byte c) {
        ws();
        if (peek() != c) {
            throw error("expected '" + (char) c + "'");
        }
        pos++;
    }

    /** One value, containers iteratively. */
    @SuppressWarnings("unchecked")
    private Object value() {
        Object[] stack = new Object[16];
        String[] keys = new String[16];
        int depth = 0;
        while (true) {
            ws();
            Object value;
            byte c = peek();
            if (c == '{' || c == '[') {
                if (depth + openDepth >= maxDepth) {
                    value = rawContainer(true);
                } else {
                    pos++;
                    ws();
                    if (c == '{') {
                        Map<String, Object> m = new LinkedHashMap<>();
                        if (peek() == '}') {
                            pos++;
                            value = m;
                        } else {
                            if (depth == stack.length) {
                                stack = Arrays.copyOf(stack, depth * 2);
                                keys = Arrays.copyOf(keys, depth * 2);
                            }
                            stack[depth] = m;
                            keys[depth] = key();
                            depth++;
                            continue;
                        }
                    } else {
                        List<Object> l = new ArrayList<>();
                        if (peek() == ']') {
                            pos++;
                            value = l;
                        } else {
                            if (depth == stack.length) {
                                stack = Arrays.copyOf(stack, depth * 2);
                                keys = Arrays.copyOf(keys, depth * 2);
                            }
                            stack[depth] = l;
                            keys[depth] = null;
                            depth++;
                            continue;
                        }
                    }
                }
            } else {
                value = scalar(c);
            }
            // Attach the value, then close every container that ends here.
            while (true) {
                if (depth == 0) {
                    return value;
                }
                Object top = stack[depth - 1];
                boolean isMap = keys[depth - 1] != null;
                if (isMap) {
                    ((Map<String, Object>) top).put(keys[depth - 1], value);
                } else {
                    ((List<Object>) top).add(value);
                }
                ws();
                byte d = peek();
                pos++;
                if (d == ',') {
                    if (isMap) {
                        keys[depth - 1] = key();
                    }
                    break;
                }
                if ((isMap && d == '}') || (!isMap && d == ']')) {
                    value = top;
                    stack[depth - 1] = null;
                    depth--;
                    continue;
                }
                pos--;
                throw error(isMap ? "expected ',' or '}'" : "expected ',' or ']'");
            }
        }
    }

    /** A key and its colon. */
    private String key() {
        ws();
        if (peek() != '"') {
            throw error("expected a string key");
        }
        String k = string(true);
        expect((byte) ':');
        return k;
    }

    private Object scalar(byte c) {
        switch (c) {
            case '"':
                return string(false);
            case 't':
                literal("true");
                return Boolean.TRUE;
            case 'f':
                literal("false");
                return Boolean.FALSE;
            case 'n':
                literal("null");
                return null;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + (char) c + "'");
        }
    }

    private void literal(String word) {
        int n = word.length();
        if (end - pos < n) {
            throw error("expected " + word);
        }
        for (int i = 0; i < n; i++) {
            if (b[pos + i] != word.charAt(i)) {
                throw error("expected " + word);
            }
        }
        pos += n;
    }

    private Object number() {
        int start = pos;
        boolean negative = b[pos] == '-';
        if (negative) {
            pos++;
        }
        int digitsStart = pos;
        long value = 0;
        while (pos < end && b[pos] >= '0' && b[pos] <= '9') {
            value = value * 10 + (b[pos] - '0');
            pos++;
        }
        int digits = pos - digitsStart;
        if (digits == 0) {
            throw error("expected a digit");
        }
        boolean integral = true;
        if (pos < end && b[pos] == '.') {
            integral = false;
            pos++;
            int f = pos;
            while (pos < end && b[pos] >= '0' && b[pos] <= '9') {
                pos++;
            }
            if (pos == f) {
                throw error("expected a digit after '.'");
            }
        }
        if (pos < end && (b[pos] == 'e' || b[pos] == 'E')) {
            integral = false;
            pos++;
            if (pos < end && (b[pos] == '+' || b[pos] == '-')) {
                pos++;
            }
            int e = pos;
            while (pos < end && b[pos] >= '0' && b[pos] <= '9') {
                pos++;
            }
            if (pos == e) {
                throw error("expected a digit in the exponent");
            }
        }
        if (integral && digits <= 18) {
            return negative ? -value : value;
        }
        String text = new String(b, start, pos - start, StandardCharsets.ISO_8859_1);
        if (integral) {
            BigInteger big = new BigInteger(text);
            return big.bitLength() < 64 ? (Object) big.longValue() : big;
        }
        return Double.parseDouble(text);
    }

    /** A string, {@code pos} on its opening quote. Keys go through a small cache. */
    private String string(boolean isKey) {
        int start = ++pos;
        boolean ascii = true;
        int hash = 0;
        while (true) {
            if (pos >= end) {
                throw error("unterminated string");
            }
            byte c = b[pos];
            if (c == '"') {
                break;
            }
            if (c == '\\') {
                return escapedString(start);
            }
            if (c < 0) {
                ascii = false;
            } else if (c < 0x20) {
                throw error("a control character in a string");
            }
            hash = 31 * hash + c;
            pos++;
        }
        int len = pos - start;
        pos++;
        if (isKey && len <= 32) {
            int slot = hash & (keyCache.length - 1);
            byte[] cached = keyBytes[slot];
            if (cached != null && Arrays.equals(cached, 0, cached.length, b, start, start + len)) {
                return keyCache[slot];
            }
            String k = new String(b, start, len, ascii ? StandardCharsets.ISO_8859_1 : StandardCharsets.UTF_8);
            keyBytes[slot] = Arrays.copyOfRange(b, start, start + len);
            keyCache[slot] = k;
            return k;
        }
        return new String(b, start, len, ascii ? StandardCharsets.ISO_8859_1 : StandardCharsets.UTF_8);
    }

    /** The rest of a string with escapes (contents start at {@code start}). */
    private String escapedString(int start) {
        StringBuilder sb = new StringBuilder(pos - start + 16);
        int runStart = start;
        while (true) {
            if (pos >= end) {
                throw error("unterminated string");
            }
            byte c = b[pos];
            if (c == '"') {
                sb.append(new String(b, runStart, pos - runStart, StandardCharsets.UTF_8));
                pos++;
                return sb.toString();
            }
            if (c >= 0 && c < 0x20) {
                throw error("a control character in a string");
            }
            if (c != '\\') {
                pos++;
                continue;
            }
            sb.append(new String(b, runStart, pos - runStart, StandardCharsets.UTF_8));
            pos++;
            if (pos >= end) {
                throw error("unterminated escape");
            }
            byte e = b[pos++];
            switch (e) {
                case '"' -> sb.append('"');
                case '\\' -> sb.append('\\');
                case '/' -> sb.append('/');
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                // A lone surrogate is kept as the char it names (a Java string can hold it).
                case 'u' -> sb.append(hex4());
                default -> {
                    pos--;
                    throw error("invalid escape '\\" + (char) e + "'");
                }
            }
            runStart = pos;
        }
    }

    private char hex4() {
        if (end - pos < 4) {
            throw error("a short \\u escape");
        }
        int v = 0;
        for (int i = 0; i < 4; i++) {
            int d = Character.digit(b[pos + i], 16);
            if (d < 0) {
                throw error("invalid \\u escape");
            }
            v = v * 16 + d;
        }
        pos += 4;
        return (char) v;
    }

    /**
     * A container past the depth limit, {@code pos} on its opening bracket: skipped with a counter
     * (brackets must pair up, strings are skipped whole) and delivered as the raw-JSON marker
     * ({@code keep}), or only skipped.
     */
    private Map<String, Object> rawContainer(boolean keep) {
        int start = pos;
        // The kind of each open bracket, one bit per level (set: an object).
        long[] kinds = new long[64];
        int depth = 0;
        while (true) {
            if (pos >= end) {
                throw error("unterminated container");
            }
            byte c = b[pos];
            if (c == '"') {
                skipString();
                continue;
            }
            if (c == '{' || c == '[') {
                if ((depth >> 6) >= kinds.length) {
                    kinds = Arrays.copyOf(kinds, kinds.length * 2);
                }
                if (c == '{') {
                    kinds[depth >> 6] |= 1L << (depth & 63);
                } else {
                    kinds[depth >> 6] &= ~(1L << (depth & 63));
                }
                depth++;
            } else if (c == '}' || c == ']') {
                depth--;
                boolean object = (kinds[depth >> 6] & (1L << (depth & 63))) != 0;
                if (object != (c == '}')) {
                    throw error("mismatched bracket");
                }
                if (depth == 0) {
                    pos++;
                    if (!keep) {
                        return null;
                    }
                    Map<String, Object> marker = new LinkedHashMap<>(2);
                    marker.put(Json.RAW_JSON_KEY, new String(b, start, pos - start, StandardCharsets.UTF_8));
                    return marker;
                }
            }
            pos++;
        }
    }

    private void skipString() {
        pos++;
        while (pos < end) {
            byte c = b[pos];
            if (c == '\\') {
                pos += 2;
                continue;
            }
            pos++;
            if (c == '"') {
                return;
            }
        }
        throw error("unterminated string");
    }
}
