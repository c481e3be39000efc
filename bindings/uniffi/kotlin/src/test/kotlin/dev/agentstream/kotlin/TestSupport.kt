package dev.agentstream.kotlin

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.fail
import java.io.File
import java.math.BigDecimal
import java.nio.file.Files

/** Where the tests find the repository, its golden fixtures and the fake harness. */
object Repo {
    val root: File = File(System.getProperty("agentstream.repo") ?: "../../..").canonicalFile
    val golden: File = File(root, "tests/golden")

    /** The fake harness (replays a golden trace as a real process); built by `make test-kotlin`. */
    val fakeHarness: File by lazy {
        val f = File(System.getProperty("agentstream.fakeHarness") ?: File(root, "target/release/fake-harness").path)
        check(f.canExecute()) { "no fake harness at $f: build it with `cargo build --release -p agentstream-cli --bins`" }
        f
    }

    /** A scratch directory, deleted with its contents when the test JVM exits. */
    fun tempDir(prefix: String): File = Files.createTempDirectory(prefix).toFile().also { dir ->
        Runtime.getRuntime().addShutdownHook(Thread { dir.deleteRecursively() })
    }
}

/** One golden case: `<agent>/<name>.input.jsonl` and its expected files. */
data class GoldenCase(val agent: String, val name: String) {
    private fun file(suffix: String) = File(Repo.golden, "$agent/$name$suffix")

    /** The trace prefix the fake harness plays. */
    val prefix: String get() = File(Repo.golden, "$agent/$name").path
    val input: ByteArray get() = file(".input.jsonl").readBytes()
    val expected: List<JsonElement> get() = jsonLines(file(".expected.jsonl"))
    val hooks: List<JsonElement> get() = jsonLines(file(".hooks.jsonl"))

    override fun toString() = "$agent/$name"

    companion object {
        fun all(): List<GoldenCase> {
            val cases = Repo.golden.listFiles { f -> f.isDirectory }.orEmpty().sortedBy { it.name }.flatMap { dir ->
                dir.listFiles { f -> f.name.endsWith(".input.jsonl") }.orEmpty().sortedBy { it.name }
                    .map { GoldenCase(dir.name, it.name.removeSuffix(".input.jsonl")) }
            }
            check(cases.isNotEmpty()) { "no golden cases under ${Repo.golden}" }
            return cases
        }
    }
}

fun jsonLines(f: File): List<JsonElement> =
    f.readLines().filter { it.isNotBlank() }.map { Json.parseToJsonElement(it) }

/**
 * JSON equality by meaning: objects by keys (order aside), numbers by value (`1` equals `1.0`),
 * everything else exactly. Fails with the path of the first difference.
 */
fun assertJsonEquals(expected: JsonElement, actual: JsonElement, path: String = "$") {
    when {
        expected is JsonObject && actual is JsonObject -> {
            assertEquals(expected.keys, actual.keys, "$path: keys")
            for ((k, v) in expected) assertJsonEquals(v, actual.getValue(k), "$path.$k")
        }
        expected is JsonArray && actual is JsonArray -> {
            assertEquals(expected.size, actual.size, "$path: length")
            expected.indices.forEach { assertJsonEquals(expected[it], actual[it], "$path[$it]") }
        }
        expected === JsonNull || actual === JsonNull -> assertEquals(expected, actual, path)
        expected is JsonPrimitive && actual is JsonPrimitive -> {
            assertEquals(expected.isString, actual.isString, "$path: string or not: $expected vs $actual")
            if (!expected.isString && expected.content !in setOf("true", "false")) {
                val e = BigDecimal(expected.content)
                val a = BigDecimal(actual.content)
                if (e.compareTo(a) != 0) fail<Unit>("$path: expected $e, got $a")
            } else {
                assertEquals(expected.content, actual.content, path)
            }
        }
        else -> fail("$path: expected $expected, got $actual")
    }
}

fun assertJsonListEquals(expected: List<JsonElement>, actual: List<JsonElement>, what: String) {
    assertEquals(expected.size, actual.size, "$what: count")
    expected.indices.forEach { assertJsonEquals(expected[it], actual[it], "$what[$it]") }
}

/** An Evolve whose harness is the fake harness playing [trace] (a golden prefix), with [env]. */
fun fakeConfig(agent: String, trace: String, env: Map<String, String> = emptyMap()): AgentConfig =
    AgentConfig(
        type = agent,
        bin = Repo.fakeHarness.path,
        env = mapOf("AGENTSTREAM_FAKE_TRACE" to File(Repo.golden, trace).path) + env,
    )

/** Live processes whose command line contains [marker] (a unique prompt). */
fun processesWith(marker: String): List<ProcessHandle> =
    ProcessHandle.allProcesses().filter { p ->
        p.info().arguments().map { args -> args.any { it.contains(marker) } }.orElse(false)
    }.toList()

/** Wait up to [seconds] for [condition]. */
fun eventually(seconds: Long = 15, what: String, condition: () -> Boolean) {
    val deadline = System.nanoTime() + seconds * 1_000_000_000
    while (!condition()) {
        if (System.nanoTime() > deadline) fail<Unit>("timed out waiting: $what")
        Thread.sleep(20)
    }
}
