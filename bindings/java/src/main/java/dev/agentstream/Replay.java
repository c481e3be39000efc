package dev.agentstream;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.DecodeStats;
import dev.agentstream.generated.RunOutcome;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A recorded harness output run through the whole pipeline without a process — decoder, run
 * stream, terminal, hooks — deterministically (the golden {@code .hooks.jsonl} files are made this
 * way, with the run id {@code golden}).
 *
 * @param items the sequenced stream: {@code run_start}, each stdout line followed by its content
 *     events, the terminal lifecycle event last
 * @param hooks the hook events derived from it, in order
 * @param outcome how the replayed run ended
 * @param stats decode statistics of the output
 */
public record Replay(List<Event> items, List<AgentEvent> hooks, RunOutcome outcome, DecodeStats stats) {
    /**
     * A replay; the lists are copied.
     *
     * @param items the items
     * @param hooks the hooks
     * @param outcome the outcome
     * @param stats the statistics
     */
    public Replay {
        items = List.copyOf(items);
        hooks = List.copyOf(hooks);
    }

    /**
     * Replays an output with the default run id ({@code replay}), agent id (the agent's name) and
     * timestamps ({@code 1970-01-01T00:00:00.000Z}).
     *
     * @param agent the harness that printed it
     * @param output its stdout
     * @return the replay
     */
    public static Replay of(String agent, byte[] output) {
        return of(agent, output, null, null, null);
    }

    /**
     * Replays an output.
     *
     * @param agent the harness that printed it
     * @param output its stdout
     * @param runId stamped on every item and hook (null: {@code replay})
     * @param agentId the hooks' agent id (null: the agent's name)
     * @param timestamp of lifecycle and hook events (null: {@code 1970-01-01T00:00:00.000Z})
     * @return the replay
     * @throws InvalidArgumentException for an unknown agent (the message lists the seven)
     */
    public static Replay of(String agent, byte[] output, String runId, String agentId, String timestamp) {
        return of(agent, output, runId, agentId, timestamp, true);
    }

    /**
     * Replays an output, with a redaction switch.
     *
     * @param agent the harness that printed it
     * @param output its stdout
     * @param runId stamped on every item and hook (null: {@code replay})
     * @param agentId the hooks' agent id (null: the agent's name)
     * @param timestamp of lifecycle and hook events (null: {@code 1970-01-01T00:00:00.000Z})
     * @param redact false to deliver tool-call inputs as the harness printed them (true: secret
     *     shapes in them are masked)
     * @return the replay
     * @throws InvalidArgumentException for an unknown agent (the message lists the seven)
     */
    public static Replay of(String agent, byte[] output, String runId, String agentId, String timestamp, boolean redact) {
        Objects.requireNonNull(agent, "agent");
        Objects.requireNonNull(output, "output");
        Map<String, Object> options = new LinkedHashMap<>();
        if (runId != null) {
            options.put("run_id", runId);
        }
        if (agentId != null) {
            options.put("agent_id", agentId);
        }
        if (timestamp != null) {
            options.put("timestamp", timestamp);
        }
        if (!redact) {
            options.put("redact", false);
        }
        byte[] json;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = Native.cstring(arena, agent);
            MemorySegment o = Native.cstring(arena, Json.write(options));
            MemorySegment data = output.length == 0 ? MemorySegment.NULL : arena.allocateFrom(JAVA_BYTE, output);
            long n = output.length;
            json = Native.ownedBytes((out, len) -> (int) Native.REPLAY.invokeExact(a, data, n, o, out, len));
        }
        Map<?, ?> r = (Map<?, ?>) Json.parse(json);
        List<Event> items = new ArrayList<>();
        for (Object env : (List<?>) r.get("items")) {
            items.add(RunPuller.envelope((Map<?, ?>) env));
        }
        List<AgentEvent> hooks = new ArrayList<>();
        for (Object h : (List<?>) r.get("hooks")) {
            hooks.add(Json.convert(h, AgentEvent.class));
        }
        return new Replay(items, hooks, Json.convert(r.get("outcome"), RunOutcome.class), Json.convert(r.get("stats"), DecodeStats.class));
    }
}
