using System;
using System.Collections.Generic;
using System.Linq;

namespace Agentstream.Tests
{
    /// <summary>The package's own JSON reading and writing (mono has no System.Text.Json).</summary>
    static class JsonTests
    {
        [Test]
        static void ScalarsRoundTrip()
        {
            var cases = new[]
            {
                "0", "-1", "9223372036854775807", "-9223372036854775808", "18446744073709551615", "1.5", "-0.25", "1e-7",
                "true", "false", "null", "\"\"", "\"a\\\"b\\\\c\\n\\t\\u0001\"", "\"é😀\"", "[]", "{}",
                "[1,\"x\",[true,null],{\"a\":{\"b\":[]}}]",
            };
            foreach (var text in cases)
            {
                var value = AgentstreamJson.Deserialize<object>(text);
                Check.JsonEqual(text, AgentstreamJson.Serialize(value), "round trip of " + text);
            }
            Check.True(AgentstreamJson.Deserialize<object>("9223372036854775807") is long, "a long");
            Check.True(AgentstreamJson.Deserialize<object>("18446744073709551615") is ulong, "a ulong past long");
            Check.True(AgentstreamJson.Deserialize<object>("1.5") is double, "a double");
            Check.True(AgentstreamJson.Deserialize<object>("123456789012345678901234") is double, "a double past ulong");
            Check.Equal("\"\\ud800x\"", AgentstreamJson.Serialize(AgentstreamJson.Deserialize<object>("\"\\ud800x\"")), "a lone surrogate stays an escape");
            Check.Equal("😀", AgentstreamJson.Deserialize<object>("\"\\ud83d\\ude00\""), "a surrogate pair");
            Check.Equal("{\"b\":1,\"a\":2}", AgentstreamJson.Serialize(AgentstreamJson.Deserialize<object>("{\"b\":1,\"a\":2}")), "key order kept");
        }

        [Test]
        static void InvalidJsonIsAFormatException()
        {
            foreach (var text in new[] { "", "{", "[1,", "{\"a\" 1}", "tru", "\"abc", "1 2", "{\"a\":1}x", "[1]]" })
            {
                Check.Throws<FormatException>(() => AgentstreamJson.Deserialize<object>(text), "invalid: " + text);
            }
            Check.Throws<ArgumentException>(() => AgentstreamJson.Deserialize<Uri>("{}"), "not a wire type");
            Check.Throws<ArgumentException>(() => AgentstreamJson.Serialize(new Uri("http://x")), "no JSON form");
            Check.Throws<ArgumentException>(() => AgentstreamJson.Serialize(double.NaN), "NaN");
        }

        [Test]
        static void UnknownKindsAndKeysAreKept()
        {
            var text = "{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"future_kind\",\"n\":1,\"list\":[1,2]},\"futureKey\":{\"x\":1}}";
            var e = AgentstreamJson.Deserialize<OutputEvent>(text);
            var unknown = (UnknownSessionUpdate)e.Update;
            Check.Equal("future_kind", unknown.SessionUpdateKind, "the unknown kind");
            Check.Equal(2, unknown.Properties.Count, "its properties");
            Check.JsonEqual("{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"future_kind\",\"n\":1,\"list\":[1,2]}}", AgentstreamJson.Serialize(e), "written back (unknown keys of known types are dropped)");
        }

        [Test]
        static void TagsAndRefinementsInAnyKeyOrder()
        {
            var chunk = AgentstreamJson.Deserialize<OutputEvent>("{\"update\":{\"content\":{\"text\":\"hi\",\"type\":\"text\"},\"sessionUpdate\":\"agent_message_chunk\"}}");
            var text = (TextContent)((AgentMessageChunk)chunk.Update).Content;
            Check.Equal("hi", text.Text, "a union whose tag comes last");
            var envelope = AgentstreamJson.Deserialize<Envelope>("{\"event\":{\"sandbox\":\"running\",\"agent\":\"running\",\"timestamp\":\"t\",\"reason\":\"run_start\"},\"sequence\":3,\"channel\":\"lifecycle\",\"runId\":\"r\"}");
            Check.Equal(LifecycleReason.RunStart, ((LifecycleEvent)envelope.Event).Reason, "an envelope whose event comes before its channel");
            var stdout = AgentstreamJson.Deserialize<Envelope>("{\"runId\":\"r\",\"sequence\":1,\"channel\":\"stdout\",\"event\":\"line\\n\",\"coalesced\":2}");
            Check.Equal("line\n", stdout.Event, "a stdout envelope's text");
            Check.Equal(2UL, stdout.Coalesced, "coalesced");
        }

        [Test]
        static void FreeJsonIsBuiltOnceOnFirstReadFromAnyThread()
        {
            var text = "{\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"t\",\"title\":\"x\",\"kind\":\"execute\",\"status\":\"pending\",\"rawInput\":{\"command\":\"ls\",\"n\":[1,2]}}}";
            var call = (ToolCall)AgentstreamJson.Deserialize<OutputEvent>(text).Update;
            var seen = new object[8];
            var threads = Enumerable.Range(0, seen.Length).Select(i => new System.Threading.Thread(() => seen[i] = call.RawInput)).ToList();
            threads.ForEach(t => t.Start());
            threads.ForEach(t => t.Join());
            Check.True(seen.All(o => ReferenceEquals(o, seen[0])), "every reader gets the one value built");
            Check.Equal("ls", ((IDictionary<string, object>)call.RawInput)["command"], "its content");
            Check.JsonEqual(text, AgentstreamJson.Serialize(new OutputEvent { Update = call }), "written back");
            call.RawInput = new Dictionary<string, object> { { "command", "pwd" } };
            Check.Contains(AgentstreamJson.Serialize(call.RawInput), "pwd", "a value set replaces it");
            Check.Contains(AgentstreamJson.Serialize(new OutputEvent { Update = call }), "\"rawInput\":{\"command\":\"pwd\"}", "and is written");
        }

        [Test]
        static void OptionalPropertiesAreAbsentWhenNull()
        {
            var e = new OutputEvent { Update = new AgentMessageChunk { Content = new TextContent { Text = "" } } };
            Check.Equal("{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"\"}}}", AgentstreamJson.Serialize(e), "absent, and an empty string kept");
            var diff = new DiffContent { Path = "a", OldText = null, NewText = "b" };
            Check.Contains(AgentstreamJson.Serialize(new ToolCallUpdate { ToolCallId = "t", Content = new List<ToolCallContent> { diff } }), "\"oldText\":null", "a required nullable is written as null");
        }
    }
}
