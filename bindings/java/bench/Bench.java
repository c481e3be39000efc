import dev.agentstream.AgentConfig;
import dev.agentstream.Decoder;
import dev.agentstream.Evolve;
import dev.agentstream.RunOptions;
import dev.agentstream.generated.OutputEvent;
import dev.agentstream.generated.RunResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Events/s delivered to a Java handler: the Java half of bench/run.sh (which runs the C bench on
 * the same files in the same run and prints the ratios).
 *
 *   java --enable-native-access=ALL-UNNAMED -cp target/classes bench/Bench.java TRACES FAKE_HARNESS [seconds]
 *
 * TRACES holds <agent>/<name>.input.jsonl files. Modes, printed like bench.c's lines:
 *   java-decode  Decoder.feed in 64 KiB chunks, each typed OutputEvent to a Java lambda;
 *   java-run     one real run of the fake harness per agent (the agent's traces joined), the
 *                content events to an on("content") handler; the buffer's marks raised so no
 *                text delta is merged; best of 5 rounds, process start included.
 */
public class Bench {
    record Trace(String agent, Path path, byte[] data) {}

    static long checksum;
    static long events;

    static final Consumer<OutputEvent> TOUCH = e -> {
        events++;
        checksum = checksum * 31 + e.update().sessionUpdateKind().hashCode();
    };

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String fake = args[1];
        double seconds = args.length > 2 ? Double.parseDouble(args[2]) : 3;
        List<Trace> traces = new ArrayList<>();
        try (var agents = Files.list(dir)) {
            for (Path a : agents.sorted().toList()) {
                try (var files = Files.list(a)) {
                    for (Path f : files.filter(p -> p.toString().endsWith(".input.jsonl")).sorted().toList()) {
                        traces.add(new Trace(a.getFileName().toString(), f, Files.readAllBytes(f)));
                    }
                }
            }
        }
        long bytes = traces.stream().mapToLong(t -> t.data.length).sum();

        // Warm-up: the JIT compiles the decode path first (C needs none), for as long as a mode runs.
        for (long w0 = System.nanoTime(); System.nanoTime() - w0 < (long) (seconds * 1e9); ) {
            decodePass(traces);
        }
        events = 0;
        long passes = 0;
        long t0 = System.nanoTime();
        double t;
        do {
            decodePass(traces);
            passes++;
            t = (System.nanoTime() - t0) / 1e9;
        } while (t < seconds);
        line("java-decode", events / t, bytes * passes / t / 1e6, t * 1e9 / events, passes + " passes");

        double best = Double.MAX_VALUE;
        long perRound = 0;
        for (int round = 0; round < 6; round++) {
            events = 0;
            long r0 = System.nanoTime();
            for (Trace tr : traces) {
                run(tr, fake);
            }
            double rt = (System.nanoTime() - r0) / 1e9;
            if (round > 0) { // round 0 warms the JIT up
                best = Math.min(best, rt);
            }
            perRound = events;
        }
        line("java-run", perRound / best, bytes / best / 1e6, best * 1e9 / perRound, perRound + " events per round, best of 5: " + String.format("%.3f s", best));
        System.out.println("checksum " + Long.toHexString(checksum));
    }

    static void decodePass(List<Trace> traces) {
        for (Trace tr : traces) {
            try (Decoder d = new Decoder(tr.agent)) {
                for (int off = 0; off < tr.data.length; off += 65536) {
                    d.feed(tr.data, off, Math.min(65536, tr.data.length - off), TOUCH);
                }
                d.finish(TOUCH);
            }
        }
    }

    static void run(Trace tr, String fake) throws Exception {
        String name = tr.path.getFileName().toString();
        String prefix = tr.path.resolveSibling(name.substring(0, name.length() - ".input.jsonl".length())).toString();
        try (Evolve evolve = new Evolve(AgentConfig.of(tr.agent).withBin(fake).withEnv("AGENTSTREAM_FAKE_TRACE", prefix))) {
            evolve.on("content", e -> TOUCH.accept(e.content()));
            RunResult r = evolve.run(RunOptions.builder().prompt("bench")
                    .highWater(1_000_000_000L).byteBudget(4_000_000_000L).stall(Duration.ofMinutes(10)).build()).join();
            if (r.pressure().coalesced() != 0) {
                System.err.println("warning: text was merged: " + r.pressure());
            }
        }
    }

    static void line(String mode, double perSecond, double mbps, double ns, String note) {
        System.out.printf("%-12s %10.0f event/s  %8.1f MB/s input  %7.0f ns/event  (%s)%n", mode, perSecond, mbps, ns, note);
    }
}
