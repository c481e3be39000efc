package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.ContentEnvelope
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.OutputEvent
import dev.agentstream.kotlin.types.RunState
import dev.agentstream.kotlin.types.ToolCall
import dev.agentstream.kotlin.types.ToolStartedEvent
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import java.io.File

/**
 * A tool input nested 10^6 levels deep (issue 24 item 1) is delivered through every path — parse,
 * the decoder, a replay's hooks, a live run's listeners and its stream — and never overflows the
 * stack: past a bounded depth the container arrives as `{"$rawJson": "<its JSON text>"}`, or,
 * where tool inputs are masked (the default), masked whole: too deep to judge is never passed
 * through.
 */
@Timeout(120)
class DeepNestingTest {
    private val levels = 1_000_000

    private val line: String by lazy {
        val deep = "[".repeat(levels) + "]".repeat(levels)
        """{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"m",""" +
            """"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls","nested":$deep}}],""" +
            """"stop_reason":null},"session_id":"s1"}""" + "\n"
    }

    /** The marker in [value], found by walking down (the tree is bounded), and its depth. */
    private fun marker(value: JsonElement?): Pair<Int, String>? {
        var cur = value
        var depth = 0
        while (cur != null) {
            depth++
            cur = when (cur) {
                is JsonObject -> {
                    (cur[WireJson.RAW_JSON_MARKER] as? JsonPrimitive)?.let { return depth to it.content }
                    cur.values.firstOrNull { it is JsonObject || it is JsonArray }
                }
                is JsonArray -> cur.firstOrNull()
                else -> null
            }
        }
        return null
    }

    private fun assertDeepToolCall(events: List<OutputEvent>, masked: Boolean = true) {
        val call = events.map { it.update }.filterIsInstance<ToolCall>().single()
        val found = marker(call.rawInput)
        if (masked) {
            assertEquals(null, found, "no raw text of a masked input")
            val text = call.rawInput.toString()
            assertTrue("[redacted]" in text && text.length < 1000, "masked whole past the bound: ${text.take(200)}")
        } else {
            assertNotNull(found, "a raw JSON marker in ${call.rawInput.toString().take(200)}")
            val (depth, text) = found!!
            assertTrue(depth <= WireJson.MAX_DEPTH + 1, "bounded: $depth")
            assertTrue(text.startsWith("[[[") && text.length > levels, "the container's own text")
        }
        // Printing, hashing and comparing the event recurse over a bounded tree only.
        assertTrue(events.toString().isNotEmpty())
        assertEquals(events.hashCode(), events.toList().hashCode())
    }

    @Test
    fun `parse and the decoder deliver it`() {
        assertDeepToolCall(Agentstream.parse("claude", line.toByteArray()))
        Decoder("claude").use { d ->
            val bytes = line.toByteArray()
            val events = d.feed(bytes.copyOfRange(0, 1000)) + d.feed(bytes.copyOfRange(1000, bytes.size)) + d.finish()
            assertDeepToolCall(events)
        }
    }

    @Test
    fun `a replay delivers it and its hook events`() {
        val r = Agentstream.replay("claude", line.toByteArray())
        assertDeepToolCall(r.events)
        assertTrue(r.hooks.any { it is ToolStartedEvent }, "${r.hooks.map(HookEvent::type)}")
        assertTrue(r.hooks.toString().isNotEmpty())
    }

    @Test
    fun `a live run delivers it to listeners and to a stream`() = runBlocking {
        val dir = Repo.tempDir("agentstream-kotlin-deep")
        // A real run's first and last lines around the deep one.
        val real = File(Repo.golden, "claude/s2-bash.input.jsonl").readLines().filter { it.isNotBlank() }
        File(dir, "deep.input.jsonl").writeText(real.first() + "\n" + line + real.last() + "\n")
        val config = AgentConfig(
            type = "claude",
            bin = Repo.fakeHarness.path,
            env = mapOf("AGENTSTREAM_FAKE_TRACE" to File(dir, "deep").path),
        )
        val events = mutableListOf<OutputEvent>()
        val hooks = mutableListOf<HookEvent>()
        Evolve(config).use { evolve ->
            val failed = mutableListOf<String>()
            evolve.onListenerFailure = { failed += it.reason }
            evolve.onContent { events += it }
            val result = evolve.run(RunOptions(prompt = "deep", redact = false)) { hooks += it }
            // The core judges the trace (its tool call never completes); what matters here is
            // that the run was delivered to its end.
            assertEquals(RunState.FAILED, result.state, "${result.error}")
            assertEquals(0L, result.handlerErrors, "$failed")
            assertDeepToolCall(events, masked = false)
            assertTrue(hooks.any { it is ToolStartedEvent })
            evolve.off("content")
            evolve.sessionId = null
            val streamed = evolve.stream(RunOptions(prompt = "deep again")).toList()
            assertDeepToolCall(streamed.filterIsInstance<ContentEnvelope>().map { it.event })
        }
    }
}
