package dev.agentstream;

import dev.agentstream.generated.WireName;
import dev.agentstream.generated.WireTag;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Parsed JSON (see {@link JsonReader}) to the generated records, driven by the annotations the
 * generator puts on them: {@link WireName} (each component's key), {@link WireTag} (a union's
 * discriminating key and each kind's value), and each enum's {@code wire()} strings. One
 * converter per type, built once by reflection and cached; no table of its own to keep in step.
 *
 * <p>Reading is lenient where the schema allows growth: keys a record does not know are ignored,
 * an absent optional component is {@code null}. The recursion follows the types, whose depth
 * is fixed by the schema; free JSON ({@code Object}, {@code Map<String, Object>}) is passed on
 * as parsed.
 */
final class Wire {
    private Wire() {}

    /**
     * Converts to one Java type: a parsed value ({@link #convert}), or the next value of a {@link
     * JsonReader} read straight from its bytes ({@link #read}: no tree is built for what the type
     * knows; free JSON is parsed as a tree).
     */
    @FunctionalInterface
    interface Converter {
        Object convert(Object raw);

        default Object read(JsonReader r) {
            return convert(r.readAny());
        }
    }

    /** A converter of scalars: the tree value is what the reader gives for them too. */
    private interface ScalarConverter extends Converter {
        @Override
        default Object read(JsonReader r) {
            byte c = r.peekValue();
            if (c == '{' || c == '[') {
                return convert(r.readAny());
            }
            return convert(c == '"' ? r.readString() : c == 'n' ? nullOf(r) : c == 't' || c == 'f' ? r.readAny() : r.readNumber());
        }

        private static Object nullOf(JsonReader r) {
            r.nextIsNull();
            return null;
        }
    }

    /** Reads a whole value of {@code type} from JSON bytes. */
    static Object read(byte[] json, int off, int end, Converter type, JsonReader r) {
        r.start(json, off, end);
        Object v = type.read(r);
        r.finish();
        return v;
    }

    private static final Map<Type, Converter> CONVERTERS = new ConcurrentHashMap<>();

    static Object read(Object raw, Type type) {
        return converter(type).convert(raw);
    }

    static Converter converter(Type type) {
        Converter c = CONVERTERS.get(type);
        if (c == null) {
            c = build(type);
            CONVERTERS.putIfAbsent(type, c);
        }
        return c;
    }

    private static Converter build(Type type) {
        if (type instanceof ParameterizedType p) {
            Class<?> raw = (Class<?>) p.getRawType();
            Type[] args = p.getActualTypeArguments();
            if (List.class.isAssignableFrom(raw)) {
                if (args[0] == Object.class) {
                    return Wire::identity;
                }
                Converter element = lazy(args[0]);
                return new Converter() {
                    @Override
                    public Object convert(Object v) {
                        if (v == null) {
                            return null;
                        }
                        List<?> in = (List<?>) v;
                        List<Object> out = new ArrayList<>(in.size());
                        for (Object o : in) {
                            out.add(element.convert(o));
                        }
                        return out;
                    }

                    @Override
                    public Object read(JsonReader r) {
                        if (r.nextIsNull()) {
                            return null;
                        }
                        List<Object> out = new ArrayList<>();
                        r.beginArray();
                        for (boolean first = true; r.nextElement(first); first = false) {
                            out.add(element.read(r));
                        }
                        return out;
                    }
                };
            }
            if (Map.class.isAssignableFrom(raw)) {
                if (args[1] == Object.class) {
                    return Wire::identity;
                }
                Converter value = lazy(args[1]);
                return new Converter() {
                    @Override
                    public Object convert(Object v) {
                        if (v == null) {
                            return null;
                        }
                        Map<?, ?> in = (Map<?, ?>) v;
                        Map<String, Object> out = new LinkedHashMap<>();
                        for (Map.Entry<?, ?> e : in.entrySet()) {
                            out.put((String) e.getKey(), value.convert(e.getValue()));
                        }
                        return out;
                    }

                    @Override
                    public Object read(JsonReader r) {
                        if (r.nextIsNull()) {
                            return null;
                        }
                        Map<String, Object> out = new LinkedHashMap<>();
                        r.beginObject();
                        for (String k = r.nextKey(true); k != null; k = r.nextKey(false)) {
                            out.put(k, value.read(r));
                        }
                        return out;
                    }
                };
            }
            return build(raw);
        }
        Class<?> cls = (Class<?>) type;
        if (cls == Object.class || cls == Map.class || cls == List.class) {
            return Wire::identity;
        }
        if (cls == String.class) {
            return (ScalarConverter) v -> v;
        }
        if (cls == long.class || cls == Long.class) {
            boolean primitive = cls.isPrimitive();
            return (ScalarConverter) v -> v == null ? (primitive ? (Object) 0L : null) : (Object) ((Number) v).longValue();
        }
        if (cls == int.class || cls == Integer.class) {
            boolean primitive = cls.isPrimitive();
            return (ScalarConverter) v -> v == null ? (primitive ? (Object) 0 : null) : (Object) ((Number) v).intValue();
        }
        if (cls == double.class || cls == Double.class) {
            boolean primitive = cls.isPrimitive();
            return (ScalarConverter) v -> v == null ? (primitive ? (Object) 0.0 : null) : (Object) ((Number) v).doubleValue();
        }
        if (cls == boolean.class || cls == Boolean.class) {
            boolean primitive = cls.isPrimitive();
            return (ScalarConverter) v -> v == null ? (primitive ? (Object) false : null) : v;
        }
        if (cls == BigInteger.class) {
            return v -> v == null ? null : v instanceof BigInteger big ? big : BigInteger.valueOf(((Number) v).longValue());
        }
        if (cls.isEnum()) {
            return enumConverter(cls);
        }
        if (cls.isRecord()) {
            return new RecordConverter(cls);
        }
        if (cls.isSealed() && cls.isInterface()) {
            return unionConverter(cls);
        }
        throw new IllegalArgumentException("agentstream: no JSON mapping for " + cls.getName());
    }

    private static Object identity(Object v) {
        return v;
    }

    /** A converter resolved on first use (types may refer to each other). */
    private static Converter lazy(Type type) {
        return new Lazy(type);
    }

    private static final class Lazy implements Converter {
        private final Type type;
        private Converter target;

        Lazy(Type type) {
            this.type = type;
        }

        Converter target() {
            Converter t = target;
            if (t == null) {
                t = converter(type);
                target = t;
            }
            return t;
        }

        @Override
        public Object convert(Object raw) {
            return target().convert(raw);
        }

        @Override
        public Object read(JsonReader r) {
            return target().read(r);
        }
    }

    // ---- enums ----

    private static final Map<Class<?>, Map<String, Enum<?>>> ENUMS = new ConcurrentHashMap<>();

    private static Map<String, Enum<?>> enumValues(Class<?> cls) {
        return ENUMS.computeIfAbsent(cls, c -> {
            Map<String, Enum<?>> byWire = new HashMap<>();
            for (Object constant : c.getEnumConstants()) {
                Enum<?> e = (Enum<?>) constant;
                byWire.put(wireOf(e), e);
            }
            return byWire;
        });
    }

    private static Converter enumConverter(Class<?> cls) {
        Map<String, Enum<?>> byWire = enumValues(cls);
        return (ScalarConverter) v -> {
            if (v == null) {
                return null;
            }
            Enum<?> e = byWire.get((String) v);
            if (e == null) {
                throw new IllegalStateException("agentstream: \"" + v + "\" is not a " + cls.getSimpleName()
                        + " this version knows (the library is newer than this jar?)");
            }
            return e;
        };
    }

    private static final Map<Enum<?>, String> WIRE_STRINGS = new ConcurrentHashMap<>();

    /** An enum constant's wire string: its {@code wire()} when it has one, else its name. */
    static String wireOf(Enum<?> e) {
        return WIRE_STRINGS.computeIfAbsent(e, Wire::lookUpWire);
    }

    private static String lookUpWire(Enum<?> e) {
        try {
            Method m = e.getDeclaringClass().getMethod("wire");
            return (String) m.invoke(e);
        } catch (NoSuchMethodException nsm) {
            return e.name();
        } catch (ReflectiveOperationException ex) {
            throw new IllegalStateException(ex);
        }
    }

    // ---- tagged unions ----

    private static Converter unionConverter(Class<?> union) {
        WireTag tag = union.getAnnotation(WireTag.class);
        if (tag == null) {
            throw new IllegalArgumentException("agentstream: " + union.getName() + " has no @WireTag");
        }
        Map<String, Converter> kinds = new HashMap<>();
        for (Class<?> kind : union.getPermittedSubclasses()) {
            WireTag k = kind.getAnnotation(WireTag.class);
            if (k != null) {
                kinds.put(k.value(), lazy(kind));
            }
        }
        String key = tag.key();
        return new Converter() {
            private Converter kind(Object value) {
                Converter kind = kinds.get(String.valueOf(value));
                if (kind == null) {
                    throw new IllegalStateException("agentstream: " + key + " \"" + value + "\" is not a "
                            + union.getSimpleName() + " this version knows (the library is newer than this jar?)");
                }
                return kind;
            }

            @Override
            public Object convert(Object v) {
                return v == null ? null : kind(((Map<?, ?>) v).get(key)).convert(v);
            }

            /** The core writes the tag first: then the kind's record is read straight on. */
            @Override
            public Object read(JsonReader r) {
                if (r.nextIsNull()) {
                    return null;
                }
                long start = r.mark();
                r.beginObject();
                if (key.equals(r.nextKey(true))) {
                    Converter kind = kind(r.readString());
                    while (kind instanceof Lazy l) {
                        kind = l.target();
                    }
                    if (kind instanceof RecordConverter rc) {
                        return rc.readMembers(r, false);
                    }
                }
                r.rewind(start);
                return convert(r.readAny());
            }
        };
    }

    // ---- records ----

    private static final class RecordConverter implements Converter {
        private final String[] keys;
        private final Converter[] components;
        private final MethodHandle constructor;
        /** Each component's value when its key is absent (0, false or null). */
        private Object[] defaults;

        RecordConverter(Class<?> cls) {
            RecordComponent[] rc = cls.getRecordComponents();
            keys = new String[rc.length];
            components = new Converter[rc.length];
            Class<?>[] types = new Class<?>[rc.length];
            for (int i = 0; i < rc.length; i++) {
                WireName wire = rc[i].getAnnotation(WireName.class);
                keys[i] = wire != null ? wire.value() : rc[i].getName();
                components[i] = lazy(rc[i].getGenericType());
                types[i] = rc[i].getType();
            }
            try {
                MethodHandle ctor = MethodHandles.publicLookup().findConstructor(cls, MethodType.methodType(void.class, types));
                constructor = ctor.asType(ctor.type().generic()).asSpreader(Object[].class, rc.length);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("agentstream: cannot construct " + cls.getName() + ": " + e, e);
            }
        }

        /**
         * Replaces the lazy component converters by their targets on first use (they are lazy so
         * that types may refer to each other while being built).
         */
        private Object[] defaults() {
            Object[] d = defaults;
            if (d == null) {
                d = new Object[keys.length];
                for (int i = 0; i < keys.length; i++) {
                    if (components[i] instanceof Lazy l) {
                        components[i] = l.target();
                    }
                    d[i] = components[i].convert(null);
                }
                defaults = d;
            }
            return d;
        }

        @Override
        public Object convert(Object raw) {
            if (raw == null) {
                return null;
            }
            defaults();
            Map<?, ?> map = raw instanceof Map<?, ?> m ? m : Collections.emptyMap();
            Object[] args = new Object[keys.length];
            for (int i = 0; i < keys.length; i++) {
                args[i] = components[i].convert(map.get(keys[i]));
            }
            return construct(args);
        }

        @Override
        public Object read(JsonReader r) {
            if (r.nextIsNull()) {
                return null;
            }
            r.beginObject();
            return readMembers(r, true);
        }

        /** The members of an object whose opening brace (and maybe some members) was read. */
        Object readMembers(JsonReader r, boolean first) {
            Object[] args = defaults().clone();
            for (String k = r.nextKey(first); k != null; k = r.nextKey(false)) {
                int i = index(k);
                if (i < 0) {
                    r.skipValue();
                } else {
                    args[i] = components[i].read(r);
                }
            }
            return construct(args);
        }

        private int index(String key) {
            for (int i = 0; i < keys.length; i++) {
                if (keys[i].equals(key)) {
                    return i;
                }
            }
            return -1;
        }

        private Object construct(Object[] args) {
            try {
                return constructor.invoke(args);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }
}
