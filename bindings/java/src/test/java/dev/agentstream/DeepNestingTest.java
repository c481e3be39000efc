package dev.agentstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.OutputEvent;
import dev.agentstream.generated.RunResult;
import dev.agentstream.generated.RunState;
import dev.agentstream.generated.ToolCall;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tool input nested 10^6 levels deep crashes nothing: not the parser (it never recurses), not the
 * records, not code that walks them recursively (past {@link Json#MAX_DEPTH} levels a container is
 * a {@code {"$rawJson": text}} marker; the core bounds what it delivers the same way, and where tool
 * inputs are masked, the default, it masks the deep part whole: too deep to judge is never passed
 * through), through the Decoder, Replay and a real run.
 */
@Timeout(120)
class DeepNestingTest {
    static final int DEPTH = 1_000_000;

    /** A claude line whose Bash tool input holds a value nested DEPTH levels deep. */
    static byte[] deepClaudeLine() {
        StringBuilder sb = new StringBuilder(DEPTH * 6 + 400);
        sb.append("{\"type\":\"assistant\",\"session_id\":\"deep-session\",\"message\":{\"id\":\"msg_deep\",\"type\":\"message\",")
                .append("\"role\":\"assistant\",\"model\":\"m\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_deep\",")
                .append("\"name\":\"Bash\",\"input\":{\"command\":\"ls\",\"deep\":");
        sb.append("{\"a\":".repeat(DEPTH)).append('1').append("}".repeat(DEPTH));
        sb.append("}}]}}\n");
        // The call's result and the run's end, so a run of it completes.
        sb.append("{\"type\":\"user\",\"session_id\":\"deep-session\",\"message\":{\"role\":\"user\",\"content\":[")
                .append("{\"tool_use_id\":\"toolu_deep\",\"type\":\"tool_result\",\"content\":\"ok\",\"is_error\":false}]}}\n");
        sb.append("{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"session_id\":\"deep-session\"}\n");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Walks a parsed value (recursively, as user code would) and returns its depth. */
    static int depth(Object v) {
        if (v instanceof Map<?, ?> m) {
            int d = 0;
            for (Object o : m.values()) {
                d = Math.max(d, depth(o));
            }
            return d + 1;
        }
        if (v instanceof List<?> l) {
            int d = 0;
            for (Object o : l) {
                d = Math.max(d, depth(o));
            }
            return d + 1;
        }
        return 0;
    }

    /** The raw-JSON marker somewhere inside, or null. */
    static String rawJsonInside(Object v) {
        while (v instanceof Map<?, ?> m) {
            if (m.containsKey(Json.RAW_JSON_KEY)) {
                return (String) m.get(Json.RAW_JSON_KEY);
            }
            v = m.size() == 1 ? m.values().iterator().next() : m.get("deep");
        }
        return null;
    }

    static void checkToolInput(Object rawInput, boolean masked) {
        Map<?, ?> input = (Map<?, ?>) rawInput;
        assertEquals("ls", input.get("command"));
        assertTrue(depth(input) <= Json.MAX_DEPTH + 2, "bounded: " + depth(input));
        String raw = rawJsonInside(input.get("deep"));
        if (masked) {
            assertEquals(null, raw, "no raw text of a masked input");
            assertTrue(Json.write(input.get("deep")).contains("[redacted]"), "masked whole past the bound");
        } else {
            assertTrue(raw != null && raw.startsWith("{\"a\":{\"a\":") && raw.endsWith("}}"), "the deep part is kept as text");
        }
        // The JDK's recursive methods are safe on it (toString too, tested once below: it copies
        // the text once per level), and it writes back as JSON.
        assertEquals(input, Json.parse(Json.write(input)));
        assertEquals(input.hashCode(), Json.parse(Json.write(input)).hashCode());
    }

    @Test
    void theParserSurvivesAMillionLevelsOfEveryShape() {
        for (String open : List.of("[", "{\"k\":")) {
            String close = open.equals("[") ? "]" : "}";
            String text = open.repeat(DEPTH) + "0" + close.repeat(DEPTH);
            Object v = Json.parse(text);
            assertEquals(Json.MAX_DEPTH + 1, depth(v), "MAX_DEPTH levels, then the marker object");
            assertEquals(v, Json.parse(text));
            if (open.equals("[")) {
                assertTrue(v.toString().contains("$rawJson"));
            }
        }
        // Unbalanced deep input is an error, not a crash.
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Json.parse("[".repeat(DEPTH) + "]".repeat(DEPTH - 1))).getMessage().contains("invalid JSON"));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Json.parse("[".repeat(DEPTH) + "}".repeat(DEPTH)));
    }

    @Test
    void theDecoderDeliversTheToolCall() {
        List<OutputEvent> events = Decoder.parse("claude", deepClaudeLine());
        ToolCall call = (ToolCall) events.get(0).update();
        assertEquals("toolu_deep", call.toolCallId());
        checkToolInput(call.rawInput(), true);
        assertEquals(events.get(0), Decoder.parse("claude", deepClaudeLine()).get(0));
    }

    @Test
    void replayHooksCarryIt() {
        Replay r = Replay.of("claude", deepClaudeLine());
        AgentEvent started = r.hooks().stream().filter(h -> h.type().equals("tool.started")).findFirst().orElseThrow();
        assertEquals("toolu_deep", started.details().get("tool_call_id"));
        assertTrue(Json.write(started).length() > 0);
    }

    @Test
    void aRealRunDeliversItToHandlersAndStreams(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("deep");
        Files.write(dir.resolve("deep.input.jsonl"), deepClaudeLine());
        AgentConfig config = AgentConfig.of("claude").withBin(TestSupport.FAKE_HARNESS.toString())
                .withEnv("AGENTSTREAM_FAKE_TRACE", trace.toString());
        try (Evolve evolve = new Evolve(config)) {
            List<OutputEvent> content = new CopyOnWriteArrayList<>();
            List<AgentEvent> hooks = new CopyOnWriteArrayList<>();
            evolve.on("content", e -> content.add(e.content()));
            RunResult res = evolve.run(RunOptions.builder().prompt("x").redact(false).onEvent(hooks::add).build())
                    .get(60, TimeUnit.SECONDS);
            assertEquals(RunState.COMPLETED, res.state(), Json.write(res));
            assertEquals(0, res.handlerErrors());
            checkToolInput(((ToolCall) content.get(0).update()).rawInput(), false);
            assertTrue(hooks.stream().anyMatch(h -> h.type().equals("tool.started")));

            evolve.setSession(null);
            try (RunStream stream = evolve.stream(RunOptions.builder().prompt("x").hooks(true).build())) {
                List<Event> all = stream.stream().toList();
                Event.Content first = (Event.Content) all.stream().filter(e -> e instanceof Event.Content).findFirst().orElseThrow();
                checkToolInput(((ToolCall) first.content().update()).rawInput(), true);
                assertEquals(RunState.COMPLETED, stream.result().state());
            }
        }
    }
}
