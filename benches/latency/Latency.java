import dev.agentstream.AgentConfig;
import dev.agentstream.Evolve;
import dev.agentstream.RunOptions;
import dev.agentstream.generated.AgentMessageChunk;
import dev.agentstream.generated.RunResult;
import dev.agentstream.generated.TextContent;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The Java handler of the latency benchmark (benches/latency/run.py): one run of the paced emitter
 * with an on("content") handler, as a Java user writes it. The handler reads CLOCK_MONOTONIC first
 * ({@code System.nanoTime()}: HotSpot reads CLOCK_MONOTONIC on Linux), then the stamps
 * "@@&lt;line&gt;:&lt;ns&gt;;" in the event's text, and records now - stamp.
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp bindings/java/target/classes Latency.java EMITTER OUT_FILE</pre>
 *
 * Writes "&lt;line&gt; &lt;latency ns&gt;" per stamp; prints "state &lt;state&gt;".
 */
public class Latency {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Latency EMITTER OUT_FILE");
            System.exit(2);
        }
        // One stamp per line the emitter prints (merged chunks keep every stamp).
        int capacity = Integer.parseInt(System.getenv().getOrDefault("AGENTSTREAM_LATENCY_LINES", "3000"));
        long[] lines = new long[capacity];
        long[] latencies = new long[capacity];
        int[] n = {0};
        RunResult result;
        try (Evolve evolve = new Evolve(AgentConfig.of("claude").withBin(args[0]))) {
            evolve.on("content", e -> {
                long now = System.nanoTime();
                if (!(e.content().update() instanceof AgentMessageChunk chunk)
                        || !(chunk.content() instanceof TextContent text)) {
                    return;
                }
                String s = text.text();
                for (int at = s.indexOf("@@"); at >= 0; at = s.indexOf("@@", at + 2)) {
                    int colon = s.indexOf(':', at), semi = s.indexOf(';', colon);
                    if (n[0] == lines.length) {
                        throw new IllegalStateException("more stamps than the arrays hold");
                    }
                    lines[n[0]] = Long.parseLong(s, at + 2, colon, 10);
                    latencies[n[0]++] = now - Long.parseLong(s, colon + 1, semi, 10);
                }
            });
            result = evolve.run(RunOptions.prompt("latency")).join();
        }
        try (BufferedWriter w = Files.newBufferedWriter(Path.of(args[1]))) {
            for (int i = 0; i < n[0]; i++) {
                w.write(lines[i] + " " + latencies[i] + "\n");
            }
        }
        System.out.println("state " + result.state().toString().toLowerCase());
    }
}
