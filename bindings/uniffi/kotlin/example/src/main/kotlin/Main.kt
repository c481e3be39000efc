import dev.agentstream.kotlin.AgentConfig
import dev.agentstream.kotlin.Evolve
import dev.agentstream.kotlin.types.AgentMessageChunk
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.TextContent
import dev.agentstream.kotlin.types.ToolCall
import dev.agentstream.kotlin.types.ToolStartedEvent
import kotlinx.coroutines.runBlocking

/**
 * Runs claude on a prompt and prints what it says and does. With AGENTSTREAM_FAKE_HARNESS (the
 * repository's target/release/fake-harness) and AGENTSTREAM_FAKE_TRACE (a golden trace prefix such
 * as tests/golden/claude/s2-bash) set, a recorded run is replayed instead: no agent needed.
 */
fun main(args: Array<String>) = runBlocking {
    val fake = System.getenv("AGENTSTREAM_FAKE_HARNESS")
    val config = if (fake != null) AgentConfig(type = "claude", bin = fake) else AgentConfig(type = "claude")
    val prompt = args.firstOrNull() ?: "List the files in this folder"
    Evolve(config).use { agent ->
        agent.onContent { event ->
            when (val u = event.update) {
                is AgentMessageChunk -> (u.content as? TextContent)?.let { println("agent: ${it.text}") }
                is ToolCall -> println("tool:  ${u.title}")
                else -> {}
            }
        }
        val result = agent.run(prompt) { hook -> if (hook is ToolStartedEvent) println("hook:  ${hook.type} ${hook.details.toolName}") }
        println("run:   ${result.state}, session ${result.sessionId}")

        // The same run as a stream: every envelope and hook event, in order.
        var hooks = 0
        agent.stream(prompt).collect { if (it is HookEvent) hooks++ }
        println("stream: $hooks hook events")
    }
}
