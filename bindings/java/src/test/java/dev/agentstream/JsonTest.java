package dev.agentstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.AgentMessageChunk;
import dev.agentstream.generated.OutputEvent;
import dev.agentstream.generated.TextContent;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The JSON reader and writer on their own. */
class JsonTest {
    @Test
    void scalarsStringsAndNumbers() {
        assertEquals(List.of(1L, -2L, 3.5, 1e-5, true, false), Json.parse("[1,-2,3.5,1e-5,true,false]"));
        assertEquals(new BigInteger("18446744073709551615"), Json.parse("18446744073709551615"));
        assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
        assertEquals(null, Json.parse(" null "));
        assertEquals("a\"b\\c/d\n\t\u00e9\ud83d\ude00", Json.parse("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\""));
        assertEquals("héllo wörld", Json.parse("\"héllo wörld\""));
        // A lone surrogate escape is kept, and written back as an escape (nothing lost).
        String lone = (String) Json.parse("\"x\\ud800y\"");
        assertEquals(3, lone.length());
        assertEquals("\"x\\ud800y\"", Json.write(lone));
        assertEquals("\"\\u0001\\n\"", Json.write("\u0001\n"));
    }

    @Test
    void objectsKeepTheirKeyOrder() {
        Map<?, ?> m = (Map<?, ?>) Json.parse("{\"z\":1,\"a\":{\"b\":[]},\"m\":{}}");
        assertEquals(List.of("z", "a", "m"), List.copyOf(m.keySet()));
        assertEquals("{\"z\":1,\"a\":{\"b\":[]},\"m\":{}}", Json.write(m));
    }

    @Test
    void invalidJsonSaysWhere() {
        for (String bad : List.of("", "{", "[1,]", "{\"a\" 1}", "tru", "\"abc", "01x", "[1] 2", "{\"a\":1,}", "\"\\x\"", "-", "1.", "1e")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
            assertTrue(e.getMessage().startsWith("invalid JSON at byte"), e.getMessage());
        }
    }

    @Test
    void recordsReadAndWriteWithTheirWireNames() {
        String line = "{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}},\"extra\":{\"k\":[1,2]},\"unknown\":true}";
        OutputEvent e = Json.read(line, OutputEvent.class);
        assertEquals("s", e.sessionId());
        assertEquals(new AgentMessageChunk(new TextContent("hi")), e.update());
        assertEquals(Map.of("k", List.of(1L, 2L)), e.extra());
        assertEquals("{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}},\"extra\":{\"k\":[1,2]}}",
                Json.write(e));
        IllegalStateException unknown = assertThrows(IllegalStateException.class,
                () -> Json.read("{\"update\":{\"sessionUpdate\":\"future_kind\"}}", OutputEvent.class));
        assertTrue(unknown.getMessage().contains("future_kind"));
    }

    @Test
    void depthIsBoundedAtMaxDepth() {
        String text = "[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH);
        Object v = Json.parse(text);
        for (int i = 0; i < Json.MAX_DEPTH - 1; i++) {
            v = ((List<?>) v).get(0);
        }
        assertEquals(List.of(), v, "MAX_DEPTH levels are built");
        Object deeper = Json.parse("[" + text + "]");
        for (int i = 0; i < Json.MAX_DEPTH; i++) {
            deeper = ((List<?>) deeper).get(0);
        }
        Map<String, Object> marker = new LinkedHashMap<>();
        marker.put(Json.RAW_JSON_KEY, "[]");
        assertEquals(marker, deeper, "the next level is the marker holding its text");
    }
}
