package dev.agentstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.agentstream.generated.AgentEvent;
import dev.agentstream.generated.ToolStartedDetails;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

/** One version everywhere, and the library loaded from the class path (as from the jar). */
class VersionTest {
    @Test
    void theJarVersionIsTheLibrarysAndTheCargoWorkspaces() throws Exception {
        assertEquals(Agentstream.version(), Agentstream.jarVersion());
        String cargo = Files.readString(TestSupport.REPO.resolve("Cargo.toml"), StandardCharsets.UTF_8);
        assertTrue(cargo.contains("version = \"" + Agentstream.version() + "\""), "Cargo.toml's workspace version");
    }

    @Test
    void theLibraryCameFromTheClassPath() {
        assertEquals("classpath:native/" + NativeLibrary.platform() + "/libagentstream.so", Agentstream.libraryLocation());
    }

    @Test
    void hookDetailsReadAsTheirTypedRecords() {
        Replay r = Replay.of("claude", TestSupport.read(TestSupport.GOLDEN.resolve("claude/s2-bash.input.jsonl")));
        AgentEvent started = r.hooks().stream().filter(h -> h.type().equals("tool.started")).findFirst().orElseThrow();
        ToolStartedDetails d = Json.convert(started.details(), ToolStartedDetails.class);
        assertEquals(started.details().get("tool_call_id"), d.toolCallId());
        assertEquals("Bash", d.toolName());
    }
}
