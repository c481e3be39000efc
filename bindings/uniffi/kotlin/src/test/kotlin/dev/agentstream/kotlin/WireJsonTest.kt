package dev.agentstream.kotlin

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import kotlin.random.Random

class WireJsonTest {
    @Test
    fun `text within the bound is read as kotlinx reads it`() {
        val text = """ {"a":[1,{"b":"[[[{{{\"]]]"}],"c":"\\", "d" : [ ] ,"e":{ },"f":-0.5e+3,"g":true,"h":null} """
        assertEquals(Json.parseToJsonElement(text), WireJson.parse(text, 3))
        assertEquals(Json.parseToJsonElement(text).toString(), WireJson.parse(text, 3).toString())
    }

    @Test
    fun `a container past the bound becomes the marker holding its text`() {
        val text = """{"a":[{"b":[1,"]\"["]},2],"z":{"y":{}},"w":{}}"""
        val tree = WireJson.parse(text, 2)
        assertEquals(
            """{"a":[{"${'$'}rawJson":"{\"b\":[1,\"]\\\"[\"]}"},2],"z":{"y":{"${'$'}rawJson":"{}"}},"w":{}}""",
            tree.toString(),
        )
        // The marker's text is the container, verbatim.
        val marker = ((tree as JsonObject)["a"] as JsonArray)[0]
        assertEquals("""{"b":[1,"]\"["]}""", (marker as JsonObject).getValue(WireJson.RAW_JSON_MARKER).jsonPrimitive.content)
    }

    @Test
    fun `every container past the bound is replaced, each once`() {
        val text = "[[[1]],[[2],[3]]]"
        assertEquals("""[[{"${'$'}rawJson":"[1]"}],[{"${'$'}rawJson":"[2]"},{"${'$'}rawJson":"[3]"}]]""", WireJson.parse(text, 2).toString())
    }

    @Test
    fun `a container a million levels deep is read without recursing into it`() {
        val depth = 1_000_000
        val text = "{\"x\":" + "[".repeat(depth) + "]".repeat(depth) + "}"
        var cur = WireJson.parse(text)
        var levels = 0
        while (cur is JsonObject && WireJson.RAW_JSON_MARKER !in cur || cur is JsonArray) {
            cur = if (cur is JsonObject) cur.getValue("x") else (cur as JsonArray)[0]
            levels++
        }
        assertEquals(WireJson.MAX_DEPTH, levels)
        val raw = (cur as JsonObject).getValue(WireJson.RAW_JSON_MARKER).jsonPrimitive.content
        assertEquals(2 * (depth - WireJson.MAX_DEPTH + 1), raw.length)
    }

    @Test
    fun `escapes, lone surrogates, numbers and duplicate keys are kept as kotlinx keeps them`() {
        for (text in listOf(
            """"\ud800 \udc00x \ud83d\ude00 \u00e9 \/ \b\f\n\r\t \" \\"""",
            """{"k":1,"j":2,"k":3}""",
            """[0,-0,12345678901234567890123,1.0,1E400,-1e-400,2.50,1e+2]""",
            """"é😀 plain"""",
            "[\n\t\r ]",
        )) {
            assertEquals(Json.parseToJsonElement(text), WireJson.parse(text), text)
            assertEquals(Json.parseToJsonElement(text).toString(), WireJson.parse(text).toString(), text)
        }
        val numbers = WireJson.parse("[1E400,10]") as JsonArray
        assertEquals("1E400", numbers[0].jsonPrimitive.content)
        assertEquals(false, numbers[0].jsonPrimitive.isString)
        assertEquals(10L, numbers[1].jsonPrimitive.content.toLong())
    }

    @Test
    fun `random JSON values read as kotlinx reads them`() {
        val random = Random(20261205)
        repeat(3_000) {
            val text = randomJson(random, 0)
            assertEquals(Json.parseToJsonElement(text), WireJson.parse(text), text)
        }
    }

    @Test
    fun `text that is not JSON is refused with where`() {
        for (text in listOf("", "{", "[1,]", "{\"a\" 1}", "\"abc", "01", "1.", "-", "tru", "{} x", "\"\\x\"", "\"\\u12\"", "[1 2]")) {
            val e = assertThrows<WireJsonException>(text) { WireJson.parse(text) }
            assertTrue(e.message!!.contains("offset"), e.message)
        }
    }

    private fun randomJson(random: Random, depth: Int): String {
        val space = { listOf("", " ", "\n", "\t ", "\r\n")[random.nextInt(5)] }
        return space() + when (if (depth > 6) random.nextInt(4) else random.nextInt(6)) {
            0 -> listOf("true", "false", "null")[random.nextInt(3)]
            1 -> randomNumber(random)
            2, 3 -> JsonPrimitive(randomString(random)).toString().let { quoted ->
                // Now and then an escape kotlinx would not write itself.
                if (random.nextInt(4) == 0) "\"\\u0061" + quoted.substring(1).replaceFirst("/", "\\/") else quoted
            }
            4 -> (0 until random.nextInt(4)).joinToString(",", "[", space() + "]") { randomJson(random, depth + 1) }
            else -> (0 until random.nextInt(4)).joinToString(",", "{", space() + "}") {
                JsonPrimitive(listOf("a", "b", "k${random.nextInt(3)}", "\u00e9")[random.nextInt(4)]).toString() +
                    space() + ":" + randomJson(random, depth + 1)
            }
        } + space()
    }

    private fun randomNumber(random: Random): String {
        val sign = if (random.nextBoolean()) "-" else ""
        val int = if (random.nextInt(4) == 0) "0" else (1..random.nextInt(1, 25)).joinToString("") { (if (it == 1) random.nextInt(1, 10) else random.nextInt(10)).toString() }
        val fraction = if (random.nextInt(3) == 0) "." + random.nextInt(0, 100000) else ""
        val exponent = if (random.nextInt(4) == 0) listOf("e", "E")[random.nextInt(2)] + listOf("", "+", "-")[random.nextInt(3)] + random.nextInt(400) else ""
        return sign + int + fraction + exponent
    }

    private fun randomString(random: Random): String =
        (0 until random.nextInt(12)).map {
            when (random.nextInt(8)) {
                0 -> '"'
                1 -> '\\'
                2 -> random.nextInt(0, 32).toChar()
                3 -> '\u00e9'
                4 -> '/'
                5 -> listOf('\ud83d', '\ude00', '\ud800')[random.nextInt(3)]
                else -> ('a'..'z').random(random)
            }
        }.joinToString("")
}
