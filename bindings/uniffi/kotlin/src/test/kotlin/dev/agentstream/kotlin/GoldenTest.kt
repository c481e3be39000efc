package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.OutputEvent
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.DynamicTest.dynamicTest
import org.junit.jupiter.api.TestFactory
import kotlin.random.Random

/**
 * Every golden fixture (tests/golden/<agent>/<case>) through the Kotlin API: the content events
 * and the hook events, read into the generated types and written back, are exactly the
 * expected files — so the generated types lose nothing the core emits.
 */
class GoldenTest {
    private fun decodeInChunks(case: GoldenCase, sizes: () -> Int): List<OutputEvent> =
        Decoder(case.agent).use { d ->
            val data = case.input
            val out = mutableListOf<OutputEvent>()
            var pos = 0
            while (pos < data.size) {
                val n = sizes().coerceIn(1, data.size - pos)
                out += d.feed(data.copyOfRange(pos, pos + n))
                pos += n
            }
            out + d.finish()
        }

    private fun cases(test: (GoldenCase) -> Unit): List<DynamicTest> =
        GoldenCase.all().map { c -> dynamicTest(c.toString()) { test(c) } }

    @TestFactory
    fun `the decoder gives the expected events whole, byte by byte and in random chunks`() = cases { c ->
        val expected = c.expected
        val whole = decodeInChunks(c) { Int.MAX_VALUE }
        assertJsonListEquals(expected, whole.map { it.toJson() }, "whole")
        assertJsonListEquals(expected, decodeInChunks(c) { 1 }.map { it.toJson() }, "byte by byte")
        for (seed in 1..3) {
            val rng = Random(seed)
            assertJsonListEquals(expected, decodeInChunks(c) { rng.nextInt(1, 98) }.map { it.toJson() }, "seed $seed")
        }
        assertEquals(whole, Agentstream.parse(c.agent, c.input), "parse equals the decoder")
        // Reading the written form again gives an equal value.
        assertEquals(whole, whole.map { OutputEvent.fromJson(it.toJson()) })
    }

    @TestFactory
    fun `a replay gives the expected content and hook events`() = cases { c ->
        val r = Agentstream.replay(c.agent, c.input, runId = "golden")
        assertJsonListEquals(c.expected, r.events.map { it.toJson() }, "content")
        assertJsonListEquals(c.hooks, r.hooks.map { it.toJson() }, "hooks")
        assertEquals(r.hooks, r.hooks.map { HookEvent.fromJson(it.toJson()) })
        assertEquals(r.items.indices.map { it.toLong() }, r.items.map { it.sequence }, "one gapless sequence")
        assertEquals(c.input.size.toLong(), r.stats.bytes)
    }

    @TestFactory
    fun `a live run of the fake harness delivers the expected content to a listener`() = cases { c ->
        val got = mutableListOf<OutputEvent>()
        val result = Evolve(fakeConfig(c.agent, "${c.agent}/${c.name}")).use { evolve ->
            evolve.onContent { got += it }
            runBlocking { evolve.run("replay ${c.name}") }
        }
        assertJsonListEquals(c.expected, got.map { it.toJson() }, "content")
        assertEquals(0L, result.handlerErrors)
        assertTrue(result.lastSequence > 0)
    }
}
