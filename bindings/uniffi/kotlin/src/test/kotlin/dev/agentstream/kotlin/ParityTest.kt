package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.HookEvent
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assertions.fail
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.DynamicTest.dynamicTest
import org.junit.jupiter.api.TestFactory
import java.io.File

/**
 * The API parity table (tests/parity/api.json, see its README) run against the Kotlin API: the
 * same cases every language's suite runs against its own (Rust: cli/tests/parity.rs).
 */
class ParityTest {
    private val table = Json.parseToJsonElement(File(Repo.root, "tests/parity/api.json").readText()).jsonObject

    @TestFactory
    fun `the parity table holds for Kotlin`(): List<DynamicTest> {
        val dir = Repo.tempDir("agentstream-kotlin-parity")
        return table.getValue("cases").jsonArray.mapIndexed { i, case ->
            val c = case.jsonObject
            val name = c.getValue("name").jsonPrimitive.content
            dynamicTest(name) {
                ParityCase(File(dir, "argv-$i.json")).use { pc ->
                    c["config"]?.let { pc.newClient(it.jsonObject, c["harness"]?.jsonPrimitive?.content) }
                    for (step in c.getValue("steps").jsonArray) pc.step(step.jsonObject, name)
                }
            }
        }
    }
}

private fun JsonObject.str(key: String): String? = (this[key] as? JsonPrimitive)?.takeIf { it.isString }?.content

private fun JsonElement.stringMap(): Map<String, String> = jsonObject.mapValues { it.value.jsonPrimitive.content }

private class ParityCase(private val argvFile: File) : AutoCloseable {
    private var evolve: Evolve? = null
    private var handlerCalls = 0

    private val client: Evolve get() = evolve ?: fail("the case built no client")

    fun newClient(config: JsonObject, harness: String?) {
        val known = setOf("type", "agent_id", "bin", "model", "extra_args", "cwd", "env")
        config.keys.firstOrNull { it !in known }?.let { fail<Unit>("a config key this runner does not know: $it") }
        var env = config["env"]?.stringMap().orEmpty()
        var bin = config.str("bin")
        if (harness != null) {
            bin = Repo.fakeHarness.path
            env = env + mapOf(
                "AGENTSTREAM_FAKE_TRACE" to File(Repo.golden, harness).path,
                "AGENTSTREAM_FAKE_ARGV_FILE" to argvFile.path,
            )
        }
        evolve?.close()
        evolve = Evolve(
            AgentConfig(
                type = config.str("type") ?: fail("a config without a type"),
                agentId = config.str("agent_id"),
                bin = bin,
                model = config.str("model"),
                extraArgs = config["extra_args"]?.jsonArray?.map { it.jsonPrimitive.content }.orEmpty(),
                cwd = config.str("cwd"),
                env = env,
            ),
        ).also { it.onListenerFailure = {} }
    }

    private fun options(request: JsonObject, hooks: Boolean): RunOptions {
        val known = setOf("prompt", "timeout_ms", "model", "cwd", "env", "resume")
        request.keys.firstOrNull { it !in known }?.let { fail<Unit>("a request key this runner does not know: $it") }
        return RunOptions(
            prompt = request.str("prompt"),
            timeoutMs = request["timeout_ms"]?.jsonPrimitive?.long,
            model = request.str("model"),
            cwd = request.str("cwd"),
            env = request["env"]?.stringMap().orEmpty(),
            resume = request.str("resume"),
            hooks = hooks,
        )
    }

    private fun run(step: JsonObject): JsonElement {
        val onEvent = step["on_event"]?.jsonPrimitive?.boolean ?: false
        val hooks = mutableListOf<HookEvent>()
        val options = options(step["request"]?.jsonObject ?: JsonObject(emptyMap()), onEvent)
        val result = runBlocking { client.run(options, onEvent = if (onEvent) { h -> hooks += h } else null) }
        step.str("hooks_first")?.let { assertEquals(it, hooks.firstOrNull()?.type, "hooks: ${hooks.map { h -> h.type }}") }
        return result.toJson()
    }

    private fun statusJson(): JsonElement {
        val s = client.status()
        fun str(v: String?): JsonElement = v?.let(::JsonPrimitive) ?: JsonNull
        return JsonObject(
            mapOf(
                "agent" to JsonPrimitive(s.agent),
                "sandbox" to JsonPrimitive(s.sandbox),
                "agent_state" to JsonPrimitive(s.agentState),
                "has_run" to JsonPrimitive(s.hasRun),
                "active_run_id" to str(s.activeRunId),
                "session_id" to str(s.sessionId),
                "last_status" to str(s.lastStatus),
            ),
        )
    }

    fun step(step: JsonObject, case: String) {
        val call = step.str("call") ?: fail("a step without a call")
        val what = "$case / $call"
        val callsBefore = handlerCalls
        val got: Result<JsonElement> = runCatching {
            when (call) {
                "new" -> {
                    newClient(step.getValue("config").jsonObject, null)
                    JsonNull
                }
                "on" -> {
                    val throwing = step.str("handler") == "throw"
                    client.on(step.str("channel").orEmpty()) {
                        handlerCalls++
                        if (throwing) throw IllegalStateException("a throwing handler")
                    }
                    JsonNull
                }
                "off" -> client.off(step.str("channel").orEmpty()).let { JsonNull }
                "run" -> run(step)
                "status" -> statusJson()
                "get_session" -> client.sessionId?.let(::JsonPrimitive) ?: JsonNull
                "set_session" -> {
                    client.sessionId = step.str("session_id")
                    JsonNull
                }
                "interrupt" -> JsonPrimitive(client.interrupt("parity"))
                "kill" -> JsonPrimitive(client.kill())
                "pause" -> client.pause().let { JsonNull }
                "resume" -> client.resume().let { JsonNull }
                "argv" -> Json.parseToJsonElement(argvFile.readText())
                else -> fail("$what: the parity table names a call this runner does not know: $call")
            }
        }
        val error = step.str("error")
        val value = when {
            error != null -> {
                val e = got.exceptionOrNull() ?: fail("$what: expected a $error error, got ${got.getOrNull()}")
                if (e !is AgentstreamException) throw e
                assertEquals(error, e.kind.wire, "$what: ${e.message}")
                for (needle in step["message_has"]?.jsonArray.orEmpty()) {
                    val n = needle.jsonPrimitive.content
                    assertTrue(e.message!!.contains(n), "$what: \"$n\" not in ${e.message}")
                }
                return
            }
            else -> got.getOrThrow()
        }
        step["returns"]?.let { assertMatches(it, value, what) }
        step["handler_calls_at_least"]?.jsonPrimitive?.long?.let {
            assertTrue(handlerCalls - callsBefore >= it, "$what: ${handlerCalls - callsBefore} handler calls")
        }
        step["handler_errors_at_least"]?.jsonPrimitive?.long?.let {
            assertTrue(value.jsonObject.getValue("handler_errors").jsonPrimitive.long >= it, "$what: $value")
        }
        val argv = if (call == "argv") value.jsonArray.map { it.jsonPrimitive.content } else emptyList()
        step["argv_has"]?.jsonArray?.map { it.jsonPrimitive.content }?.let { has ->
            // `--opt value` in the table also matches the joined `--opt=value` a harness gets.
            val joined = listOf("${has[0]}=${has.drop(1).joinToString(" ")}")
            val contains = { needle: List<String> -> argv.windowed(needle.size).any { it == needle } }
            assertTrue(contains(has) || (has.size == 2 && contains(joined)), "$what: $has not in $argv")
        }
        for (lack in step["argv_lacks"]?.jsonArray.orEmpty()) {
            val l = lack.jsonPrimitive.content
            assertTrue(argv.none { it == l || it.startsWith("$l=") }, "$what: $l in $argv")
        }
    }

    /** Every key of [expected] matches in [got] (`null`: absent or null). */
    private fun assertMatches(expected: JsonElement, got: JsonElement?, what: String) {
        when (expected) {
            is JsonObject -> for ((k, v) in expected) assertMatches(v, (got as? JsonObject)?.get(k), "$what.$k")
            JsonNull -> assertTrue(got == null || got === JsonNull, "$what: expected null, got $got")
            else -> assertJsonEquals(expected, got ?: JsonNull, what)
        }
    }

    override fun close() {
        evolve?.close()
    }
}

private fun JsonArray?.orEmpty(): List<JsonElement> = this ?: emptyList()
