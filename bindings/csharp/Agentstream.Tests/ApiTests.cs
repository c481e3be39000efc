using System;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;

namespace Agentstream.Tests
{
    /// <summary>Versions and small API facts.</summary>
    static class ApiTests
    {
        [Test]
        static void OneVersionForTheAssemblyTheLibraryAndTheWorkspace()
        {
            var assembly = typeof(Evolve).Assembly.GetName().Version;
            var library = Library.Version;
            Check.Equal(library, assembly.Major + "." + assembly.Minor + "." + assembly.Build, "assembly version = libagentstream's");
            var cargo = File.ReadAllText(Path.Combine(TestEnv.Repo, "Cargo.toml"));
            Check.Equal(library, Regex.Match(cargo, "\\nversion = \"([^\"]+)\"").Groups[1].Value, "= the Cargo workspace's");
            var csproj = File.ReadAllText(Path.Combine(TestEnv.Repo, "bindings", "csharp", "Agentstream", "Agentstream.csproj"));
            Check.Contains(csproj, "<Version>" + library + "</Version>", "= the .csproj's");
        }

        [Test]
        static void ConfigurationIsCopiedAndStatusReadsBack()
        {
            var config = new AgentConfig { Type = "gemini", Model = "m", ExtraArgs = new[] { "--x" } };
            using (var evolve = new Evolve(config))
            {
                config.Model = "changed";
                Check.Equal("m", evolve.Config.Model, "the Evolve keeps its own copy");
                Check.Equal("gemini", evolve.Agent, "agent");
                var status = evolve.Status;
                Check.True(status.Agent == "gemini" && !status.HasRun && status.ActiveRunId == null && status.SessionId == null && status.LastStatus == null, "status " + status);
                Check.JsonEqual("{\"agent\":\"gemini\",\"sandbox\":\"" + status.Sandbox.ToWire() + "\",\"agent_state\":\"idle\",\"has_run\":false}", status.ToString(), "status JSON");
            }
            using (var evolve = new Evolve(new AgentConfig { Type = "claude-code" }))
            {
                Check.Equal("claude", evolve.Agent, "an alias reads as its canonical name");
            }
        }

        [Test]
        static void EventsAndResultsPrintAsTheLibrarysJson()
        {
            var r = Replay.Run("codex", File.ReadAllBytes(Path.Combine(TestEnv.Golden, "codex", "s2-bash.input.jsonl")), new ReplayOptions { RunId = "r1", AgentId = "me", Timestamp = "2026-01-02T03:04:05.000Z" });
            Check.True(r.Outcome is RunOutcomeCompleted, "outcome");
            Check.Equal("me", r.Hooks[0].AgentId, "agent id option");
            Check.Equal(new DateTimeOffset(2026, 1, 2, 3, 4, 5, TimeSpan.Zero), r.Hooks[0].Time, "a hook's time");
            var first = r.Items.First(i => i.Channel == Channel.Content);
            var json = AgentstreamJson.Serialize(first);
            Check.Contains(json, "\"runId\":\"r1\"", "an envelope's JSON");
            Check.JsonEqual(json, AgentstreamJson.Serialize(AgentstreamJson.Deserialize<Envelope>(json)), "an envelope round trip");
            Check.Equal(AgentstreamJson.Serialize(first.Event), ((OutputEvent)first.Event).ToString(), "ToString is the JSON");
        }
    }
}
