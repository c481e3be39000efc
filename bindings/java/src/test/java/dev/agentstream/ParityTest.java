package dev.agentstream;

import static dev.agentstream.TestSupport.jsonEqual;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.agentstream.generated.RunResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The API parity table (tests/parity/api.json, see its README) run against the Java API: each
 * language-neutral call is mapped to its Java idiom.
 */
class ParityTest {
    @TestFactory
    Stream<DynamicTest> theParityTable() {
        Map<?, ?> table = (Map<?, ?>) Json.parse(new String(TestSupport.read(TestSupport.PARITY), StandardCharsets.UTF_8));
        assertEquals(1L, table.get("version"), "a table version this runner knows");
        return ((List<?>) table.get("cases")).stream().map(c -> {
            Map<?, ?> testCase = (Map<?, ?>) c;
            return DynamicTest.dynamicTest((String) testCase.get("name"), () -> new CaseRun(testCase).run());
        });
    }

    /** One case: its Evolve, its argv file and what its handlers saw. */
    private static final class CaseRun {
        final Map<?, ?> testCase;
        final String harness;
        final Path argvFile;
        Evolve evolve;
        final AtomicLong handlerCalls = new AtomicLong();
        final AtomicReference<String> firstHook = new AtomicReference<>();

        CaseRun(Map<?, ?> testCase) throws Exception {
            this.testCase = testCase;
            this.harness = (String) testCase.get("harness");
            this.argvFile = Files.createTempFile("agentstream-parity-argv", ".json");
        }

        void run() throws Exception {
            try {
                if (testCase.get("config") != null) {
                    evolve = newEvolve((Map<?, ?>) testCase.get("config"));
                }
                int i = 0;
                for (Object s : (List<?>) testCase.get("steps")) {
                    step(++i, (Map<?, ?>) s);
                }
            } finally {
                if (evolve != null) {
                    evolve.close();
                }
                Files.deleteIfExists(argvFile);
            }
        }

        Evolve newEvolve(Map<?, ?> config) {
            AgentConfig cfg = AgentConfig.of((String) config.get("type"));
            for (Map.Entry<?, ?> e : config.entrySet()) {
                switch ((String) e.getKey()) {
                    case "type" -> {}
                    case "bin" -> cfg = cfg.withBin((String) e.getValue());
                    case "model" -> cfg = cfg.withModel((String) e.getValue());
                    case "agent_id" -> cfg = cfg.withAgentId((String) e.getValue());
                    case "cwd" -> cfg = cfg.withCwd(Path.of((String) e.getValue()));
                    case "extra_args" -> cfg = cfg.withExtraArgs(((List<?>) e.getValue()).toArray(String[]::new));
                    case "env" -> {
                        for (Map.Entry<?, ?> v : ((Map<?, ?>) e.getValue()).entrySet()) {
                            cfg = cfg.withEnv((String) v.getKey(), (String) v.getValue());
                        }
                    }
                    default -> fail("the table's config key " + e.getKey() + " has no Java mapping");
                }
            }
            if (harness != null) {
                cfg = cfg.withBin(TestSupport.FAKE_HARNESS.toString())
                        .withEnv("AGENTSTREAM_FAKE_TRACE", TestSupport.GOLDEN.resolve(harness).toString())
                        .withEnv("AGENTSTREAM_FAKE_ARGV_FILE", argvFile.toString());
            }
            Evolve e = new Evolve(cfg);
            e.onHandlerError(f -> {}); // counted in the result (checked); reporting is tested elsewhere
            return e;
        }

        RunOptions options(Map<?, ?> step) {
            RunOptions.Builder b = RunOptions.builder();
            Map<?, ?> request = (Map<?, ?>) step.get("request");
            for (Map.Entry<?, ?> e : request.entrySet()) {
                Object v = e.getValue();
                switch ((String) e.getKey()) {
                    case "prompt" -> b.prompt((String) v);
                    case "model" -> b.model((String) v);
                    case "cwd" -> b.cwd(Path.of((String) v));
                    case "resume" -> b.resume((String) v);
                    case "timeout_ms" -> b.timeout(Duration.ofMillis(((Number) v).longValue()));
                    case "env" -> {
                        for (Map.Entry<?, ?> kv : ((Map<?, ?>) v).entrySet()) {
                            b.env((String) kv.getKey(), (String) kv.getValue());
                        }
                    }
                    default -> fail("the table's request key " + e.getKey() + " has no Java mapping");
                }
            }
            if (Boolean.TRUE.equals(step.get("on_event"))) {
                firstHook.set(null);
                b.onEvent(h -> firstHook.compareAndSet(null, h.type()));
            }
            return b.build();
        }

        /** Runs one step's call; returns its value (the wire form for records). */
        Object call(Map<?, ?> step) throws Exception {
            String call = (String) step.get("call");
            switch (call) {
                case "new" -> {
                    evolve = newEvolve((Map<?, ?>) step.get("config"));
                    return null;
                }
                case "on" -> {
                    boolean fails = "throw".equals(step.get("handler"));
                    evolve.on((String) step.get("channel"), e -> {
                        handlerCalls.incrementAndGet();
                        if (fails) {
                            throw new IllegalStateException("a throwing handler");
                        }
                    });
                    return null;
                }
                case "off" -> {
                    evolve.off((String) step.get("channel"));
                    return null;
                }
                case "run" -> {
                    RunResult r = evolve.run(options(step)).get(60, TimeUnit.SECONDS);
                    return TestSupport.wire(r);
                }
                case "status" -> {
                    return TestSupport.wire(evolve.status());
                }
                case "get_session" -> {
                    return evolve.session().orElse(null);
                }
                case "set_session" -> {
                    evolve.setSession((String) step.get("session_id"));
                    return null;
                }
                case "interrupt" -> {
                    return evolve.interrupt();
                }
                case "kill" -> {
                    return evolve.kill();
                }
                case "pause" -> {
                    evolve.pause();
                    return null;
                }
                case "resume" -> {
                    evolve.resume();
                    return null;
                }
                case "argv" -> {
                    return Json.parse(Files.readString(argvFile));
                }
                default -> {
                    fail("the table's call " + call + " has no Java mapping");
                    return null;
                }
            }
        }

        void step(int n, Map<?, ?> step) throws Exception {
            String where = testCase.get("name") + ", step " + n + " (" + step.get("call") + ")";
            handlerCalls.set(0);
            Object value;
            try {
                value = call(step);
            } catch (RuntimeException e) {
                if (!(e instanceof AgentstreamFailure f)) {
                    throw e;
                }
                Object want = step.get("error");
                if (want == null) {
                    throw new AssertionError(where + ": unexpected " + e, e);
                }
                assertEquals(want, f.kind().wire(), where + ": " + e.getMessage());
                for (Object part : listOf(step.get("message_has"))) {
                    assertTrue(e.getMessage().contains((String) part), where + ": \"" + e.getMessage() + "\" lacks " + part);
                }
                return;
            }
            if (step.get("error") != null) {
                fail(where + ": expected a " + step.get("error") + " error, got " + value);
            }
            if (step.containsKey("returns")) {
                Object want = step.get("returns");
                if (want instanceof Map<?, ?> wantMap) {
                    Map<?, ?> got = (Map<?, ?>) value;
                    assertNotNull(got, where);
                    for (Map.Entry<?, ?> e : wantMap.entrySet()) {
                        Object g = got.get(e.getKey());
                        assertTrue(jsonEqual(e.getValue(), g), where + ": " + e.getKey() + " = " + g + ", expected " + e.getValue());
                    }
                } else {
                    assertTrue(jsonEqual(want, value), where + ": " + value + ", expected " + want);
                }
            }
            if (step.containsKey("argv_has")) {
                List<?> argv = (List<?>) value;
                List<?> needle = (List<?>) step.get("argv_has");
                // `--opt value` in the table also matches the joined `--opt=value` a harness gets.
                boolean joined = needle.size() == 2 && argv.contains(needle.get(0) + "=" + needle.get(1));
                assertTrue(java.util.Collections.indexOfSubList(argv, needle) >= 0 || joined, where + ": " + argv + " lacks " + needle);
            }
            for (Object absent : listOf(step.get("argv_lacks"))) {
                for (Object arg : (List<?>) value) {
                    assertTrue(!arg.equals(absent) && !((String) arg).startsWith(absent + "="), where + ": " + value + " has " + absent);
                }
            }
            if (step.get("hooks_first") != null) {
                assertEquals(step.get("hooks_first"), firstHook.get(), where);
            }
            if (step.get("handler_calls_at_least") != null) {
                long atLeast = ((Number) step.get("handler_calls_at_least")).longValue();
                assertTrue(handlerCalls.get() >= atLeast, where + ": " + handlerCalls.get() + " handler calls");
            }
            if (step.get("handler_errors_at_least") != null) {
                long atLeast = ((Number) step.get("handler_errors_at_least")).longValue();
                long got = ((Number) ((Map<?, ?>) value).get("handler_errors")).longValue();
                assertTrue(got >= atLeast, where + ": " + got + " handler errors");
            }
        }

        private static List<?> listOf(Object o) {
            return o == null ? List.of() : (List<?>) o;
        }
    }
}
