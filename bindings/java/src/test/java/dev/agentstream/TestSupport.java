package dev.agentstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;

/** Paths of the repository's fixtures and the JSON comparison every test uses. */
final class TestSupport {
    private TestSupport() {}

    static final Path REPO = Path.of(System.getProperty("agentstream.repo", "../..")).toAbsolutePath().normalize();
    static final Path GOLDEN = REPO.resolve("tests/golden");
    static final Path PARITY = REPO.resolve("tests/parity/api.json");
    static final Path FAKE_HARNESS = Path.of(System.getProperty("agentstream.fakeHarness",
            REPO.resolve("target/release/fake-harness").toString())).toAbsolutePath();

    /** One tests/golden/&lt;agent&gt;/&lt;case&gt;.input.jsonl. */
    record GoldenCase(String agent, String name, Path input) {
        Path sibling(String suffix) {
            String file = input.getFileName().toString();
            return input.resolveSibling(file.substring(0, file.length() - ".input.jsonl".length()) + suffix);
        }

        @Override
        public String toString() {
            return agent + "/" + name;
        }
    }

    static List<GoldenCase> goldenCases() {
        try (Stream<Path> agents = Files.list(GOLDEN)) {
            List<GoldenCase> out = new ArrayList<>();
            for (Path dir : agents.filter(Files::isDirectory).sorted().toList()) {
                try (Stream<Path> files = Files.list(dir)) {
                    for (Path p : files.filter(f -> f.getFileName().toString().endsWith(".input.jsonl")).sorted().toList()) {
                        String f = p.getFileName().toString();
                        out.add(new GoldenCase(dir.getFileName().toString(), f.substring(0, f.length() - ".input.jsonl".length()), p));
                    }
                }
            }
            if (out.isEmpty()) {
                fail("no golden cases under " + GOLDEN);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] read(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The non-blank lines of a JSONL file, parsed (a missing file fails the test). */
    static List<Object> jsonLines(Path p) {
        assertTrue(Files.exists(p), p + " is missing: every golden case has its expected and hooks files");
        List<Object> out = new ArrayList<>();
        for (String line : new String(read(p), StandardCharsets.UTF_8).split("\n")) {
            if (!line.isBlank()) {
                out.add(Json.parse(line));
            }
        }
        return out;
    }

    /** A value written by {@link Json#write} and parsed back: what the records say on the wire. */
    static Object wire(Object value) {
        return Json.parse(Json.write(value));
    }

    /** Semantic JSON equality: key order ignored, numbers by value. */
    static boolean jsonEqual(Object a, Object b) {
        if (a instanceof Number x && b instanceof Number y) {
            return new BigDecimal(x.toString()).compareTo(new BigDecimal(y.toString())) == 0;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !jsonEqual(e.getValue(), y.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!jsonEqual(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return Objects.equals(a, b);
    }

    static void assertJsonLists(String what, List<?> expected, List<?> actualRecords) {
        assertEquals(expected.size(), actualRecords.size(), what + ": event count");
        for (int i = 0; i < expected.size(); i++) {
            Object got = wire(actualRecords.get(i));
            if (!jsonEqual(expected.get(i), got)) {
                fail(what + ": event " + (i + 1) + " differs\n got      " + Json.write(got) + "\n expected " + Json.write(expected.get(i)));
            }
        }
    }

    /** A config that runs the fake harness replaying tests/golden/&lt;trace&gt;. */
    static AgentConfig fake(String agent, String trace) {
        return AgentConfig.of(agent).withBin(FAKE_HARNESS.toString())
                .withEnv("AGENTSTREAM_FAKE_TRACE", GOLDEN.resolve(trace).toString());
    }
}
