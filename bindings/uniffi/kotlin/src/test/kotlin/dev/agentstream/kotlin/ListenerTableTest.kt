package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.Envelope
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Test
import kotlin.concurrent.thread

/** The listener table: a batch routed while a listener is being added finds it. */
class ListenerTableTest {
    @Test
    fun `a lookup during the native registration waits for the listener instead of missing it`() {
        val table = ListenerTable()
        val listener: (Envelope) -> Unit = {}
        var found: ((Envelope) -> Unit)? = null
        var router: Thread? = null
        val id = table.add(listener) {
            // The core knows id 7 now and routes a batch to it on another thread, before this
            // layer stored the lambda.
            router = thread { found = table[7u] }
            Thread.sleep(100)
            7u
        }
        router!!.join()
        assertSame(listener, found)
        assertSame(listener, table[id])
        table.remove(id)
        assertNull(table[id])
    }
}
