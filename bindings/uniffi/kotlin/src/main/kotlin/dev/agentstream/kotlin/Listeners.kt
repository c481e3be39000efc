package dev.agentstream.kotlin

import dev.agentstream.kotlin.ffi.ChannelListener
import dev.agentstream.kotlin.ffi.HookListener
import dev.agentstream.kotlin.ffi.ListenerException
import dev.agentstream.kotlin.types.Envelope
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.RunEvent
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

// Kotlin lambdas as the native layer's listener interfaces. Each reads the JSON it is handed
// into the generated types and calls the lambda; anything the lambda throws (an Error as well as
// an Exception: a failed assertion, a TODO()) is reported with its stack trace, and the core
// counts it on the run (never a crash, never an unwind through native code).
//
// Runs started by this layer are read with RoutedReader and delivered by Router, which calls
// this layer's lambdas: the core still decides what goes where (each item arrives with the
// subscription ids of its listeners, in the order to call them), and counts the failures.

/**
 * What [t] threw, with its stack trace, or its class name when reading that throws (a `message`
 * that fails): reporting a listener's failure must never be what stops the run.
 */
internal fun describe(t: Throwable): String =
    try {
        t.stackTraceToString()
    } catch (unreadable: Throwable) {
        "${t.javaClass.name} (its message could not be read: ${unreadable.javaClass.name})"
    }

internal class ChannelAdapter(private val listener: (Envelope) -> Unit) : ChannelListener {
    override fun onItem(envelopeJson: String) {
        try {
            listener(Envelope.fromJson(WireJson.parse(envelopeJson)))
        } catch (t: Throwable) {
            throw ListenerException.Failed(describe(t))
        }
    }
}

internal class HookAdapter(private val listener: (HookEvent) -> Unit) : HookListener {
    override fun onHook(hookJson: String) {
        try {
            listener(HookEvent.fromJson(WireJson.parse(hookJson)))
        } catch (t: Throwable) {
            throw ListenerException.Failed(describe(t))
        }
    }
}

/**
 * The listener lambdas of one [Evolve] by subscription id. A listener is registered natively
 * first (that gives its id) and stored here next: [add] holds a lock across both, and a lookup
 * that misses takes it too, so a batch routed in between waits for the new listener instead of
 * skipping it. A lookup that finds its listener (every one but that) takes no lock.
 */
internal class ListenerTable {
    private val byId = java.util.concurrent.ConcurrentHashMap<ULong, (Envelope) -> Unit>()
    private val adding = Any()

    /** Registers natively ([register] returns the subscription id), then stores [listener]. */
    fun add(listener: (Envelope) -> Unit, register: () -> ULong): ULong =
        synchronized(adding) {
            val id = register()
            byId[id] = listener
            id
        }

    fun remove(id: ULong) {
        byId.remove(id)
    }

    operator fun get(id: ULong): ((Envelope) -> Unit)? = byId[id] ?: synchronized(adding) { byId[id] }
}

/** Calls this layer's listener lambdas for a run's routed batches (see the file's header). */
internal class Router(
    private val listeners: ListenerTable,
    private val onEvent: ((HookEvent) -> Unit)?,
) {
    /**
     * Call the listeners [batch] names, in order, and [onEvent] for its hook events; every
     * delivery is also appended to [into] when given (a stream's events). Returns the calls that
     * failed.
     */
    fun deliver(batch: JsonArray, into: MutableList<RunEvent>? = null): List<ListenerFailure> {
        var failed: MutableList<ListenerFailure>? = null
        for (entry in batch) {
            val o = entry as JsonObject
            val item = o["item"]
            val event: RunEvent
            if (item != null) {
                val envelope = Envelope.fromJson(item)
                event = envelope
                for (id in o["to"] as JsonArray) {
                    val handler = (id as JsonPrimitive).content.toULong()
                    val listener = listeners[handler] ?: continue
                    try {
                        listener(envelope)
                    } catch (t: Throwable) {
                        failed = (failed ?: mutableListOf()).apply {
                            add(ListenerFailure(handler, envelope.channel.wire, envelope.sequence.toULong(), describe(t)))
                        }
                    }
                }
            } else {
                val hook = HookEvent.fromJson(o["hook"] ?: error("a delivery is {\"item\": …} or {\"hook\": …}, got $o"))
                event = hook
                try {
                    onEvent?.invoke(hook)
                } catch (t: Throwable) {
                    failed = (failed ?: mutableListOf()).apply {
                        add(ListenerFailure(0u, "on_event", hook.sequence.toULong(), describe(t)))
                    }
                }
            }
            into?.add(event)
        }
        return failed ?: emptyList()
    }
}
