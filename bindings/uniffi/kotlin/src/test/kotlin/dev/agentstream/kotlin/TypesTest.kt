package dev.agentstream.kotlin

import dev.agentstream.kotlin.types.AgentMessageChunk
import dev.agentstream.kotlin.types.ErrorKind
import dev.agentstream.kotlin.types.ErrorTable
import dev.agentstream.kotlin.types.HookEvent
import dev.agentstream.kotlin.types.OtherHookEvent
import dev.agentstream.kotlin.types.OutputEvent
import dev.agentstream.kotlin.types.TextContent
import dev.agentstream.kotlin.types.ToolCallUpdate
import dev.agentstream.kotlin.types.WireFormatException
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The generated types' readers and writers on hand-made values (the golden tests cover the rest). */
class TypesTest {
    @Test
    fun `a union is read into its kind and written back`() {
        val json = """{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"""
        val e = OutputEvent.fromJson(Json.parseToJsonElement(json))
        assertEquals(AgentMessageChunk(TextContent(text = "hi")), e.update)
        assertEquals("s", e.sessionId)
        assertNull(e.model)
        assertJsonEquals(Json.parseToJsonElement(json), e.toJson())
    }

    @Test
    fun `a JSON null inside a harness record is kept, an absent key is null`() {
        val json = """{"sessionUpdate":"tool_call_update","toolCallId":"t","rawOutput":null}"""
        val u = ToolCallUpdate.fromJson(Json.parseToJsonElement(json))
        assertEquals(JsonNull, u.rawOutput)
        assertNull(u.title)
        assertJsonEquals(Json.parseToJsonElement(json), u.toJson())
    }

    @Test
    fun `a hook type this version does not declare is read as OtherHookEvent`() {
        val json = """{"type":"run.rewound","run_id":"r","agent_id":"a","timestamp":"t","status":"running","sequence":1,""" +
            """"details":{"operation":"run","previous_status":"completed"}}"""
        val h = HookEvent.fromJson(Json.parseToJsonElement(json))
        assertTrue(h is OtherHookEvent, "$h")
        assertEquals("run.rewound", h.type)
        assertJsonEquals(Json.parseToJsonElement(json), h.toJson())
    }

    @Test
    fun `a value of the wrong shape names the type and key`() {
        val e = assertThrows(WireFormatException::class.java) {
            OutputEvent.fromJson(Json.parseToJsonElement("""{"sessionId":5,"update":{}}"""))
        }
        assertEquals("OutputEvent.sessionId: expected a string, got the literal 5", e.message)
        val missing = assertThrows(WireFormatException::class.java) {
            OutputEvent.fromJson(Json.parseToJsonElement("""{"update":{"sessionUpdate":"nope"}}"""))
        }
        assertEquals("SessionUpdate: unknown sessionUpdate \"nope\"", missing.message)
    }

    @Test
    fun `unsigned counters above 2^63 survive the round trip`() {
        val json = """{"runId":"r","sequence":18446744073709551615,"channel":"stdout","event":"x"}"""
        val env = dev.agentstream.kotlin.types.Envelope.fromJson(Json.parseToJsonElement(json))
        assertEquals(-1L, env.sequence)
        assertJsonEquals(Json.parseToJsonElement(json), env.toJson())
    }

    @Test
    fun `the error table has every kind, and exceptions map to it`() {
        assertEquals(ErrorKind.entries.toSet(), ErrorTable.ROWS.map { it.kind }.toSet())
        assertEquals(1004, ErrorTable.of(ErrorKind.INVALID_ARGUMENT).code)
        assertEquals(ErrorKind.HARNESS_NOT_FOUND, ErrorTable.ofCode(1001)?.kind)
        val e = assertThrows(AgentstreamException::class.java) { Decoder("nope") }
        assertEquals(ErrorKind.INVALID_ARGUMENT, e.kind)
        assertEquals(ErrorTable.of(e.kind).code, e.code)
        assertEquals(7, Agentstream.agents.size)
        assertEquals(listOf("content", "lifecycle", "stdout", "stderr"), Agentstream.channels)
        assertTrue(Agentstream.version.isNotEmpty())
    }
}
