package dev.agentstream.kotlin

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Test

class WireJsonTest {
    @Test
    fun `text within the bound is read as it is`() {
        val text = """{"a":[1,{"b":"[[[{{{\"]]]"}],"c":"\\"}"""
        assertSame(text, WireJson.bounded(text, 3))
        assertEquals(Json.parseToJsonElement(text), WireJson.parse(text))
    }

    @Test
    fun `a container past the bound becomes the marker holding its text`() {
        val text = """{"a":[{"b":[1,"]\"["]},2],"z":{"y":{}},"w":{}}"""
        val bounded = WireJson.bounded(text, 2)
        assertEquals(
            """{"a":[{"${'$'}rawJson":"{\"b\":[1,\"]\\\"[\"]}"},2],"z":{"y":{"${'$'}rawJson":"{}"}},"w":{}}""",
            bounded,
        )
        val inner = (Json.parseToJsonElement(bounded) as JsonObject)["a"].toString()
        assertEquals("""[{"${'$'}rawJson":"{\"b\":[1,\"]\\\"[\"]}"},2]""", inner)
        // The marker's text is the container, verbatim.
        val marker = Json.parseToJsonElement(bounded).let { (it as JsonObject)["a"] as kotlinx.serialization.json.JsonArray }[0]
        assertEquals("""{"b":[1,"]\"["]}""", (marker as JsonObject).getValue(WireJson.RAW_JSON_MARKER).jsonPrimitive.content)
    }

    @Test
    fun `every container past the bound is replaced, each once`() {
        val text = "[[[1]],[[2],[3]]]"
        assertEquals("""[[{"${'$'}rawJson":"[1]"}],[{"${'$'}rawJson":"[2]"},{"${'$'}rawJson":"[3]"}]]""", WireJson.bounded(text, 2))
    }
}
