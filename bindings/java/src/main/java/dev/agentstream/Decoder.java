package dev.agentstream;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.agentstream.generated.DecodeStats;
import dev.agentstream.generated.Diagnostic;
import dev.agentstream.generated.OutputEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Turns one harness CLI's recorded or piped stdout (one run) into content events, without running
 * anything. Feed it bytes at any chunking, then {@link #finish()} at the end of the input. Bad
 * lines are never an error: they are counted in {@link #stats()}. Thread-safe (calls are
 * serialized); close it when done.
 *
 * <pre>{@code
 * try (Decoder decoder = new Decoder("codex")) {
 *     for (OutputEvent event : decoder.feed(Files.readAllBytes(path))) { … }
 *     decoder.finish().forEach(…);
 * }
 * }</pre>
 */
public final class Decoder implements AutoCloseable {
    /**
     * The one upcall stub every decoder shares, created once: the library calls it once per event,
     * on the thread that called feed or finish (never on a thread of its own), and it hands the
     * event to that thread's current {@link Sink}.
     */
    private static final MemorySegment ON_EVENT;

    private static final ThreadLocal<Sink> CURRENT = new ThreadLocal<>();
    private static final Wire.Converter OUTPUT_EVENT = Wire.converter(OutputEvent.class);

    static {
        try {
            var target = MethodHandles.lookup().findStatic(Decoder.class, "onEvent",
                    MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class, long.class));
            ON_EVENT = Native.LINKER.upcallStub(target, FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Where one feed/finish call's events go, and the first failure of its consumer. */
    private static final class Sink {
        final Consumer<? super OutputEvent> consumer;
        final JsonReader reader;
        /** The event's bytes, copied out of native memory (grown as needed). */
        byte[] buffer = new byte[4096];
        Throwable failure;

        Sink(Consumer<? super OutputEvent> consumer, JsonReader reader) {
            this.consumer = consumer;
            this.reader = reader;
        }
    }

    /**
     * The upcall. Nothing may escape it (an exception thrown out of an upcall ends the JVM): the
     * first failure is kept and rethrown when the native call returns; later events of that call
     * are skipped.
     */
    private static void onEvent(MemorySegment userData, MemorySegment json, long len) {
        Sink sink = CURRENT.get();
        if (sink == null || sink.failure != null) {
            return;
        }
        try {
            if (len > sink.buffer.length) {
                sink.buffer = new byte[(int) Math.max(len, 2L * sink.buffer.length)];
            }
            byte[] bytes = sink.buffer;
            MemorySegment.copy(json.reinterpret(len), JAVA_BYTE, 0, bytes, 0, (int) len);
            OutputEvent event = (OutputEvent) Wire.read(bytes, 0, (int) len, OUTPUT_EVENT, sink.reader);
            sink.consumer.accept(event);
        } catch (Throwable t) {
            sink.failure = t;
        }
    }

    private final MemorySegment handle;
    private final java.lang.ref.Cleaner.Cleanable cleanable;
    private final String agent;
    private final JsonReader reader = new JsonReader();
    private boolean closed;

    /**
     * A decoder for an agent's output.
     *
     * @param agent {@code claude}, {@code codex}, {@code gemini}, {@code qwen}, {@code kimi},
     *     {@code opencode} or {@code droid} (case-insensitive)
     * @throws InvalidArgumentException for another name (the message lists the seven)
     */
    public Decoder(String agent) {
        this(agent, 0);
    }

    /**
     * A decoder with a line limit.
     *
     * @param agent the agent (see {@link #Decoder(String)})
     * @param maxLineBytes a longer line is skipped, counted and reported, so memory stays bounded
     *     (0: the default, 16 MiB)
     */
    public Decoder(String agent, long maxLineBytes) {
        this(agent, maxLineBytes, true);
    }

    /**
     * A decoder with a line limit and a redaction switch.
     *
     * @param agent the agent (see {@link #Decoder(String)})
     * @param maxLineBytes a longer line is skipped, counted and reported (0: the default, 16 MiB)
     * @param redact false to deliver tool-call inputs as the harness printed them (true, the
     *     default: secret shapes in them are masked)
     */
    public Decoder(String agent, long maxLineBytes, boolean redact) {
        Objects.requireNonNull(agent, "agent");
        if (maxLineBytes < 0) {
            throw Errors.invalidArgument("maxLineBytes must not be negative, got " + maxLineBytes + " (0 for the default)");
        }
        this.agent = agent;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = Native.cstring(arena, agent);
            MemorySegment out = arena.allocate(ADDRESS);
            Native.check(() -> (int) Native.DECODER_NEW.invokeExact(name, maxLineBytes, out));
            handle = out.get(ADDRESS, 0);
        }
        cleanable = Native.CLEANER.register(this, new Native.Free(Native.DECODER_FREE, handle));
        if (!redact) {
            MemorySegment created = handle;
            try {
                Native.check(() -> (int) Native.DECODER_SET_REDACT.invokeExact(created, false));
            } catch (RuntimeException e) {
                cleanable.clean();
                throw e;
            }
        }
    }

    /**
     * Decodes a whole recorded output at once.
     *
     * @param agent the agent
     * @param output its stdout
     * @return the events, in order
     */
    public static List<OutputEvent> parse(String agent, byte[] output) {
        return parse(agent, output, true);
    }

    /**
     * Decodes a whole recorded output at once, with a redaction switch.
     *
     * @param agent the agent
     * @param output its stdout
     * @param redact false to deliver tool-call inputs as the harness printed them
     * @return the events, in order
     */
    public static List<OutputEvent> parse(String agent, byte[] output, boolean redact) {
        try (Decoder d = new Decoder(agent, 0, redact)) {
            List<OutputEvent> events = d.feed(output);
            events.addAll(d.finish());
            return events;
        }
    }

    /**
     * The agent it decodes, as given.
     *
     * @return the name
     */
    public String agent() {
        return agent;
    }

    /**
     * Decodes bytes and returns the events of every line they completed, in order (a line may
     * span calls).
     *
     * @param bytes the next bytes of the output
     * @return the events (possibly none)
     */
    public List<OutputEvent> feed(byte[] bytes) {
        return feed(bytes, 0, bytes.length);
    }

    /**
     * Decodes {@code bytes[offset, offset + length)} (see {@link #feed(byte[])}).
     *
     * @param bytes the buffer
     * @param offset where the next bytes start
     * @param length how many
     * @return the events (possibly none)
     */
    public List<OutputEvent> feed(byte[] bytes, int offset, int length) {
        List<OutputEvent> out = new ArrayList<>();
        feed(bytes, offset, length, out::add);
        return out;
    }

    /**
     * Decodes bytes and hands each event to {@code consumer} as it is decoded, on this thread.
     * When the consumer throws, the rest of this call's events are skipped and the exception is
     * rethrown once the call returns.
     *
     * @param bytes the buffer
     * @param offset where the next bytes start
     * @param length how many
     * @param consumer receives each event
     */
    public synchronized void feed(byte[] bytes, int offset, int length, Consumer<? super OutputEvent> consumer) {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        live();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = length == 0 ? MemorySegment.NULL : arena.allocate(length);
            if (length > 0) {
                MemorySegment.copy(bytes, offset, data, JAVA_BYTE, 0, length);
            }
            long n = length;
            withSink(consumer, () -> (int) Native.DECODER_FEED.invokeExact(handle, data, n, ON_EVENT, MemorySegment.NULL));
        }
    }

    /**
     * Ends the input: decodes a last line without a newline and flushes events held back until
     * the end. Later feeds decode nothing.
     *
     * @return the events (possibly none)
     */
    public List<OutputEvent> finish() {
        List<OutputEvent> out = new ArrayList<>();
        finish(out::add);
        return out;
    }

    /**
     * Ends the input, handing each event to {@code consumer} (see {@link #feed(byte[], int, int,
     * Consumer)}).
     *
     * @param consumer receives each event
     */
    public synchronized void finish(Consumer<? super OutputEvent> consumer) {
        live();
        withSink(consumer, () -> (int) Native.DECODER_FINISH.invokeExact(handle, ON_EVENT, MemorySegment.NULL));
    }

    private void withSink(Consumer<? super OutputEvent> consumer, Native.Call call) {
        Sink outer = CURRENT.get();
        Sink sink = new Sink(consumer, reader);
        CURRENT.set(sink);
        try {
            Native.check(call);
        } finally {
            if (outer == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(outer);
            }
        }
        if (sink.failure instanceof RuntimeException e) {
            throw e;
        }
        if (sink.failure instanceof Error e) {
            throw e;
        }
        if (sink.failure != null) {
            throw new IllegalStateException(sink.failure);
        }
    }

    /**
     * Decode statistics so far: lines, events, bytes, bad and oversize lines.
     *
     * @return the statistics
     */
    public synchronized DecodeStats stats() {
        live();
        return Json.convert(Json.parse(Native.ownedBytes((out, len) -> (int) Native.DECODER_STATS.invokeExact(handle, out, len))),
                DecodeStats.class);
    }

    /**
     * The problems found so far (oversize lines, invalid UTF-8), for people; taken, so a second
     * call returns only newer ones.
     *
     * @return the diagnostics
     */
    public synchronized List<Diagnostic> takeDiagnostics() {
        live();
        Object parsed = Json.parse(Native.ownedBytes((out, len) -> (int) Native.DECODER_DIAGNOSTICS.invokeExact(handle, out, len)));
        List<Diagnostic> out = new ArrayList<>();
        for (Object o : (List<?>) parsed) {
            out.add(Json.convert(o, Diagnostic.class));
        }
        return out;
    }

    /**
     * The harness's session id, once the output named it.
     *
     * @return the id
     */
    public synchronized Optional<String> sessionId() {
        live();
        return Optional.ofNullable(Native.ownedString((out, len) -> (int) Native.DECODER_SESSION_ID.invokeExact(handle, out, len)));
    }

    private void live() {
        if (closed) {
            throw Errors.closed("this Decoder");
        }
    }

    /** Frees the decoder. Closing again does nothing; any other call after it throws. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            cleanable.clean();
        }
    }
}
