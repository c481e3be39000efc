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
            parseBatch(reader.parse(json, 0, json.length), into);
        }
        return k;
    }

    /** A batch {@code [{"item": envelope} | {"hook": hook event}, …]} as events. */
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
        String runId = (String) env.get("runId");
        long sequence = ((Number) env.get("sequence")).longValue();
        Object coalescedRaw = env.get("coalesced");
        long coalesced = coalescedRaw == null ? 0 : ((Number) coalescedRaw).longValue();
        Object event = env.get("event");
        String channel = (String) env.get("channel");
        return switch (channel) {
            case "content" -> new Event.Content(runId, sequence, (OutputEvent) OUTPUT_EVENT.convert(event), coalesced);
            case "lifecycle" -> new Event.Lifecycle(runId, sequence, (LifecycleEvent) LIFECYCLE_EVENT.convert(event));
            case "stdout" -> new Event.Text(runId, sequence, Channel.STDOUT, (String) event, coalesced);
            case "stderr" -> new Event.Text(runId, sequence, Channel.STDERR, (String) event, coalesced);
            default -> throw new IllegalStateException("agentstream: unknown channel \"" + channel
                    + "\" in a delivery (the library is newer than this jar?)");
        };
    }

    @Override
    public void close() {
        arena.close();
    }
}
