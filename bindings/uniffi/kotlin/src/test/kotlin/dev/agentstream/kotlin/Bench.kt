package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.OutputEvent
import kotlinx.coroutines.runBlocking
import java.io.File

/**
 * Events/s delivered to a Kotlin listener, for bindings/uniffi/bench/run.sh (which runs the C
 * bench on the same corpus in the same run and prints the ratios). Not a test.
 *
 *     Bench <dir with <agent>/<name>.input.jsonl> <fake-harness> [seconds per decode mode]
 *
 * decode: `Decoder(agent).feed(64 KiB chunk)` for every trace, each typed `OutputEvent` handed
 * to a listener lambda (the C bench's `callback` mode: `agentstream_decoder_feed` with a C
 * callback). run: each agent's trace played by the fake harness as a real process, the content
 * events delivered to an `onContent` listener (the C bench's `run-callback`), best of 5 rounds,
 * with the buffer's marks raised so no text delta is merged.
 */
object Bench {
    private class Trace(val agent: String, val file: File, val data: ByteArray)

    /** What the listener does with an event: count it and look at its kind. */
    private class Sink {
        var events = 0L
        var check = 0
        fun take(e: OutputEvent) {
            events++
            check = check * 31 + e.update.sessionUpdate.length
        }
    }

    private fun decodePass(traces: List<Trace>, sink: Sink) {
        for (t in traces) {
            Decoder(t.agent).use { d ->
                var off = 0
                while (off < t.data.size) {
                    val n = minOf(65536, t.data.size - off)
                    d.feed(t.data.copyOfRange(off, off + n)).forEach(sink::take)
                    off += n
                }
                d.finish().forEach(sink::take)
            }
        }
    }

    private fun runRound(traces: List<Trace>, fake: String, sink: Sink) = runBlocking {
        for (t in traces) {
            val config = AgentConfig(
                type = t.agent,
                bin = fake,
                env = mapOf("AGENTSTREAM_FAKE_TRACE" to t.file.path.removeSuffix(".input.jsonl")),
            )
            Evolve(config).use { evolve ->
                evolve.onContent(sink::take)
                val limits = RunLimits(highWater = 1_000_000_000, byteBudget = 4_000_000_000, stallMs = 600_000)
                val result = evolve.run(RunOptions(prompt = "bench", limits = limits))
                if (result.pressure.coalesced != 0L) System.err.println("warning: text was merged: ${result.pressure}")
            }
        }
    }

    @JvmStatic
    fun main(args: Array<String>) {
        require(args.size >= 2) { "usage: Bench <trace dir> <fake-harness> [seconds]" }
        val seconds = args.getOrNull(2)?.toDouble() ?: 2.0
        val traces = File(args[0]).listFiles().orEmpty().filter { it.isDirectory }.sortedBy { it.name }.flatMap { dir ->
            dir.listFiles { f -> f.name.endsWith(".input.jsonl") }.orEmpty().sortedBy { it.name }
                .map { Trace(dir.name, it, it.readBytes()) }
        }
        require(traces.isNotEmpty()) { "no traces under ${args[0]}" }
        val bytes = traces.sumOf { it.data.size.toLong() }

        val sink = Sink()
        repeat(2) { decodePass(traces, sink) } // JIT warm-up
        var events = 0L
        var passes = 0
        val t0 = System.nanoTime()
        var t: Double
        do {
            val before = sink.events
            decodePass(traces, sink)
            events += sink.events - before
            passes++
            t = (System.nanoTime() - t0) / 1e9
        } while (t < seconds)
        println(
            "%-12s %10.0f event/s  %8.1f MB/s input  %7.0f ns/event  (%d passes, check %08x)".format(
                "kt-decode", events / t, bytes * passes / t / 1e6, t * 1e9 / events, passes, sink.check,
            ),
        )

        var best = Double.MAX_VALUE
        var perRound = 0L
        repeat(5) {
            val before = sink.events
            val r0 = System.nanoTime()
            runRound(traces, args[1], sink)
            best = minOf(best, (System.nanoTime() - r0) / 1e9)
            perRound = sink.events - before
        }
        println(
            "%-12s %10.0f event/s  %8.1f MB/s input  %7.0f ns/event  (%d events per round, best of 5: %.3f s)".format(
                "kt-run", perRound / best, bytes / best / 1e6, best * 1e9 / perRound, perRound, best,
            ),
        )
    }
}
