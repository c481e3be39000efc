package dev.agentstream.kotlin

import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.JsonUnquotedLiteral

/**
 * Reading the JSON text the native library hands over into kotlinx.serialization's tree, in one
 * pass with a bound on nesting.
 *
 * A harness's own records (`rawInput`, `rawOutput`, hook `arguments`) can be nested arbitrarily
 * deep. The core delivers containers nested deeper than 64 levels inside a record as
 * `{"$rawJson": "<its JSON text>"}`; this reader applies the same marker to any container deeper
 * than [MAX_DEPTH] levels from the top of the text it reads, so no tree it builds (and no
 * `equals`, `hashCode` or `toString` of an event holding one) recurses without bound: a tool
 * input nested a million levels deep is delivered, never a `StackOverflowError`.
 *
 * Why not `Json.parseToJsonElement`: it gives the same tree, but only after a second pass that
 * looks for containers nested too deep, and its general-purpose lexer is a large body of code
 * for the JIT to compile while a run's first batches arrive (on two cores that compilation was
 * the Kotlin binding's latency tail). The text comes from the core, which wrote it as JSON, so
 * this reader takes exactly JSON and gives exactly what kotlinx gives for it: numbers keep their
 * text, a key given twice keeps its first position and its last value, a lone surrogate escape
 * stays in its string. Text that is not JSON (a bug, not input) is refused with its position.
 */
internal object WireJson {
    /** Containers nested deeper than this are delivered as `{"$rawJson": text}`. */
    const val MAX_DEPTH: Int = 128

    /** The key of the object standing in for a container nested too deep (the core's marker). */
    const val RAW_JSON_MARKER: String = "\$rawJson"

    /** [text] (one JSON value) as a tree, containers deeper than [maxDepth] as the marker. */
    fun parse(text: String, maxDepth: Int = MAX_DEPTH): JsonElement = TreeReader(text, maxDepth).document()
}

/** Thrown for text that is not one JSON value; the message says where. */
internal class WireJsonException(message: String) : IllegalArgumentException(message)

private class TreeReader(private val text: String, private val maxDepth: Int) {
    private var pos = 0

    /** Scratch for strings with escapes. */
    private val unescaped = StringBuilder()

    fun document(): JsonElement {
        val value = value(0)
        skipSpace()
        if (pos != text.length) fail("text after the value")
        return value
    }

    /** The value at [pos], inside [depth] open containers. */
    private fun value(depth: Int): JsonElement {
        skipSpace()
        if (pos == text.length) fail("the text ends where a value should be")
        val c = text[pos]
        return when {
            c == '{' || c == '[' -> if (depth == maxDepth) marker() else if (c == '{') obj(depth + 1) else array(depth + 1)
            c == '"' -> JsonPrimitive(string())
            c == '-' || c in '0'..'9' -> number()
            text.startsWith("true", pos) -> literal(4, JsonPrimitive(true))
            text.startsWith("false", pos) -> literal(5, JsonPrimitive(false))
            text.startsWith("null", pos) -> literal(4, JsonNull)
            else -> fail("'$c' does not start a value")
        }
    }

    private fun literal(length: Int, value: JsonElement): JsonElement {
        pos += length
        return value
    }

    private fun obj(depth: Int): JsonObject {
        pos++ // {
        val members = LinkedHashMap<String, JsonElement>()
        if (next() == '}') {
            pos++
            return JsonObject(members)
        }
        while (true) {
            if (next() != '"') fail("expected a key")
            val key = string()
            if (next() != ':') fail("expected ':'")
            pos++
            members[key] = value(depth)
            when (next()) {
                ',' -> pos++
                '}' -> {
                    pos++
                    return JsonObject(members)
                }
                else -> fail("expected ',' or '}'")
            }
        }
    }

    private fun array(depth: Int): JsonArray {
        pos++ // [
        val items = ArrayList<JsonElement>()
        if (next() == ']') {
            pos++
            return JsonArray(items)
        }
        while (true) {
            items.add(value(depth))
            when (next()) {
                ',' -> pos++
                ']' -> {
                    pos++
                    return JsonArray(items)
                }
                else -> fail("expected ',' or ']'")
            }
        }
    }

    /** The container at [pos], one level too deep, as `{"$rawJson": its text}`. */
    private fun marker(): JsonObject {
        val start = pos
        var depth = 0
        var inString = false
        while (pos < text.length) {
            val c = text[pos++]
            if (inString) {
                if (c == '\\') pos++ else if (c == '"') inString = false
            } else if (c == '"') {
                inString = true
            } else if (c == '{' || c == '[') {
                depth++
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return JsonObject(mapOf(WireJson.RAW_JSON_MARKER to JsonPrimitive(text.substring(start, pos))))
            }
        }
        fail("a container that does not end")
    }

    /** The string whose opening quote is at [pos]. */
    private fun string(): String {
        val start = ++pos
        while (pos < text.length) {
            val c = text[pos]
            if (c == '"') return text.substring(start, pos++)
            if (c == '\\') break
            pos++
        }
        unescaped.setLength(0)
        unescaped.append(text, start, pos)
        while (pos < text.length) {
            val c = text[pos++]
            when (c) {
                '"' -> return unescaped.toString()
                '\\' -> unescaped.append(escaped())
                else -> unescaped.append(c)
            }
        }
        fail("a string that does not end")
    }

    /** The character of the escape whose backslash was just read. */
    private fun escaped(): Char {
        if (pos == text.length) fail("a string that does not end")
        return when (val e = text[pos++]) {
            '"', '\\', '/' -> e
            'b' -> '\b'
            'f' -> '\u000C'
            'n' -> '\n'
            'r' -> '\r'
            't' -> '\t'
            'u' -> {
                if (pos + 4 > text.length) fail("a \\u escape without four hex digits")
                var code = 0
                repeat(4) {
                    val digit = Character.digit(text[pos++], 16)
                    if (digit < 0) fail("a \\u escape without four hex digits")
                    code = code * 16 + digit
                }
                code.toChar() // a lone surrogate stays one, as in kotlinx's tree
            }
            else -> fail("'\\$e' is not an escape")
        }
    }

    @OptIn(ExperimentalSerializationApi::class)
    private fun number(): JsonPrimitive {
        val start = pos
        if (text[pos] == '-') pos++
        val intStart = pos
        digits()
        if (pos == intStart || (text[intStart] == '0' && pos - intStart > 1)) fail("a malformed number")
        if (pos < text.length && text[pos] == '.') {
            pos++
            if (digits() == 0) fail("a malformed number")
        }
        if (pos < text.length && (text[pos] == 'e' || text[pos] == 'E')) {
            pos++
            if (pos < text.length && (text[pos] == '+' || text[pos] == '-')) pos++
            if (digits() == 0) fail("a malformed number")
        }
        // Its text as it is, as kotlinx keeps a number it reads (no rounding through a Double).
        return JsonUnquotedLiteral(text.substring(start, pos))
    }

    private fun digits(): Int {
        val from = pos
        while (pos < text.length && text[pos] in '0'..'9') pos++
        return pos - from
    }

    /** The next character that is not white space (without taking it). */
    private fun next(): Char {
        skipSpace()
        if (pos == text.length) fail("the text ends inside a container")
        return text[pos]
    }

    private fun skipSpace() {
        while (pos < text.length) {
            val c = text[pos]
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return
            pos++
        }
    }

    private fun fail(what: String): Nothing =
        throw WireJsonException("not JSON from the native library: $what at offset $pos of ${text.length}")
}
