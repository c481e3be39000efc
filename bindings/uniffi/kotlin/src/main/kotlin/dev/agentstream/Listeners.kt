package dev.agentstream

import dev.agentstream.ffi.ChannelListener
import dev.agentstream.ffi.HookListener
import dev.agentstream.ffi.ListenerException
import dev.agentstream.types.Envelope
import dev.agentstream.types.HookEvent

// Kotlin lambdas as the native layer's listener interfaces. Each reads the JSON it is handed
// into the generated types and calls the lambda; anything the lambda throws (an Error as well as
// an Exception: a failed assertion, a TODO()) becomes ListenerException.Failed carrying its stack
// trace, which the core counts on the run (never a crash, never an unwind through native code).

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
