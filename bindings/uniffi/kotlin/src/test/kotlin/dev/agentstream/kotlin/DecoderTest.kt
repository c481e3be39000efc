package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.AgentMessageChunk
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The in-memory Decoder's members beyond the golden replay: text input, partial lines, the session id, diagnostics. */
class DecoderTest {
    @Test
    fun `text input decodes like bytes and a line without its newline waits`() {
        Decoder("claude").use { d ->
            val assistant = """{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"héllo"}]}}"""
            assertEquals(emptyList<Any>(), d.feed(assistant))
            assertTrue(d.hasPartialLine, "the line has no newline yet")
            val events = d.feed("\n")
            assertFalse(d.hasPartialLine)
            assertEquals(1, events.size)
            assertEquals("héllo", ((events[0].update as AgentMessageChunk).content as dev.agentstream.kotlin.types.TextContent).text)
        }
    }

    @Test
    fun `the session id is known once the output named it`() {
        Decoder("claude").use { d ->
            assertNull(d.sessionId)
            d.feed("""{"type":"system","subtype":"init","session_id":"S-1"}""" + "\n")
            assertEquals("S-1", d.sessionId)
        }
    }

    @Test
    fun `diagnostics say what was skipped and are taken once`() {
        Decoder("claude", 64).use { d ->
            assertEquals(emptyList<Any>(), d.takeDiagnostics())
            d.feed("""{"type":"assistant","pad":"${"x".repeat(100)}"}""" + "\n")
            val diagnostics = d.takeDiagnostics()
            assertEquals(1, diagnostics.size, "$diagnostics")
            assertEquals(1L, diagnostics[0].line)
            assertTrue(diagnostics[0].message.contains("maximum line length"), diagnostics[0].message)
            assertEquals(emptyList<Any>(), d.takeDiagnostics(), "taken")
        }
    }
}
