package dev.agentstream;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.Channel;
import dev.agentstream.generated.LifecycleEvent;
import dev.agentstream.generated.OutputEvent;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;

/**
 * Pulls one run's deliveries in batches ({@code agentstream_run_next_batch_json}: one library call
 * and one JSON array per batch of what is ready, no fixed wait to fill it) and turns them into
 * {@link Event}s. Used by one thread at a time: a run's delivery thread, or the reader of a
 * {@link RunStream}.
 */
final class RunPuller implements AutoCloseable {
    private static final Wire.Converter OUTPUT_EVENT = Wire.converter(OutputEvent.class);
    private static final Wire.Converter LIFECYCLE_EVENT = Wire.converter(LifecycleEvent.class);
    private static final Wire.Converter AGENT_EVENT = Wire.converter(AgentEvent.class);

    private final MemorySegment run;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment kind = arena.allocate(JAVA_INT);
    private final Native.Owned out = new Native.Owned(arena);
    private final JsonReader reader = new JsonReader();

    RunPuller(MemorySegment run) {
        this.run = run;
    }

    /**
     * Waits up to {@code timeoutMs} for deliveries and appends them to {@code into}.
     *
     * @return {@link Native#NEXT_BATCH}, {@link Native#NEXT_TIMEOUT} or {@link Native#NEXT_END}
     */
    int next(long timeoutMs, List<Event> into) {
        Native.check(() -> (int) Native.RUN_NEXT_BATCH.invokeExact(run, 0L, 0L, timeoutMs, kind, out.ptr, out.len));
        int k = kind.get(JAVA_INT, 0);
        byte[] json = out.take();
        if (k == Native.NEXT_BATCH && json != null) {
            readBatch(reader, json, into);
        }
        return k;
    }

    /**
     * A batch read straight from its bytes into events (no intermediate tree for what the
     * records know).
     */
    static void readBatch(JsonReader r, byte[] json, List<Event> into) {
        r.start(json, 0, json.length);
        r.beginArray();
        for (boolean first = true; r.nextElement(first); first = false) {
            r.beginObject();
            String tag = r.nextKey(true);
            if ("item".equals(tag)) {
                into.add(readEnvelope(r));
            } else if ("hook".equals(tag)) {
                into.add(new Event.Hook((AgentEvent) AGENT_EVENT.read(r)));
            } else {
                throw new IllegalStateException("agentstream: a delivery tagged \"" + tag + "\" (the library is newer than this jar?)");
            }
            if (r.nextKey(false) != null) {
                throw new IllegalStateException("agentstream: a delivery with more than one key");
            }
        }
        r.finish();
    }

    private static Event readEnvelope(JsonReader r) {
        String runId = null;
        String channel = null;
        long sequence = 0;
        long coalesced = 0;
        Object event = null;
        boolean typed = false;
        r.beginObject();
        for (String k = r.nextKey(true); k != null; k = r.nextKey(false)) {
            switch (k) {
                case "runId" -> runId = r.readString();
                case "sequence" -> sequence = ((Number) r.readNumber()).longValue();
                case "channel" -> channel = r.readString();
                case "coalesced" -> {
                    Object n = r.readNumber();
                    coalesced = n == null ? 0 : ((Number) n).longValue();
                }
                case "event" -> {
                    // The core writes the channel first; otherwise the event is read as a tree.
                    Wire.Converter c = channel == null ? null : switch (channel) {
                        case "content" -> OUTPUT_EVENT;
                        case "lifecycle" -> LIFECYCLE_EVENT;
                        default -> null;
                    };
                    typed = c != null;
                    event = typed ? c.read(r) : r.readAny();
                }
                default -> r.skipValue();
            }
        }
        return event(runId, sequence, channel, event, typed, coalesced);
    }

    /** A parsed batch {@code [{"item": envelope} | {"hook": hook event}, …]} as events. */
    static void parseBatch(Object batch, List<Event> into) {
        for (Object o : (List<?>) batch) {
            Map<?, ?> tagged = (Map<?, ?>) o;
            Object item = tagged.get("item");
            if (item != null) {
                into.add(envelope((Map<?, ?>) item));
            } else {
                into.add(new Event.Hook((AgentEvent) AGENT_EVENT.convert(tagged.get("hook"))));
            }
        }
    }

    /** An envelope {@code {"runId", "sequence", "channel", "event", "coalesced"?}} as an event. */
    static Event envelope(Map<?, ?> env) {
        Object coalescedRaw = env.get("coalesced");
        return event((String) env.get("runId"), ((Number) env.get("sequence")).longValue(), (String) env.get("channel"),
                env.get("event"), false, coalescedRaw == null ? 0 : ((Number) coalescedRaw).longValue());
    }

    /** The event of an envelope's parts; {@code typed}: the event is already its record. */
    private static Event event(String runId, long sequence, String channel, Object event, boolean typed, long coalesced) {
        if (channel == null) {
            throw new IllegalStateException("agentstream: a delivery without a channel");
        }
        return switch (channel) {
            case "content" -> new Event.Content(runId, sequence,
                    (OutputEvent) (typed ? event : OUTPUT_EVENT.convert(event)), coalesced);
            case "lifecycle" -> new Event.Lifecycle(runId, sequence,
                    (LifecycleEvent) (typed ? event : LIFECYCLE_EVENT.convert(event)));
            case "stdout" -> new Event.Text(runId, sequence, Channel.STDOUT, (String) event, coalesced);
            case "stderr" -> new Event.Text(runId, sequence, Channel.STDERR, (String) event, coalesced);
            default -> throw new IllegalStateException("agentstream: unknown channel \"" + channel
                    + "\" in a delivery (the library is newer than this jar?)");
        };
    }

    private volatile boolean closed;

    /** Whether {@link #close()} was called. @return true once closed */
    boolean isClosed() {
        return closed;
    }

    /** Frees the pull buffers; closing again does nothing. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            arena.close();
        }
    }
}
