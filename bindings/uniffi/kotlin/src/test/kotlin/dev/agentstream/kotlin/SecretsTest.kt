package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.ContentEnvelope
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.LifecycleEnvelope
import dev.agentstream.kotlin.types.OutputEvent
import dev.agentstream.kotlin.types.RunState
import dev.agentstream.kotlin.types.StderrEnvelope
import dev.agentstream.kotlin.types.StdoutEnvelope
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import java.io.File

/**
 * The secret-shape corpus (tests/secrets/corpus.jsonl, issue 24 item 4) through every output path
 * of the Kotlin package: [Agentstream.parse], a [Decoder] fed in small pieces, [Agentstream.replay]
 * (events, items and hooks) and a real run of each harness's secret trace (tests/secrets/traces/):
 * content and lifecycle listeners, hook events, the result, the stream. The raw stdout/stderr
 * channels carry the process's bytes verbatim by design and are not checked. A run with
 * `redact = false` delivers every secret, so the fixtures do reach the masked fields.
 */
@Timeout(180)
class SecretsTest {
    private val agents = listOf("claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid")
    private val dir = File(Repo.root, "tests/secrets")

    private val secrets: List<String> by lazy {
        File(dir, "corpus.jsonl").readLines().filter { it.isNotBlank() }.flatMap { line ->
            Json.parseToJsonElement(line).jsonObject.getValue("secrets").jsonArray.map { it.jsonPrimitive.content }
        }.also { assertTrue(it.size >= 24, "corpus: ${it.size} secrets") }
    }

    /** The secrets found in [value] printed (strings as they are, JSON trees JSON-escaped). */
    private fun survivors(value: Any?): List<String> {
        val text = value.toString()
        return secrets.filter { s ->
            val escaped = JsonPrimitive(s).toString().let { it.substring(1, it.length - 1) }
            s in text || escaped in text
        }
    }

    private fun trace(agent: String): ByteArray = File(dir, "traces/$agent.input.jsonl").readBytes()

    @Test
    fun `every secret is masked by parse, the decoder and replay`() {
        for (agent in agents) {
            val data = trace(agent)
            assertEquals(emptyList<String>(), survivors(Agentstream.parse(agent, data)), "$agent: parse")
            val fed = mutableListOf<OutputEvent>()
            Decoder(agent).use { d ->
                for (at in data.indices step 97) fed += d.feed(data.copyOfRange(at, minOf(at + 97, data.size)))
                fed += d.finish()
            }
            assertEquals(emptyList<String>(), survivors(fed), "$agent: a Decoder fed in pieces")
            val r = Agentstream.replay(agent, data)
            assertEquals(emptyList<String>(), survivors(r.events), "$agent: replay events")
            val items = r.items.filter { it is ContentEnvelope || it is LifecycleEnvelope }
            assertEquals(emptyList<String>(), survivors(items), "$agent: replay items")
            assertEquals(emptyList<String>(), survivors(r.hooks), "$agent: replay hooks")
        }
    }

    @Test
    fun `parse, the decoder and replay deliver tool inputs as printed with redaction off`() {
        for (agent in agents) {
            val data = trace(agent)
            val parsed = survivors(Agentstream.parse(agent, data, redact = false))
            assertTrue(parsed.isNotEmpty(), "$agent: parse with redact = false delivers the secrets")
            val fed = Decoder(agent, redact = false).use { d -> d.feed(data) + d.finish() }
            assertEquals(parsed, survivors(fed), "$agent: a Decoder with redact = false")
            assertEquals(parsed, survivors(Agentstream.replay(agent, data, redact = false).events), "$agent: replay")
            assertEquals(emptyList<String>(), survivors(Agentstream.parse(agent, data, redact = true)), "$agent: redact = true")
        }
    }

    @Test
    fun `every secret is masked in a real run and delivered with redaction off`() = runBlocking {
        for (agent in agents) {
            for (redact in listOf(true, false)) {
                val config = AgentConfig(
                    type = agent,
                    bin = Repo.fakeHarness.path,
                    env = mapOf("AGENTSTREAM_FAKE_TRACE" to File(dir, "traces/$agent").path),
                )
                val seen = java.util.Collections.synchronizedList(mutableListOf<Any?>())
                val failed = java.util.Collections.synchronizedList(mutableListOf<String>())
                Evolve(config).use { evolve ->
                    evolve.onListenerFailure = { failed += it.reason }
                    evolve.onContent { seen.add(it) }
                    evolve.onLifecycle { seen.add(it) }
                    val result = evolve.run(RunOptions(prompt = "x", redact = redact)) { hook: HookEvent -> seen.add(hook) }
                    assertEquals(RunState.COMPLETED, result.state, "$agent: ${result.error}")
                    seen.add(result)
                    evolve.sessionId = null // a fresh run, not a resumed one
                    val streamed = evolve.stream(RunOptions(prompt = "x", redact = redact, hooks = true)).toList()
                    seen.addAll(streamed.filter { it !is StdoutEnvelope && it !is StderrEnvelope })
                }
                assertEquals(emptyList<String>(), failed.toList(), "$agent: a listener failed")
                val found = survivors(seen.toList())
                if (redact) {
                    assertEquals(emptyList<String>(), found, "$agent: a run leaks")
                } else {
                    assertEquals(secrets.size, found.size, "$agent: with redaction off every secret comes through")
                }
            }
        }
    }
}
