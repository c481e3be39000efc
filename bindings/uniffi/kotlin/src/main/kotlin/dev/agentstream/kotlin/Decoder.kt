package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.DecodeStats
import dev.agentstream.kotlin.types.Diagnostic
import dev.agentstream.kotlin.types.Envelope
import dev.agentstream.kotlin.types.ContentEnvelope
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.OutputEvent
import dev.agentstream.kotlin.types.RunOutcome
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import dev.agentstream.kotlin.ffi.Decoder as NativeDecoder

/**
 * The stateful decoder of one harness's output: bytes in any chunking in, [OutputEvent]s out.
 *
 * ```kotlin
 * Decoder("codex").use { d ->
 *     val events = d.feed(bytes) + d.finish()
 * }
 * ```
 *
 * @param agent `claude`, `codex`, `gemini`, `qwen`, `kimi`, `opencode` or `droid` (an unknown
 *     name is an [AgentstreamException.InvalidArgument] listing them).
 * @param maxLineBytes lines longer than this are skipped and reported (default 16 MiB).
 * @param redact false to deliver tool-call inputs as the harness printed them (default true:
 *     secret shapes are masked).
 */
public class Decoder @JvmOverloads constructor(
    agent: String,
    maxLineBytes: Long? = null,
    redact: Boolean = true,
) : AutoCloseable {
    private val native = NativeDecoder(agent, maxLineBytes, redact)

    /** Feed bytes; the events of every line they complete. */
    public fun feed(bytes: ByteArray): List<OutputEvent> = events(native.feed(bytes))

    /** Feed text (as UTF-8); the events of every line it completes. */
    public fun feed(text: String): List<OutputEvent> = events(native.feedText(text))

    /** End of input: decodes a last line without a newline and flushes held-back events. */
    public fun finish(): List<OutputEvent> = events(native.finish())

    /** Decode statistics so far. */
    public val stats: DecodeStats get() = DecodeStats.fromJson(WireJson.parse(native.statsJson()))

    /** Diagnostics since the last call (oversize lines, invalid UTF-8). */
    public fun takeDiagnostics(): List<Diagnostic> =
        (WireJson.parse(native.takeDiagnosticsJson()) as JsonArray).map(Diagnostic::fromJson)

    /** The harness session id, once seen. */
    public val sessionId: String? get() = native.sessionId()

    /** The agent this decoder reads (its canonical name). */
    public val agent: String get() = native.agent()

    /** True when bytes of an unfinished line are held. */
    public val hasPartialLine: Boolean get() = native.hasPartialLine()

    override fun close(): Unit = native.close()
}

/**
 * Everything a recorded output delivers when replayed through the whole pipeline (decoder, run
 * stream, terminal and hook derivation) without a process: see [Agentstream.replay].
 *
 * @property items the sequenced stream: `run_start`, each stdout line followed by its content
 *     events, the terminal lifecycle event last.
 * @property hooks the hook events derived from it, in order.
 * @property outcome how the run ended.
 * @property stats decode statistics.
 */
public data class Replay(
    val items: List<Envelope>,
    val hooks: List<HookEvent>,
    val outcome: RunOutcome,
    val stats: DecodeStats,
) {
    /** The content events of [items], in order. */
    val events: List<OutputEvent> get() = items.filterIsInstance<ContentEnvelope>().map { it.event }
}

/** Decoding without a process, and the names every binding shares. */
public object Agentstream {
    /**
     * Decode a whole recorded output of [agent] at once. Secret shapes in tool-call inputs are
     * masked unless [redact] is false.
     */
    @JvmStatic
    @JvmOverloads
    public fun parse(agent: String, bytes: ByteArray, redact: Boolean = true): List<OutputEvent> =
        events(dev.agentstream.kotlin.ffi.parseJson(agent, bytes, redact))

    /**
     * Replay a recorded output of [agent] as a live run would deliver it. Deterministic: run id
     * `replay` and timestamps at the epoch unless given. Secret shapes in tool-call inputs are
     * masked unless [redact] is false.
     */
    @JvmStatic
    @JvmOverloads
    public fun replay(
        agent: String,
        bytes: ByteArray,
        runId: String? = null,
        agentId: String? = null,
        timestamp: String? = null,
        redact: Boolean = true,
    ): Replay {
        val o =
            WireJson.parse(dev.agentstream.kotlin.ffi.replayJson(agent, bytes, runId, agentId, timestamp, redact)) as JsonObject
        return Replay(
            items = (o["items"] as JsonArray).map(Envelope::fromJson),
            hooks = (o["hooks"] as JsonArray).map(HookEvent::fromJson),
            outcome = RunOutcome.fromJson(o.getValue("outcome")),
            stats = DecodeStats.fromJson(o.getValue("stats")),
        )
    }

    /** Every agent name, in documentation order. */
    @JvmStatic
    public val agents: List<String> get() = dev.agentstream.kotlin.ffi.agentNames()

    /** The four channel names. */
    @JvmStatic
    public val channels: List<String> get() = dev.agentstream.kotlin.ffi.channelNames()

    /** The version of the core the native library was built from. */
    @JvmStatic
    public val version: String get() = dev.agentstream.kotlin.ffi.coreVersion()
}

internal fun events(json: String): List<OutputEvent> = (WireJson.parse(json) as JsonArray).map(OutputEvent::fromJson)
