package dev.agentstream;

import static dev.agentstream.TestSupport.assertJsonLists;
import static dev.agentstream.TestSupport.jsonEqual;
import static dev.agentstream.TestSupport.jsonLines;
import static dev.agentstream.TestSupport.read;
import static dev.agentstream.TestSupport.wire;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.DecodeStats;
import dev.agentstream.generated.OutputEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every golden fixture of tests/golden through the Java Decoder (whole, byte by byte, random
 * chunks, the consumer form) and through Replay: each content event and hook event, written back
 * by {@link Json}, equals the expected line, so the generated records lose nothing the core emits.
 */
class GoldenTest {
    private static List<OutputEvent> decodeChunked(String agent, byte[] input, java.util.function.IntSupplier size) {
        List<OutputEvent> out = new ArrayList<>();
        try (Decoder d = new Decoder(agent)) {
            for (int i = 0; i < input.length; ) {
                int n = Math.min(Math.max(1, size.getAsInt()), input.length - i);
                out.addAll(d.feed(input, i, n));
                i += n;
            }
            out.addAll(d.finish());
        }
        return out;
    }

    @TestFactory
    Stream<DynamicTest> contentEventsEqualTheExpectedFiles() {
        return TestSupport.goldenCases().stream().map(c -> DynamicTest.dynamicTest(c.toString(), () -> {
            byte[] input = read(c.input());
            List<Object> want = jsonLines(c.sibling(".expected.jsonl"));

            assertJsonLists(c + " whole", want, decodeChunked(c.agent(), input, () -> input.length));
            assertJsonLists(c + " byte by byte", want, decodeChunked(c.agent(), input, () -> 1));
            for (long seed = 1; seed <= 3; seed++) {
                Random r = new Random(seed);
                assertJsonLists(c + " random chunks", want, decodeChunked(c.agent(), input, () -> 1 + r.nextInt(97)));
            }
            assertJsonLists(c + " parse", want, Decoder.parse(c.agent(), input));

            // The consumer form, 13 bytes at a time, and the statistics.
            try (Decoder d = new Decoder(c.agent())) {
                List<OutputEvent> viaConsumer = new ArrayList<>();
                for (int i = 0; i < input.length; i += 13) {
                    d.feed(input, i, Math.min(13, input.length - i), viaConsumer::add);
                }
                d.finish(viaConsumer::add);
                assertJsonLists(c + " consumer", want, viaConsumer);
                DecodeStats stats = d.stats();
                assertEquals(input.length, stats.bytes(), c + " stats.bytes");
                assertEquals(want.size(), stats.events(), c + " stats.events");
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> replayHooksAndItemsEqualTheExpectedFiles() {
        return TestSupport.goldenCases().stream().map(c -> DynamicTest.dynamicTest(c.toString(), () -> {
            byte[] input = read(c.input());
            Replay r = Replay.of(c.agent(), input, "golden", null, null);

            List<OutputEvent> content = new ArrayList<>();
            List<String> stdout = new ArrayList<>();
            for (int i = 0; i < r.items().size(); i++) {
                Event e = r.items().get(i);
                assertEquals(i, e.sequence(), c + ": gapless sequence");
                assertEquals("golden", e.runId());
                if (e instanceof Event.Content ce) {
                    content.add(ce.content());
                } else if (e instanceof Event.Text t) {
                    stdout.add(t.text());
                }
            }
            assertJsonLists(c + " replayed content", jsonLines(c.sibling(".expected.jsonl")), content);
            assertEquals(new String(input, java.nio.charset.StandardCharsets.UTF_8).lines().count(), stdout.size(), c + ": one stdout item per line");
            assertTrue(r.items().get(r.items().size() - 1) instanceof Event.Lifecycle, c + ": the terminal is last");

            List<Object> hooks = jsonLines(c.sibling(".hooks.jsonl"));
            assertJsonLists(c + " hooks", hooks, r.hooks());
            // Each hook line also reads as an AgentEvent and writes back unchanged.
            for (Object line : hooks) {
                AgentEvent h = Json.convert(line, AgentEvent.class);
                assertTrue(jsonEqual(line, wire(h)), c + ": " + Json.write(line));
            }
        }));
    }
}
