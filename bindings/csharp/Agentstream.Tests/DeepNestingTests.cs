using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;

namespace Agentstream.Tests
{
    /// <summary>
    /// Values nested 10^6 levels deep are read, delivered and written without exhausting a stack:
    /// every test runs on a thread with 1 MiB of stack (the runner's), and the run's delivery
    /// thread reads the same way. The core delivers a tool input's containers past 64 levels as
    /// <c>{"$rawJson": "&lt;their JSON text&gt;"}</c>, or masks them whole where redaction is on
    /// (too deep to judge is never passed through); C#'s own JSON reader takes any depth.
    /// </summary>
    static class DeepNestingTests
    {
        const int Depth = 1000000;

        static string Nested(int depth, string open, string close, string inner)
        {
            var sb = new StringBuilder(depth * (open.Length + close.Length) + inner.Length);
            for (int i = 0; i < depth; i++)
            {
                sb.Append(open);
            }
            sb.Append(inner);
            for (int i = 0; i < depth; i++)
            {
                sb.Append(close);
            }
            return sb.ToString();
        }

        /// <summary>A claude tool call whose input holds a value nested <paramref name="depth"/> arrays deep.</summary>
        static string DeepToolLine(int depth)
        {
            return "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\"," +
                "\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"ls\",\"deep\":" +
                Nested(depth, "[", "]", "") + "}}]},\"session_id\":\"s1\"}\n";
        }

        /// <summary>The core's depth limit of delivered records, and one level for the marker.</summary>
        const int DeliveredDepth = 64 + 1;

        static int DeepDepth(ToolCall call)
        {
            var input = (IDictionary<string, object>)call.RawInput;
            return Json.Depth(input["deep"]);
        }

        /// <summary>The text of the <c>$rawJson</c> marker that stands in for the deep part, or null.</summary>
        static string RawJsonText(ToolCall call)
        {
            object value = ((IDictionary<string, object>)call.RawInput)["deep"];
            while (true)
            {
                var list = value as IList<object>;
                var map = value as IDictionary<string, object>;
                object text;
                if (map != null && map.TryGetValue("$rawJson", out text))
                {
                    return text as string;
                }
                if (list != null && list.Count > 0)
                {
                    value = list[0];
                }
                else if (map != null && map.Count > 0)
                {
                    value = map.Values.First();
                }
                else
                {
                    return null;
                }
            }
        }

        /// <summary>Masked by default: the deep part is bounded and carries no unjudged text.</summary>
        static void CheckMasked(ToolCall call, string what)
        {
            var input = (IDictionary<string, object>)call.RawInput;
            Check.Equal("ls", input["command"] as string, what + ": the command");
            Check.True(DeepDepth(call) <= DeliveredDepth, what + ": bounded depth, got " + DeepDepth(call));
            Check.Contains(AgentstreamJson.Serialize(input["deep"]), "[redacted]", what + ": masked past the core's depth");
            Check.True(RawJsonText(call) == null, what + ": no raw text of a masked input");
        }

        /// <summary>Unmasked: the deep part is bounded, then its JSON text under <c>$rawJson</c>.</summary>
        static void CheckRawJson(ToolCall call, string what)
        {
            Check.True(DeepDepth(call) <= DeliveredDepth, what + ": bounded depth, got " + DeepDepth(call));
            var text = RawJsonText(call);
            Check.True(text != null && text.StartsWith("[[[") && text.Length > Depth, what + ": the deep part as JSON text");
            Check.Equal(Depth, Json.Depth(AgentstreamJson.Deserialize<object>(text)) + DeepDepth(call) - 1, what + ": all levels in all");
        }

        [Test]
        static void FreeJsonReadsAndWritesAMillionLevels()
        {
            foreach (var text in new[] { Nested(Depth, "[", "]", "1"), Nested(Depth, "{\"k\":", "}", "null") })
            {
                var value = AgentstreamJson.Deserialize<object>(text);
                Check.Equal(Depth, Json.Depth(value), "depth read");
                Check.Equal(text, AgentstreamJson.Serialize(value), "written back exactly");
                Check.True(Json.Equal(value, AgentstreamJson.Deserialize<object>(text)), "compared without recursion");
            }
            Check.Throws<FormatException>(() => AgentstreamJson.Deserialize<object>(Nested(Depth, "[", "]", "").Substring(1)), "unbalanced");
        }

        [Test]
        static void TheDecoderDeliversAMillionLevelToolInput()
        {
            var line = Encoding.UTF8.GetBytes(DeepToolLine(Depth));
            var events = Decoder.Parse("claude", line);
            var call = events.Select(e => e.Update).OfType<ToolCall>().Single();
            CheckMasked(call, "parse");
            var json = AgentstreamJson.Serialize(events[0]);
            var back = AgentstreamJson.Deserialize<OutputEvent>(json);
            CheckMasked((ToolCall)back.Update, "written and read again");
        }

        [Test]
        static void ReplayAndItsHooksSurviveAMillionLevels()
        {
            var r = Replay.Run("claude", Encoding.UTF8.GetBytes(DeepToolLine(Depth)));
            var call = r.Items.Where(i => i.Channel == Channel.Content).Select(i => ((OutputEvent)i.Event).Update).OfType<ToolCall>().Single();
            Check.True(call.RawInput != null, "the tool input is delivered (masked or whole)");
            var started = r.Hooks.Single(h => h.Type == "tool.started");
            Check.True(started.Details.ContainsKey("arguments"), "tool.started has its arguments");
            AgentstreamJson.Serialize(r.Hooks);
        }

        [Test]
        static void ARealRunDeliversAMillionLevelsToAHandler()
        {
            var dir = TestEnv.TempDir();
            try
            {
                var trace = Path.Combine(dir, "deep");
                // The deep call, its result, and the end of the run.
                File.WriteAllText(trace + ".input.jsonl", DeepToolLine(Depth) +
                    "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":\"t1\",\"type\":\"tool_result\",\"content\":\"ok\",\"is_error\":false}]},\"session_id\":\"s1\"}\n" +
                    "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"session_id\":\"s1\"}\n");
                foreach (var redact in new[] { false, true })
                {
                    using (var evolve = new Evolve(TestEnv.Fake("claude", trace)))
                    {
                        ToolCall seen = null;
                        AgentEvent started = null;
                        evolve.On("content", e =>
                        {
                            var call = e.Content.Update as ToolCall;
                            if (call != null)
                            {
                                seen = call;
                            }
                        });
                        var result = evolve.Run(new RunOptions
                        {
                            Prompt = "x",
                            Redact = redact,
                            OnEvent = h =>
                            {
                                if (h.Type == "tool.started")
                                {
                                    started = h;
                                }
                            },
                        });
                        Check.Equal(RunState.Completed, result.State, "state");
                        Check.Equal(0UL, result.HandlerErrors, "handler errors");
                        Check.True(seen != null && seen.RawInput != null, "the handler got the tool call");
                        if (redact)
                        {
                            CheckMasked(seen, "a run");
                        }
                        else
                        {
                            CheckRawJson(seen, "a run without redaction");
                        }
                        Check.True(started != null, "the tool.started hook");
                    }
                }
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }
    }
}
