package dev.agentstream;

import static dev.agentstream.TestSupport.fake;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.Channel;
import dev.agentstream.generated.Diagnostic;
import dev.agentstream.generated.ErrorKind;
import dev.agentstream.generated.ErrorTable;
import dev.agentstream.generated.LifecycleEvent;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Misuse gets this library's own exception, with the core's message. */
class MisuseTest {
    private static final List<String> CHANNELS = List.of("content", "lifecycle", "stdout", "stderr");
    private static final List<String> AGENTS = List.of("claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid");

    private static void mentionsAll(String message, List<String> words) {
        for (String w : words) {
            assertTrue(message.contains(w), "\"" + message + "\" lacks " + w);
        }
    }

    @Test
    void anUnknownChannelIsAnIllegalArgumentListingTheFour() {
        try (Evolve evolve = new Evolve(AgentConfig.of("claude"))) {
            InvalidArgumentException on = assertThrows(InvalidArgumentException.class, () -> evolve.on("message", e -> {}));
            assertTrue(on instanceof IllegalArgumentException);
            assertEquals(ErrorKind.INVALID_ARGUMENT, on.kind());
            assertEquals(1004, on.code());
            mentionsAll(on.getMessage(), CHANNELS);
            mentionsAll(assertThrows(IllegalArgumentException.class, () -> evolve.off("message")).getMessage(), CHANNELS);
            mentionsAll(assertThrows(IllegalArgumentException.class, () -> Agentstream.validateChannel("hooks")).getMessage(), CHANNELS);
            for (String c : CHANNELS) {
                Agentstream.validateChannel(c);
                evolve.on(c, e -> {}).close();
                evolve.off(c);
            }
            assertThrows(NullPointerException.class, () -> evolve.on("content", null));
        }
    }

    @Test
    void aNameWithANulIsRefusedNotCutShort() {
        // C reads "content\0x" as "content": the library would subscribe a channel the Java side
        // does not know (a NullPointerException, and a native subscription never removed).
        try (Evolve evolve = new Evolve(AgentConfig.of("claude"))) {
            Subscription kept = evolve.on("content", e -> {});
            InvalidArgumentException on = assertThrows(InvalidArgumentException.class, () -> evolve.on("content\0x", e -> {}));
            assertTrue(on.getMessage().contains("NUL"), on.getMessage());
            assertThrows(InvalidArgumentException.class, () -> evolve.off("content\0x"));
            assertThrows(InvalidArgumentException.class, () -> Agentstream.validateChannel("stdout\0"));
            assertThrows(InvalidArgumentException.class, () -> new Decoder("claude\0"));
            assertFalse(kept.isRemoved(), "the refused off removed nothing");
            kept.close();
        }
    }

    @Test
    void anUnknownAgentListsTheSeven() {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> new Evolve(AgentConfig.of("cursor")));
        mentionsAll(e.getMessage(), AGENTS);
        mentionsAll(assertThrows(InvalidArgumentException.class, () -> new Decoder("cursor")).getMessage(), AGENTS);
        mentionsAll(assertThrows(InvalidArgumentException.class, () -> Replay.of("cursor", new byte[0])).getMessage(), AGENTS);
        // An empty value names the field as Java spells it.
        assertTrue(assertThrows(InvalidArgumentException.class, () -> new Evolve(AgentConfig.of("claude").withBin("")))
                .getMessage().contains("bin"));
        assertTrue(assertThrows(InvalidArgumentException.class, () -> new Evolve(AgentConfig.of("claude").withAgentId("")))
                .getMessage().contains("agentId"));
    }

    @Test
    void badRunOptionsNameTheFieldAsJavaSpellsIt() {
        try (Evolve evolve = new Evolve(fake("claude", "claude/s1-text"))) {
            assertTrue(assertThrows(InvalidArgumentException.class,
                    () -> evolve.run(RunOptions.builder().prompt("x").timeout(Duration.ZERO).build())).getMessage().contains("timeoutMs"));
            assertTrue(assertThrows(InvalidArgumentException.class,
                    () -> RunOptions.builder().timeout(Duration.ofSeconds(-1))).getMessage().contains("timeout must not be negative"));
            assertTrue(assertThrows(InvalidArgumentException.class,
                    () -> RunOptions.builder().highWater(-1)).getMessage().contains("highWater"));
            assertTrue(assertThrows(InvalidArgumentException.class,
                    () -> evolve.run(RunOptions.builder().prompt("x").env(Map.of("A=B", "1")).build())).getMessage().contains("A=B"));
            assertTrue(assertThrows(InvalidArgumentException.class,
                    () -> evolve.run(RunOptions.builder().prompt("x").resume("-x").build())).getMessage().contains("resume"));
            String both = assertThrows(InvalidArgumentException.class,
                    () -> evolve.run(RunOptions.builder().prompt("x").command("ls").build())).getMessage();
            assertTrue(both.contains("prompt") && both.contains("command"), both);
            assertTrue(assertThrows(InvalidArgumentException.class, () -> evolve.run(RunOptions.builder().build()))
                    .getMessage().contains("prompt"));
            assertTrue(assertThrows(InvalidArgumentException.class,
                    () -> evolve.run(RunOptions.builder().prompt("x").stall(Duration.ZERO).build())).getMessage().contains("stallMs"));
            assertTrue(assertThrows(InvalidArgumentException.class, () -> evolve.setSession("-rf")).getMessage().contains("-rf"));
            // Nothing started: the Evolve is idle and usable.
            assertEquals(false, evolve.status().hasRun());
        }
    }

    @Test
    void aMissingHarnessIsHarnessNotFoundNamingIt() {
        try (Evolve evolve = new Evolve(AgentConfig.of("claude").withBin("/nonexistent/agentstream-java/claude"))) {
            HarnessNotFoundException e = assertThrows(HarnessNotFoundException.class, () -> evolve.run(RunOptions.prompt("x")));
            assertTrue(e.getMessage().contains("/nonexistent/agentstream-java/claude"), e.getMessage());
            assertTrue(e instanceof AgentstreamException);
            assertEquals(1001, e.code());
            assertEquals(ErrorTable.of(ErrorKind.HARNESS_NOT_FOUND).advice(), e.advice());
        }
    }

    @Test
    void aClosedEvolveThrowsInvalidHandleOnEveryCall() {
        Evolve evolve = new Evolve(AgentConfig.of("claude"));
        Subscription sub = evolve.on("content", e -> {});
        evolve.close();
        evolve.close(); // twice is fine
        assertTrue(sub.isRemoved());
        sub.close();
        List<Executable> calls = List.of(
                () -> evolve.on("content", e -> {}),
                () -> evolve.off("content"),
                () -> evolve.run(RunOptions.prompt("x")),
                () -> evolve.start(RunOptions.prompt("x")),
                () -> evolve.stream(RunOptions.prompt("x")),
                evolve::status,
                evolve::session,
                () -> evolve.setSession(null),
                evolve::pause,
                evolve::resume,
                evolve::interrupt,
                evolve::kill,
                evolve::agent);
        for (Executable call : calls) {
            InvalidHandleException e = assertThrows(InvalidHandleException.class, call);
            assertTrue(e instanceof IllegalStateException);
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            assertEquals(ErrorKind.INVALID_HANDLE, e.kind());
        }
    }

    @Test
    void aClosedDecoderThrowsAndBadDecoderArgumentsAreRefused() {
        Decoder d = new Decoder("claude");
        d.close();
        d.close();
        assertThrows(InvalidHandleException.class, () -> d.feed(new byte[] {'{'}));
        assertThrows(InvalidHandleException.class, d::finish);
        assertThrows(InvalidHandleException.class, d::stats);
        assertThrows(InvalidHandleException.class, d::takeDiagnostics);
        assertThrows(InvalidHandleException.class, d::sessionId);
        assertThrows(InvalidHandleException.class, () -> d.feed(new byte[] {'{'}, 0, 1, ev -> {}));
        assertThrows(InvalidHandleException.class, () -> d.finish(ev -> {}));
        assertTrue(assertThrows(InvalidArgumentException.class, () -> new Decoder("claude", -1)).getMessage().contains("maxLineBytes"));
        try (Decoder ok = new Decoder("claude")) {
            assertThrows(IndexOutOfBoundsException.class, () -> ok.feed(new byte[4], 3, 2));
        }
    }

    @Test
    void aDecoderReportsItsSessionIdAndTakesItsDiagnostics() {
        try (Decoder d = new Decoder("claude", 64)) {
            assertEquals(Optional.empty(), d.sessionId());
            d.feed("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"S-1\"}\n".getBytes(StandardCharsets.UTF_8));
            assertEquals(Optional.of("S-1"), d.sessionId());
            assertEquals(List.of(), d.takeDiagnostics());
            d.feed(("{\"type\":\"assistant\",\"pad\":\"" + "x".repeat(100) + "\"}\n").getBytes(StandardCharsets.UTF_8));
            List<Diagnostic> diagnostics = d.takeDiagnostics();
            assertEquals(1, diagnostics.size(), diagnostics.toString());
            assertEquals(2, diagnostics.get(0).line());
            assertTrue(diagnostics.get(0).message().contains("maximum line length"), diagnostics.toString());
            assertEquals(List.of(), d.takeDiagnostics(), "taken: a second call returns only newer ones");
        }
    }

    @Test
    void anEvolveKeepsItsConfig() {
        AgentConfig config = AgentConfig.of("claude");
        try (Evolve evolve = new Evolve(config)) {
            assertEquals(config, evolve.config());
        }
    }

    @Test
    void aThrowingDecoderConsumerIsRethrownAndReentranceIsBusy() {
        byte[] input = TestSupport.read(TestSupport.GOLDEN.resolve("claude/s2-bash.input.jsonl"));
        try (Decoder d = new Decoder("claude")) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> d.feed(input, 0, input.length, ev -> {
                        throw new IllegalStateException("consumer");
                    }));
            assertEquals("consumer", e.getMessage());
            d.finish(); // the decoder is still usable
        }
        try (Decoder d = new Decoder("claude")) {
            BusyException busy = assertThrows(BusyException.class,
                    () -> d.feed(input, 0, input.length, ev -> d.feed(new byte[] {'\n'})));
            assertEquals(ErrorKind.BUSY, busy.kind());
            assertTrue(busy instanceof IllegalStateException);
        }
    }

    @Test
    void aPanicInTheLibraryIsAPanicExceptionNotACrash() {
        PanicException e = assertThrows(PanicException.class, Agentstream::testingPanic);
        assertEquals(ErrorKind.PANIC, e.kind());
        assertTrue(e.getMessage().contains("panic"), e.getMessage());
    }

    @Test
    void everyCoreErrorKindHasItsExceptionClass() throws Exception {
        for (ErrorTable.Row row : ErrorTable.ROWS) {
            RuntimeException e = Errors.of(row.code(), "message of " + row.kind().wire());
            AgentstreamFailure f = (AgentstreamFailure) e;
            assertEquals(row.kind(), f.kind());
            assertEquals(row.code(), f.code());
            assertEquals(row.advice(), f.advice());
            assertEquals("message of " + row.kind().wire(), e.getMessage());
            Field code = e.getClass().getField("CODE");
            assertEquals(row.code(), code.getInt(null), e.getClass().getSimpleName());
            // The library names the same kind for the code.
            assertEquals(row.kind().wire(), Native.statusName(row.code()));
        }
        assertTrue(Errors.of(ErrorKind.INVALID_ARGUMENT, "m") instanceof IllegalArgumentException);
        assertTrue(Errors.of(ErrorKind.NOT_RUNNING, "m") instanceof IllegalStateException);
        assertTrue(Errors.of(ErrorKind.UNSUPPORTED, "m") instanceof UnsupportedOperationException);
        assertTrue(Errors.of(9999, "m") instanceof InternalException);
    }

    @Test
    void readingAnotherChannelsPayloadSaysWhy() {
        Event text = new Event.Text("run_x", 3, Channel.STDOUT, "line\n", 0);
        IllegalStateException e = assertThrows(IllegalStateException.class, text::content);
        assertTrue(e.getMessage().contains("stdout"), e.getMessage());
        assertThrows(IllegalStateException.class, text::lifecycle);
        assertThrows(IllegalStateException.class, text::hook);
        assertEquals("line\n", text.text());
        LifecycleEvent none = null;
        assertThrows(IllegalStateException.class, new Event.Lifecycle("run_x", 0, none)::text);
    }

    @Test
    void aClosedBudgetThrows() {
        Budget b = new Budget(1024, 2);
        assertEquals(0, b.active());
        b.close();
        b.close();
        assertThrows(InvalidHandleException.class, b::active);
        assertThrows(InvalidArgumentException.class, () -> new Budget(1024, 0));
        // Sizes are unsigned natively: a negative one would be a budget bounding nothing.
        assertThrows(InvalidArgumentException.class, () -> new Budget(-1, 2));
        assertThrows(InvalidArgumentException.class, () -> new Budget(1024, -1));
    }
}
