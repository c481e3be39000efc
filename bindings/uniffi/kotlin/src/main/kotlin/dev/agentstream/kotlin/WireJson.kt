package dev.agentstream.kotlin

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonPrimitive

/**
 * Reading the JSON text the native library hands over, with a bound on nesting.
 *
 * A harness's own records (`rawInput`, `rawOutput`, hook `arguments`) can be nested arbitrarily
 * deep. The core delivers containers nested deeper than 64 levels inside a record as
 * `{"$rawJson": "<its JSON text>"}`; this layer applies the same marker to any container deeper
 * than [MAX_DEPTH] levels from the top of the text it reads, so no tree it builds (and no
 * `equals`, `hashCode` or `toString` of an event holding one) recurses without bound: a tool
 * input nested a million levels deep is delivered, never a `StackOverflowError`. The scan that
 * finds such containers is a loop, not a recursion.
 */
internal object WireJson {
    /** Containers nested deeper than this are delivered as `{"$rawJson": text}`. */
    const val MAX_DEPTH: Int = 128

    /** The key of the object standing in for a container nested too deep (the core's marker). */
    const val RAW_JSON_MARKER: String = "\$rawJson"

    /** [text] (one JSON value) as a tree. */
    fun parse(text: String): JsonElement = Json.parseToJsonElement(bounded(text))

    /** [text] with every container nested deeper than [maxDepth] replaced by the marker. */
    fun bounded(text: String, maxDepth: Int = MAX_DEPTH): String {
        if (!deeperThan(text, maxDepth)) return text
        val out = StringBuilder(text.length + 64)
        var depth = 0
        var inString = false
        var copied = 0
        var i = 0
        while (i < text.length) {
            val c = text[i]
            if (inString) {
                if (c == '\\') i++ else if (c == '"') inString = false
            } else if (c == '"') {
                inString = true
            } else if (c == '{' || c == '[') {
                if (depth == maxDepth) {
                    val end = containerEnd(text, i)
                    out.append(text, copied, i)
                    out.append("{\"").append(RAW_JSON_MARKER).append("\":")
                    out.append(JsonPrimitive(text.substring(i, end)).toString())
                    out.append('}')
                    copied = end
                    i = end
                    continue
                }
                depth++
            } else if (c == '}' || c == ']') {
                depth--
            }
            i++
        }
        out.append(text, copied, text.length)
        return out.toString()
    }

    /** Whether a container in [text] is nested deeper than [maxDepth]. */
    private fun deeperThan(text: String, maxDepth: Int): Boolean {
        if (text.length <= maxDepth) return false
        var depth = 0
        var inString = false
        var i = 0
        while (i < text.length) {
            val c = text[i]
            if (inString) {
                if (c == '\\') i++ else if (c == '"') inString = false
            } else if (c == '"') {
                inString = true
            } else if (c == '{' || c == '[') {
                if (++depth > maxDepth) return true
            } else if (c == '}' || c == ']') {
                depth--
            }
            i++
        }
        return false
    }

    /** The index just past the container that opens at [start]. */
    private fun containerEnd(text: String, start: Int): Int {
        var depth = 0
        var inString = false
        var i = start
        while (i < text.length) {
            val c = text[i]
            if (inString) {
                if (c == '\\') i++ else if (c == '"') inString = false
            } else if (c == '"') {
                inString = true
            } else if (c == '{' || c == '[') {
                depth++
            } else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1
            }
            i++
        }
        return text.length
    }
}
