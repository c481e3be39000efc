package dev.agentstream.kotlin

import dev.agentstream.kotlin.ffi.BatchListener
import dev.agentstream.kotlin.ffi.ChannelListener
import dev.agentstream.kotlin.ffi.HookListener
import dev.agentstream.kotlin.ffi.ListenerException
import dev.agentstream.kotlin.ffi.ListenerFailed
import dev.agentstream.kotlin.types.Envelope
import dev.agentstream.kotlin.types.HookEvent
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

// Kotlin lambdas as the native layer's listener interfaces. Each reads the JSON it is handed
// into the generated types and calls the lambda; anything the lambda throws (an Error as well as
// an Exception: a failed assertion, a TODO()) is reported with its stack trace, and the core
// counts it on the run (never a crash, never an unwind through native code).
//
// Runs started by this layer use Dispatcher, one native call per batch: a JVM pays for every
// crossing through JNA (a few microseconds each), so calling across once per event would cost
// more than everything else a run does. The core still decides what goes where: each item
// arrives with the subscription ids of its listeners, in the order to call them.

internal class ChannelAdapter(private val listener: (Envelope) -> Unit) : ChannelListener {
    override fun onItem(envelopeJson: String) {
        try {
            listener(Envelope.fromJson(WireJson.parse(envelopeJson)))
        } catch (t: Throwable) {
            throw ListenerException.Failed(t.stackTraceToString())
        }
    }
}

internal class HookAdapter(private val listener: (HookEvent) -> Unit) : HookListener {
    override fun onHook(hookJson: String) {
        try {
            listener(HookEvent.fromJson(WireJson.parse(hookJson)))
        } catch (t: Throwable) {
            throw ListenerException.Failed(t.stackTraceToString())
        }
    }
}

/** Calls this layer's listener lambdas for a run's batches (see the file's header). */
internal class Dispatcher(
    private val listeners: Map<ULong, (Envelope) -> Unit>,
    private val onEvent: ((HookEvent) -> Unit)?,
) : BatchListener {
    override fun onBatch(batchJson: String): List<ListenerFailed> {
        var failed: MutableList<ListenerFailed>? = null
        for (entry in WireJson.parse(batchJson) as JsonArray) {
            val o = entry as JsonObject
            val item = o["item"]
            if (item != null) {
                val envelope = Envelope.fromJson(item)
                for (id in o["to"] as JsonArray) {
                    val handler = (id as JsonPrimitive).content.toULong()
                    val listener = listeners[handler] ?: continue
                    try {
                        listener(envelope)
                    } catch (t: Throwable) {
                        failed = (failed ?: mutableListOf()).apply {
                            add(ListenerFailed(handler, envelope.sequence.toULong(), t.stackTraceToString()))
                        }
                    }
                }
            } else {
                val hook = HookEvent.fromJson(o.getValue("hook"))
                try {
                    onEvent?.invoke(hook)
                } catch (t: Throwable) {
                    failed = (failed ?: mutableListOf()).apply {
                        add(ListenerFailed(0u, hook.sequence.toULong(), t.stackTraceToString()))
                    }
                }
            }
        }
        return failed ?: emptyList()
    }
}
