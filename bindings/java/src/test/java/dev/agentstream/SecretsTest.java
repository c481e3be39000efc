package dev.agentstream;

import static dev.agentstream.TestSupport.REPO;
import static dev.agentstream.TestSupport.read;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.Channel;
import dev.agentstream.generated.OutputEvent;
import dev.agentstream.generated.RunResult;
import dev.agentstream.generated.RunState;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The secret-shape corpus (tests/secrets/corpus.jsonl) through every output path of the Java
 * package: {@link Decoder#parse}, a {@link Decoder} fed in small pieces, {@link Replay} (items and
 * hooks) and a real run of each harness's secret trace (tests/secrets/traces/): content and
 * lifecycle handlers, hook events, the stream. The raw stdout/stderr channels carry the process's
 * bytes verbatim by design and are not checked. A run with {@code redact(false)} delivers every
 * secret, so the fixtures do reach the masked fields.
 */
@Timeout(120)
class SecretsTest {
    static final Path SECRETS = REPO.resolve("tests/secrets");
    static final List<String> AGENTS = List.of("claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid");

    static List<String> corpusSecrets() {
        List<String> out = new ArrayList<>();
        for (String line : new String(read(SECRETS.resolve("corpus.jsonl")), StandardCharsets.UTF_8).split("\n")) {
            if (!line.isBlank()) {
                for (Object s : (List<?>) ((Map<?, ?>) Json.parse(line)).get("secrets")) {
                    out.add((String) s);
                }
            }
        }
        assertTrue(out.size() >= 24, "corpus: " + out.size() + " secrets");
        return out;
    }

    /** The secrets found in {@code value} written as JSON (also in their JSON-escaped form). */
    static List<String> survivors(List<String> secrets, Object value) {
        String text = Json.write(value);
        List<String> out = new ArrayList<>();
        for (String s : secrets) {
            String escaped = Json.write(s);
            if (text.contains(s) || text.contains(escaped.substring(1, escaped.length() - 1))) {
                out.add(s);
            }
        }
        return out;
    }

    static byte[] trace(String agent) {
        return read(SECRETS.resolve("traces/" + agent + ".input.jsonl"));
    }

    @Test
    void everySecretIsMaskedByParseTheDecoderAndReplay() {
        List<String> secrets = corpusSecrets();
        for (String agent : AGENTS) {
            byte[] data = trace(agent);
            assertEquals(List.of(), survivors(secrets, Decoder.parse(agent, data)), agent + ": parse");
            List<OutputEvent> fed = new ArrayList<>();
            try (Decoder d = new Decoder(agent)) {
                for (int at = 0; at < data.length; at += 97) {
                    fed.addAll(d.feed(data, at, Math.min(97, data.length - at)));
                }
                fed.addAll(d.finish());
            }
            assertEquals(List.of(), survivors(secrets, fed), agent + ": a Decoder fed in pieces");
            Replay r = Replay.of(agent, data);
            List<Event> items = r.items().stream()
                    .filter(e -> !(e instanceof Event.Text t) || (t.channel() != Channel.STDOUT && t.channel() != Channel.STDERR))
                    .toList();
            assertEquals(List.of(), survivors(secrets, items), agent + ": replay items");
            assertEquals(List.of(), survivors(secrets, r.hooks()), agent + ": replay hooks");
        }
    }

    @Test
    void parseTheDecoderAndReplayDeliverToolInputsAsPrintedWithRedactionOff() {
        List<String> secrets = corpusSecrets();
        for (String agent : AGENTS) {
            byte[] data = trace(agent);
            List<String> parsed = survivors(secrets, Decoder.parse(agent, data, false));
            assertTrue(!parsed.isEmpty(), agent + ": parse with redact false delivers the secrets");
            List<OutputEvent> fed = new ArrayList<>();
            try (Decoder d = new Decoder(agent, 0, false)) {
                fed.addAll(d.feed(data, 0, data.length));
                fed.addAll(d.finish());
            }
            assertEquals(parsed, survivors(secrets, fed), agent + ": a Decoder with redact false");
            Replay r = Replay.of(agent, data, null, null, null, false);
            List<Event> content = r.items().stream().filter(e -> !(e instanceof Event.Text)).toList();
            assertEquals(parsed, survivors(secrets, content), agent + ": replay with redact false");
            assertEquals(List.of(), survivors(secrets, Decoder.parse(agent, data, true)), agent + ": parse with redact true");
        }
    }

    @Test
    void everySecretIsMaskedInARealRunAndDeliveredWithRedactionOff() throws Exception {
        List<String> secrets = corpusSecrets();
        for (String agent : AGENTS) {
            AgentConfig config = AgentConfig.of(agent).withBin(TestSupport.FAKE_HARNESS.toString())
                    .withEnv("AGENTSTREAM_FAKE_TRACE", SECRETS.resolve("traces/" + agent).toString());
            for (boolean redact : List.of(true, false)) {
                try (Evolve evolve = new Evolve(config)) {
                    List<Object> seen = new CopyOnWriteArrayList<>();
                    evolve.on("content", seen::add);
                    evolve.on("lifecycle", seen::add);
                    RunResult res = evolve.run(RunOptions.builder().prompt("x").redact(redact).onEvent(seen::add).build())
                            .get(60, TimeUnit.SECONDS);
                    assertEquals(RunState.COMPLETED, res.state(), agent + ": " + Json.write(res));
                    seen.add(res);
                    evolve.setSession(null); // a fresh run, not a resumed one
                    try (RunStream stream = evolve.stream(RunOptions.builder().prompt("x").redact(redact).hooks(true).build())) {
                        stream.stream()
                                .filter(e -> !(e instanceof Event.Text))
                                .forEach(seen::add);
                    }
                    List<String> found = survivors(secrets, seen);
                    if (redact) {
                        assertEquals(List.of(), found, agent + ": a run leaks");
                    } else {
                        assertEquals(secrets.size(), found.size(), agent + ": with redaction off every secret comes through");
                    }
                }
            }
        }
    }
}
