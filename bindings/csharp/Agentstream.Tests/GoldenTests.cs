using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;

namespace Agentstream.Tests
{
    /// <summary>
    /// Every golden fixture of tests/golden through the C# API: the content events (Decoder, at any
    /// chunking, and Replay) and the hook events (Replay) re-serialized by the generated codec equal
    /// the expected files, so the generated types lose nothing the core emits.
    /// </summary>
    static class GoldenTests
    {
        static List<OutputEvent> DecodeChunked(string agent, byte[] input, Func<int> size)
        {
            var events = new List<OutputEvent>();
            using (var d = new Decoder(agent))
            {
                int at = 0;
                while (at < input.Length)
                {
                    int n = Math.Max(1, Math.Min(size(), input.Length - at));
                    events.AddRange(d.Feed(input, at, n));
                    at += n;
                }
                events.AddRange(d.Finish());
                var stats = d.Stats;
                Check.Equal((ulong)input.Length, stats.Bytes, agent + ": stats.Bytes");
                Check.Equal((ulong)events.Count, stats.Events, agent + ": stats.Events");
            }
            return events;
        }

        static void SameEvents(string what, IList<string> expected, IList<string> actual)
        {
            Check.Equal(expected.Count, actual.Count, what + ": number of events");
            for (int i = 0; i < expected.Count; i++)
            {
                Check.JsonEqual(expected[i], actual[i], what + ": event " + (i + 1));
            }
        }

        static List<string> Serialized<T>(IEnumerable<T> values)
        {
            return values.Select(v => AgentstreamJson.Serialize(v)).ToList();
        }

        [Test]
        static void DecoderReplaysEveryGoldenCaseAtAnyChunking()
        {
            foreach (var c in TestEnv.GoldenCases())
            {
                var input = c.InputBytes();
                var expected = c.Expected();
                SameEvents(c.Name + " whole", expected, Serialized(DecodeChunked(c.Agent, input, () => input.Length)));
                SameEvents(c.Name + " byte by byte", expected, Serialized(DecodeChunked(c.Agent, input, () => 1)));
                for (ulong seed = 1; seed <= 3; seed++)
                {
                    var rng = new Rng(seed * 0x9E3779B97F4A7C15UL);
                    SameEvents(c.Name + " random chunks", expected, Serialized(DecodeChunked(c.Agent, input, () => (int)(rng.Next() % 97) + 1)));
                }
                SameEvents(c.Name + " Parse", expected, Serialized(Decoder.Parse(c.Agent, input)));
                using (var stream = new MemoryStream(input))
                {
                    SameEvents(c.Name + " Decode(Stream)", expected, Serialized(Decoder.Decode(c.Agent, stream)));
                }
            }
        }

        [Test]
        static void ReplayGivesTheGoldenContentAndHooks()
        {
            foreach (var c in TestEnv.GoldenCases())
            {
                var r = Replay.Run(c.Agent, c.InputBytes(), new ReplayOptions { RunId = "golden" });
                var content = r.Items.Where(i => i.Channel == Channel.Content).Select(i => (OutputEvent)i.Event);
                SameEvents(c.Name + " replay content", c.Expected(), Serialized(content));
                for (int i = 0; i < r.Items.Count; i++)
                {
                    Check.Equal((ulong)i, r.Items[i].Sequence, c.Name + ": gapless sequence");
                    Check.Equal("golden", r.Items[i].RunId, c.Name + ": run id");
                }
                var stdout = string.Concat(r.Items.Where(i => i.Channel == Channel.Stdout).Select(i => (string)i.Event));
                // One stdout item per line, with its newline (a last line without one gets one).
                var input = File.ReadAllText(c.Input);
                Check.Equal(input.EndsWith("\n") || input.Length == 0 ? input : input + "\n", stdout, c.Name + ": stdout items are the input");
                var terminals = r.Items.Count(i => i.Channel == Channel.Lifecycle && IsTerminal(((LifecycleEvent)i.Event).Reason));
                Check.Equal(1, terminals, c.Name + ": terminal lifecycle events");
                Check.True(r.Items.Last().Channel == Channel.Lifecycle, c.Name + ": the terminal is last");
                SameEvents(c.Name + " replay hooks", c.Hooks(), Serialized(r.Hooks));
            }
        }

        internal static bool IsTerminal(LifecycleReason reason)
        {
            switch (reason)
            {
                case LifecycleReason.RunComplete:
                case LifecycleReason.RunFailed:
                case LifecycleReason.RunInterrupted:
                case LifecycleReason.RunBackgroundComplete:
                case LifecycleReason.RunBackgroundFailed:
                case LifecycleReason.CommandComplete:
                case LifecycleReason.CommandFailed:
                case LifecycleReason.CommandInterrupted:
                case LifecycleReason.CommandBackgroundComplete:
                case LifecycleReason.CommandBackgroundFailed:
                    return true;
                default:
                    return false;
            }
        }

        [Test]
        static void GoldenHookFilesReadLosslesslyAsAgentEvents()
        {
            foreach (var c in TestEnv.GoldenCases())
            {
                foreach (var line in c.Hooks())
                {
                    var hook = AgentstreamJson.Deserialize<AgentEvent>(line);
                    Check.JsonEqual(line, AgentstreamJson.Serialize(hook), c.Name + " hook " + hook.Type);
                    Check.True(hook.Time.Year == 1970, "the golden timestamp reads as a time");
                }
                foreach (var line in c.Expected())
                {
                    Check.JsonEqual(line, AgentstreamJson.Serialize(AgentstreamJson.Deserialize<OutputEvent>(line)), c.Name + " content");
                }
            }
        }
    }
}
