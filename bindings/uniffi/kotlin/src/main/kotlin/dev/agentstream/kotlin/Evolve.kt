package dev.agentstream.kotlin

import dev.agentstream.kotlin.ffi.AgentRun
import dev.agentstream.kotlin.types.ContentEnvelope
import dev.agentstream.kotlin.types.Envelope
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.LifecycleEnvelope
import dev.agentstream.kotlin.types.LifecycleEvent
import dev.agentstream.kotlin.types.OutputEvent
import dev.agentstream.kotlin.types.RunEvent
import dev.agentstream.kotlin.types.RunResult
import dev.agentstream.kotlin.types.StderrEnvelope
import dev.agentstream.kotlin.types.StdoutEnvelope
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import dev.agentstream.kotlin.ffi.Evolve as NativeEvolve

/**
 * One coding-agent CLI (the seed's `Evolve`): listeners of its four channels, runs (one at a
 * time), the harness conversation successive runs continue, and the controls.
 *
 * ```kotlin
 * Evolve(AgentConfig(type = "claude")).use { agent ->
 *     agent.onContent { event -> println(event.update) }
 *     val result = agent.run("list the files") { hook -> println(hook.type) }
 *     println(result.state)
 * }
 * ```
 *
 * Listeners are called in registration order, one delivery at a time, on the thread of the
 * coroutine that runs (or streams) the run. A listener that throws is counted in
 * [RunResult.handlerErrors] and the run goes on; the first failure of each listener is handed to
 * [onListenerFailure].
 *
 * @param config which harness and how to start it; an unknown `type` is an
 *     [AgentstreamException.InvalidArgument] listing the agents.
 */
public class Evolve(config: AgentConfig) : AutoCloseable {
    private val native = NativeEvolve(config)

    /** The listener lambdas by subscription id, called by [Router] as each batch names them. */
    private val listeners = ListenerTable()

    /**
     * Called with the first failure of each listener of a run (later failures of the same
     * listener are only counted). The default logs it, with the listener's stack trace, as a
     * warning of the `dev.agentstream.kotlin` system logger. One that throws does not stop the run
     * (the failure is logged as by the default).
     */
    @Volatile
    public var onListenerFailure: (ListenerFailure) -> Unit = ::logListenerFailure

    /** The harness's canonical name (`claude`, …). */
    public val agent: String get() = native.agent()

    /** Replace the configuration for the next runs (same `type`). */
    public fun configure(config: AgentConfig): Unit = native.configure(config)

    /**
     * Listen to channel [channel] (`content`, `lifecycle`, `stdout`, `stderr`; any other name is an
     * [AgentstreamException.InvalidArgument] listing the four) with the whole envelope. Close the
     * returned [Subscription] (or call [off]) to stop.
     */
    public fun on(channel: String, listener: (Envelope) -> Unit): Subscription {
        val id = listeners.add(listener) { native.on(channel, ChannelAdapter(listener)) }
        return Subscription(this, id)
    }

    internal fun remove(id: ULong) {
        native.offId(id)
        listeners.remove(id)
    }

    /** Listen to the content events (`OutputEvent`: text, tool calls, plans, usage, errors). */
    public fun onContent(listener: (OutputEvent) -> Unit): Subscription =
        on("content") { listener((it as ContentEnvelope).event) }

    /** Listen to the lifecycle events (sandbox and agent state transitions). */
    public fun onLifecycle(listener: (LifecycleEvent) -> Unit): Subscription =
        on("lifecycle") { listener((it as LifecycleEnvelope).event) }

    /** Listen to the harness's stdout, one line as printed per call. */
    public fun onStdout(listener: (String) -> Unit): Subscription =
        on("stdout") { listener((it as StdoutEnvelope).event) }

    /** Listen to the harness's stderr, text as received. */
    public fun onStderr(listener: (String) -> Unit): Subscription =
        on("stderr") { listener((it as StderrEnvelope).event) }

    /** Remove every listener of [channel]; returns how many there were. */
    public fun off(channel: String): Int = native.off(channel).onEach { listeners.remove(it) }.size

    /**
     * Run the harness with [options] and suspend until the run has ended; its listeners (and
     * [onEvent], the hook listener: `run.started`, `tool.started`, …) are called on this
     * coroutine's thread. A failed or cancelled run is a result ([RunResult.state]), not an
     * exception; exceptions are for runs that cannot start ([AgentstreamException.InvalidArgument]
     * naming the option, [AgentstreamException.HarnessNotFound], …).
     *
     * Cancelling the calling coroutine cancels the run: the harness's process group gets SIGTERM
     * (then SIGKILL after the grace period) and the run ends `run_interrupted`.
     *
     * @param cancel a token that cancels the run when flipped, from any thread.
     */
    public suspend fun run(
        options: RunOptions,
        cancel: CancelToken? = null,
        onEvent: ((HookEvent) -> Unit)? = null,
    ): RunResult {
        val hooks = options.hooks || onEvent != null
        val run = native.start(options.copy(hooks = hooks), null, cancel)
        return run.use { readToEnd(it, Router(listeners, onEvent)) }
    }

    /** [run] a prompt with every other option at its default. */
    public suspend fun run(prompt: String, onEvent: ((HookEvent) -> Unit)? = null): RunResult =
        run(RunOptions(prompt = prompt), onEvent = onEvent)

    private suspend fun readToEnd(run: AgentRun, router: Router): RunResult {
        try {
            val reader = RoutedReader(run)
            while (true) {
                // A reader slower than the run always finds a batch ready and never suspends:
                // without this check a cancelled coroutine (withTimeout, job.cancel()) would
                // read on to the run's end.
                currentCoroutineContext().ensureActive()
                val batch = reader.next() ?: break
                report(run, router.deliver(batch))
            }
            return RunResult.fromJson(WireJson.parse(run.waitJsonAsync()))
        } catch (e: CancellationException) {
            run.cancel("the coroutine running it was cancelled")
            throw e
        }
    }

    /**
     * Count [failed] on [run] and hand the first failure of each listener to [onListenerFailure].
     * A reporter that throws is logged instead: it must not stop the run.
     */
    private fun report(run: AgentRun, failed: List<ListenerFailure>) {
        if (failed.isEmpty()) return
        for (failure in run.reportFailures(failed)) {
            try {
                onListenerFailure(failure)
            } catch (e: CancellationException) {
                throw e
            } catch (e: Throwable) {
                runCatching { logListenerFailure(failure) }
            }
        }
    }

    /**
     * The run as a cold [Flow]: collecting it starts the run and emits everything it delivers, in
     * sequence order — every channel's [Envelope]s and, with `options.hooks`, the [HookEvent]s —
     * and completes after the terminal event. The registered listeners are called too.
     *
     * Cancelling the collector (or leaving early: `take`, `first`, an exception) cancels the run.
     */
    public fun stream(options: RunOptions): Flow<RunEvent> = flow {
        val run = native.start(options.copy(read = ReadMode.ITERATE), null, null)
        run.use {
            try {
                val reader = RoutedReader(it)
                val router = Router(listeners, null)
                val events = ArrayList<RunEvent>()
                while (true) {
                    val batch = reader.next() ?: break
                    events.clear()
                    report(it, router.deliver(batch, events))
                    for (event in events) emit(event)
                }
            } catch (e: Throwable) {
                if (!it.isEnded()) it.cancel("the stream's collector stopped: $e")
                throw e
            }
        }
    }

    /** [stream] a prompt, hook events included. */
    public fun stream(prompt: String, hooks: Boolean = true): Flow<RunEvent> =
        stream(RunOptions(prompt = prompt, hooks = hooks))

    /** Pause the active run (SIGSTOP). [AgentstreamException.NotRunning] when nothing runs. */
    public fun pause(): Unit = native.pause()

    /** Resume a paused run (SIGCONT). [AgentstreamException.NotRunning] when nothing runs. */
    public fun resume(): Unit = native.resume()

    /** Interrupt the active run (it ends `run_interrupted` with [reason]); whether one was. */
    public fun interrupt(reason: String = "interrupted"): Boolean = native.interrupt(reason)

    /** Kill the active run at once (SIGKILL); whether one was. */
    public fun kill(): Boolean = native.kill()

    /** The sandbox and agent state, the active run, the conversation the next run continues. */
    public fun status(): ClientStatus = native.status()

    /**
     * The harness session the next run continues (the one the last run reported); set it to
     * continue another, or to `null` to start a new conversation.
     */
    public var sessionId: String?
        get() = native.sessionId()
        set(value) = native.setSessionId(value)

    /** Release the native client (runs it started keep their own handles). */
    override fun close(): Unit = native.close()

    private companion object {
        private val logger: System.Logger = System.getLogger("dev.agentstream.kotlin")

        fun logListenerFailure(f: ListenerFailure) {
            logger.log(
                System.Logger.Level.WARNING,
                "agentstream: a ${f.channel} listener failed on delivery ${f.sequence} (later failures of " +
                    "it are only counted in the result's handlerErrors):\n${f.reason}",
            )
        }
    }
}

/** A listener registered with [Evolve.on]; [close] removes it. */
public class Subscription internal constructor(private val evolve: Evolve, public val id: ULong) : AutoCloseable {
    /** Remove the listener (a run in progress stops calling it from its next batch). */
    override fun close() {
        evolve.remove(id)
    }
}
