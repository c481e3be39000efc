package dev.agentstream.kotlin

import com.sun.jna.Library
import com.sun.jna.Native
import com.sun.jna.NativeLibrary
import dev.agentstream.kotlin.ffi.AgentRun
import dev.agentstream.kotlin.ffi.AgentstreamException as NativeError
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.serialization.json.JsonArray
import java.nio.ByteBuffer
import java.nio.ByteOrder
import java.util.concurrent.Executor
import java.util.concurrent.Executors
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

/**
 * Reads one run's routed batches through `agentstream_uniffi_run_pull_routed`, the native
 * library's plain C function beside the uniffi ones (bindings/uniffi/src/routed.rs).
 *
 * Why not uniffi's own `dispatchAsync`: through JNA every uniffi call allocates native memory for
 * its call status and buffers, each registered with JNA's cleaner, and an async call is woken from
 * a library thread JNA attaches for the purpose. At 1,000 deliveries a second that garbage made
 * the collector pause for milliseconds several times a second. This function takes numbers and a
 * direct buffer, which JNA's direct mapping passes as they are: a pull allocates nothing native.
 *
 * What is ready is taken on the reading coroutine's thread. A wait happens on a daemon thread of
 * this layer's own (`agentstream-pull`, a JVM thread: nothing to attach; not `Dispatchers.IO`,
 * whose idle workers spin: on two cores that measured a longer latency tail), and the
 * coroutine resumes with the batch and calls the listeners on its own thread. Cancelling that
 * coroutine resumes it at once with the cancellation; the caller then cancels the run, which ends
 * the pull still waiting.
 */
internal class RoutedReader(private val run: AgentRun) {
    private val reader: Long = run.routedReader().toLong()

    /** Where batches are written; replaced by a larger one when a batch does not fit. */
    private var buffer: ByteBuffer = ByteBuffer.allocateDirect(INITIAL_CAPACITY).order(ByteOrder.LITTLE_ENDIAN)

    /**
     * The next batch (a JSON array of `{"item", "to"}` and `{"hook"}`), or null at the end. What
     * is ready is taken on this thread; only a wait goes to a pull thread.
     */
    suspend fun next(): JsonArray? {
        while (true) {
            val ready = pullBlocking(0)
            val batch = if (ready === TIMED_OUT) waitOnPullThread() else ready
            if (batch === TIMED_OUT) continue
            return batch?.let { WireJson.parse(String(it, Charsets.UTF_8)) as JsonArray }
        }
    }

    private suspend fun waitOnPullThread(): ByteArray? = suspendCancellableCoroutine { continuation ->
        PULL_THREADS.execute {
            try {
                continuation.resume(pullBlocking(WAIT_MS))
            } catch (t: Throwable) {
                continuation.resumeWithException(t)
            }
        }
    }

    /** One pull waiting up to [waitMs]: the batch's bytes, [TIMED_OUT], or null at the end. */
    private fun pullBlocking(waitMs: Long): ByteArray? {
        while (true) {
            val n = RoutedPull.agentstream_uniffi_run_pull_routed(reader, waitMs, buffer, buffer.capacity().toLong())
            when {
                n >= 0 -> return ByteArray(n.toInt()).also { buffer.get(0, it) }
                n == RoutedPull.TIMEOUT -> return TIMED_OUT
                n == RoutedPull.END -> return null
                n == RoutedPull.TOO_SMALL -> {
                    val needed = buffer.getLong(0)
                    if (needed !in 1..MAX_CAPACITY) {
                        throw NativeError.Internal("run ${run.id()}: a batch of $needed bytes is more than a buffer holds")
                    }
                    val capacity = maxOf(needed, minOf(buffer.capacity() * 2L, MAX_CAPACITY)).toInt()
                    buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN)
                }
                n == RoutedPull.PANIC -> throw RoutedPull.panic(buffer, run.id())
                else -> throw RoutedPull.error(n, run.id())
            }
        }
    }

    private companion object {
        const val INITIAL_CAPACITY = 64 * 1024
        const val MAX_CAPACITY = Int.MAX_VALUE.toLong() - 8

        /** How long one pull waits before the reading coroutine looks again. */
        const val WAIT_MS = 1_000L

        val TIMED_OUT = ByteArray(0)

        /** Threads that wait for runs' next batches (one per waiting run; idle ones end after 60 s). */
        val PULL_THREADS: Executor = Executors.newCachedThreadPool { task ->
            Thread(task, "agentstream-pull").apply { isDaemon = true }
        }
    }
}

/** The direct JNA mapping of `agentstream_uniffi_run_pull_routed` and its return codes. */
@Suppress("FunctionName")
internal object RoutedPull {
    const val TIMEOUT = -1L
    const val END = -2L
    const val TOO_SMALL = -3L
    const val BUSY = -4L
    const val UNKNOWN_READER = -5L
    const val BAD_ARGUMENT = -6L
    const val PANIC = -7L

    init {
        // The library instance the generated code registered (same name, same class loader):
        // a second copy extracted from the jar would hold a second, empty table of readers.
        val name = System.getProperty("uniffi.component.agentstream.libraryOverride") ?: "agentstream_uniffi"
        val library = NativeLibrary.getInstance(name, mapOf(Library.OPTION_CLASSLOADER to RoutedPull::class.java.classLoader))
        Native.register(RoutedPull::class.java, library)
    }

    /** See routed.rs: a batch's length (≥ 2) or one of the codes above. */
    external fun agentstream_uniffi_run_pull_routed(reader: Long, timeoutMs: Long, dst: ByteBuffer, capacity: Long): Long

    /** The panic a pull of run [runId] caught, with the message the library left in [buffer]. */
    fun panic(buffer: ByteBuffer, runId: String): AgentstreamException {
        val length = buffer.getLong(0)
        val message = if (length in 0..(buffer.capacity() - 8).toLong()) {
            ByteArray(length.toInt()).also { buffer.get(8, it) }.toString(Charsets.UTF_8)
        } else {
            "its message could not be read"
        }
        return NativeError.Panic("the native library panicked reading run $runId: $message (a bug in agentstream: please report it)")
    }

    /** The error a failed pull of run [runId] is, by its [code] (not [PANIC]: see [panic]). */
    fun error(code: Long, runId: String): AgentstreamException = when (code) {
        BUSY -> NativeError.Busy("run $runId is already being read by another call: read it from one place")
        UNKNOWN_READER -> NativeError.InvalidHandle("run $runId is closed: its deliveries can no longer be read")
        BAD_ARGUMENT -> NativeError.Internal("the batch buffer was refused (a bug in agentstream: please report it)")
        else -> NativeError.Internal("an unknown result $code reading run $runId (is the native library newer than this jar?)")
    }
}
