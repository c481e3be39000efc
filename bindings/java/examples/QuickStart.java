import dev.agentstream.AgentConfig;
import dev.agentstream.Decoder;
import dev.agentstream.Evolve;
import dev.agentstream.RunOptions;
import dev.agentstream.generated.OutputEvent;
import dev.agentstream.generated.RunResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Runs an agent twice in one conversation, then decodes a recorded output. */
public class QuickStart {
    public static void main(String[] args) throws Exception {
        AgentConfig config = AgentConfig.of("claude");
        String bin = System.getenv("AGENTSTREAM_BIN"); // another executable than `claude` on PATH
        if (bin != null) {
            config = config.withBin(bin);
        }
        try (Evolve evolve = new Evolve(config)) {
            evolve.on("content", event -> System.out.println("content " + event.content().update().sessionUpdateKind()));
            RunOptions options = RunOptions.builder()
                    .prompt(args.length > 0 ? args[0] : "List the files")
                    .onEvent(hook -> System.out.println("hook " + hook.type()))
                    .build();
            RunResult result = evolve.run(options).join();
            System.out.println(result.state().wire() + ": " + result.finalText());
            System.out.println("session " + evolve.session().orElse("(none)"));

            // The next run continues the same conversation (its hooks start with run.resumed).
            evolve.run(RunOptions.builder().prompt("Now count them")
                    .onEvent(hook -> System.out.println("hook " + hook.type())).build()).join();
        }

        // No process: decode output recorded earlier (e.g. `claude -p … --output-format stream-json`).
        Path recorded = Path.of("recorded.jsonl");
        if (Files.exists(recorded)) {
            List<OutputEvent> events = Decoder.parse("claude", Files.readAllBytes(recorded));
            System.out.println("decoded " + events.size() + " events from " + recorded);
        }
    }
}
