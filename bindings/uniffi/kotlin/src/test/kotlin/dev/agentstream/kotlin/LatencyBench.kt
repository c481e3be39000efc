package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.AgentMessageChunk
import dev.agentstream.kotlin.types.TextContent
import kotlinx.coroutines.runBlocking
import java.io.File

/**
 * The Kotlin handler of the latency benchmark (benches/latency/run.py, `make bench-latency`): one
 * run of the paced emitter (benches/latency/emitter.c) with an `onContent` listener, as a Kotlin
 * user writes it. The listener reads CLOCK_MONOTONIC first (`System.nanoTime()`: the JVM reads
 * CLOCK_MONOTONIC on Linux), then the stamps `@@<line>:<ns>;` in the event's text, and records
 * `now - stamp`. Not a test (it lives here to be compiled with the project).
 *
 *     LatencyBench EMITTER OUT_FILE     writes "<line> <latency ns>" per stamp; prints "state <state>"
 */
object LatencyBench {
    @JvmStatic
    fun main(args: Array<String>) {
        require(args.size == 2) { "usage: LatencyBench EMITTER OUT_FILE" }
        // One stamp per line the emitter prints (merged chunks keep every stamp).
        val capacity = (System.getenv("AGENTSTREAM_LATENCY_LINES") ?: "3000").toInt()
        val lines = LongArray(capacity)
        val latencies = LongArray(capacity)
        var n = 0
        val result = runBlocking {
            Evolve(AgentConfig(type = "claude", bin = args[0])).use { evolve ->
                evolve.onContent { event ->
                    val now = System.nanoTime()
                    val text = ((event.update as? AgentMessageChunk)?.content as? TextContent)?.text ?: return@onContent
                    var at = text.indexOf("@@")
                    while (at >= 0) {
                        val colon = text.indexOf(':', at)
                        val semi = text.indexOf(';', colon)
                        lines[n] = text.substring(at + 2, colon).toLong()
                        latencies[n++] = now - text.substring(colon + 1, semi).toLong()
                        at = text.indexOf("@@", semi)
                    }
                }
                evolve.run("latency")
            }
        }
        File(args[1]).bufferedWriter().use { w ->
            for (i in 0 until n) w.write("${lines[i]} ${latencies[i]}\n")
        }
        println("state ${result.state.toString().lowercase()}")
    }
}
