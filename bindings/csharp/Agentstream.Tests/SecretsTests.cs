using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;

namespace Agentstream.Tests
{
    /// <summary>
    /// The secret-shape corpus (tests/secrets/corpus.jsonl) through every output path of the C#
    /// package: <see cref="Decoder.Parse"/>, a <see cref="Decoder"/> fed in small pieces,
    /// <see cref="Replay.Run"/> (items and hooks) and a real run of each harness's secret trace
    /// (tests/secrets/traces/): content and lifecycle handlers, hook events, the result, the
    /// stream. The raw stdout/stderr channels carry the process's bytes verbatim by design and are
    /// not checked. A run with <c>Redact = false</c> delivers every secret, so the fixtures do
    /// reach the masked fields.
    /// </summary>
    static class SecretsTests
    {
        static readonly string[] Agents = { "claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid" };

        static string SecretsDir
        {
            get { return Path.Combine(TestEnv.Repo, "tests", "secrets"); }
        }

        static List<string> CorpusSecrets()
        {
            var secrets = new List<string>();
            foreach (var line in File.ReadAllLines(Path.Combine(SecretsDir, "corpus.jsonl"), Encoding.UTF8))
            {
                if (line.Trim().Length == 0)
                {
                    continue;
                }
                var entry = (IDictionary<string, object>)AgentstreamJson.Deserialize<object>(line);
                secrets.AddRange(((IList<object>)entry["secrets"]).Cast<string>());
            }
            Check.True(secrets.Count >= 24, "corpus: " + secrets.Count + " secrets");
            return secrets;
        }

        /// <summary>The secrets found in <paramref name="value"/> written as JSON (also JSON-escaped).</summary>
        static List<string> Survivors(List<string> secrets, object value)
        {
            var text = AgentstreamJson.Serialize(value);
            return secrets.Where(s =>
            {
                var quoted = AgentstreamJson.Serialize(s);
                return text.Contains(s) || text.Contains(quoted.Substring(1, quoted.Length - 2));
            }).ToList();
        }

        static void None(List<string> secrets, object value, string what)
        {
            var found = Survivors(secrets, value);
            Check.True(found.Count == 0, what + " leaks " + string.Join(", ", found));
        }

        [Test]
        static void ParseTheDecoderAndReplayDeliverToolInputsAsPrintedWithRedactOff()
        {
            var secrets = CorpusSecrets();
            foreach (var agent in Agents)
            {
                var data = File.ReadAllBytes(Path.Combine(SecretsDir, "traces", agent + ".input.jsonl"));
                var parsed = Survivors(secrets, Decoder.Parse(agent, data, redact: false));
                Check.True(parsed.Count > 0, agent + ": parse with redact: false delivers the secrets");
                var fed = new List<OutputEvent>();
                using (var d = new Decoder(agent, redact: false))
                {
                    fed.AddRange(d.Feed(data));
                    fed.AddRange(d.Finish());
                }
                Check.Equal(string.Join("\n", parsed), string.Join("\n", Survivors(secrets, fed)), agent + ": a Decoder with redact: false");
                var r = Replay.Run(agent, data, new ReplayOptions { Redact = false });
                var content = r.Items.Where(i => i.Channel == Channel.Content).ToList();
                Check.Equal(string.Join("\n", parsed), string.Join("\n", Survivors(secrets, content)), agent + ": replay with Redact = false");
                None(secrets, Decoder.Parse(agent, data, redact: true), agent + ": parse with redact: true");
            }
        }

        [Test]
        static void EverySecretIsMaskedByParseTheDecoderAndReplay()
        {
            var secrets = CorpusSecrets();
            foreach (var agent in Agents)
            {
                var data = File.ReadAllBytes(Path.Combine(SecretsDir, "traces", agent + ".input.jsonl"));
                None(secrets, Decoder.Parse(agent, data), agent + ": parse");
                var fed = new List<OutputEvent>();
                using (var d = new Decoder(agent))
                {
                    for (int at = 0; at < data.Length; at += 97)
                    {
                        fed.AddRange(d.Feed(data, at, Math.Min(97, data.Length - at)));
                    }
                    fed.AddRange(d.Finish());
                }
                None(secrets, fed, agent + ": a Decoder fed in pieces");
                var r = Replay.Run(agent, data);
                None(secrets, r.Items.Where(i => i.Channel != Channel.Stdout && i.Channel != Channel.Stderr).ToList(), agent + ": replay items");
                None(secrets, r.Hooks, agent + ": replay hooks");
            }
        }

        [Test]
        static void EverySecretIsMaskedInARealRunAndDeliveredWithRedactionOff()
        {
            var secrets = CorpusSecrets();
            foreach (var agent in Agents)
            {
                foreach (var redact in new[] { true, false })
                {
                    var seen = new List<object>();
                    using (var evolve = new Evolve(TestEnv.Fake(agent, Path.Combine(SecretsDir, "traces", agent))))
                    {
                        evolve.On("content", e => { lock (seen) { seen.Add(e.Content); } });
                        evolve.On("lifecycle", e => { lock (seen) { seen.Add(e.Lifecycle); } });
                        var result = evolve.Run(new RunOptions
                        {
                            Prompt = "x",
                            Redact = redact,
                            OnEvent = h => { lock (seen) { seen.Add(h); } },
                        });
                        Check.Equal(RunState.Completed, result.State, agent + ": state");
                        seen.Add(result);
                        evolve.SessionId = null; // a fresh run, not a resumed one
                        using (var stream = evolve.Stream(new RunOptions { Prompt = "x", Redact = redact, Hooks = true }))
                        {
                            foreach (var e in stream)
                            {
                                if (e.IsHook)
                                {
                                    seen.Add(e.Hook);
                                }
                                else if (e.Content != null)
                                {
                                    seen.Add(e.Content);
                                }
                                else if (e.Lifecycle != null)
                                {
                                    seen.Add(e.Lifecycle);
                                }
                            }
                        }
                    }
                    if (redact)
                    {
                        None(secrets, seen, agent + ": a run");
                    }
                    else
                    {
                        Check.Equal(secrets.Count, Survivors(secrets, seen).Count, agent + ": with redaction off every secret comes through");
                    }
                }
            }
        }
    }
}
