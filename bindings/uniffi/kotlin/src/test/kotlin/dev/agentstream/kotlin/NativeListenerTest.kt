package dev.agentstream.kotlin

import dev.agentstream.kotlin.ffi.ChannelListener
import dev.agentstream.kotlin.ffi.HookListener
import dev.agentstream.kotlin.types.RunResult
import dev.agentstream.kotlin.types.RunState
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.Collections
import dev.agentstream.kotlin.ffi.Evolve as NativeEvolve

/**
 * The native layer's per-item listener interfaces (what Swift uses), implemented in Kotlin and
 * called across JNA: a declared failure and an undeclared exception are both counted on the run
 * and reported, never a crash.
 */
class NativeListenerTest {
    @Test
    fun `per-item foreign listeners are called in order and their exceptions are counted`() = runBlocking {
        val seen = Collections.synchronizedList(mutableListOf<String>())
        NativeEvolve(fakeConfig("claude", "claude/s2-bash")).use { native ->
            native.on("content", ChannelAdapter { seen += "adapter:${it.sequence}" })
            // Not through the adapter: a plain RuntimeException reaches uniffi's unexpected-error path.
            native.on("content", object : ChannelListener {
                override fun onItem(envelopeJson: String) {
                    seen += "raw"
                    throw IllegalStateException("undeclared")
                }
            })
            val hooks = object : HookListener {
                override fun onHook(hookJson: String) {
                    throw dev.agentstream.kotlin.ffi.ListenerException.Failed("declared")
                }
            }
            val finished = native.run(RunOptions(prompt = "x"), hooks, null)
            val result = RunResult.fromJson(WireJson.parse(finished.resultJson))
            assertEquals(RunState.COMPLETED, result.state)
            val calls = seen.count { it.startsWith("adapter:") }
            assertTrue(calls >= 3)
            assertEquals(List(calls) { listOf("adapter", "raw") }.flatten(), seen.map { it.substringBefore(':') })
            assertTrue(result.handlerErrors >= calls + 1, "${result.handlerErrors}")
            assertEquals(setOf("content", "on_event"), finished.failures.map { it.channel }.toSet())
            assertTrue(finished.failures.single { it.channel == "content" }.reason.contains("undeclared"))
            assertEquals("declared", finished.failures.single { it.channel == "on_event" }.reason)
        }
    }
}
