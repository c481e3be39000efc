using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;

namespace Agentstream.Tests
{
    /// <summary>
    /// The API parity table (tests/parity/api.json, README there) run against the C# API: each
    /// language-neutral call mapped to its C# idiom.
    /// </summary>
    static class ParityTests
    {
        sealed class CaseRun
        {
            public string Name;
            public Evolve Evolve;
            public string ArgvFile;
            public int HandlerCalls;
            public string FirstHook;
        }

        static Dictionary<string, object> Obj(object o)
        {
            return o as Dictionary<string, object>;
        }

        static string Str(Dictionary<string, object> o, string key)
        {
            object v;
            return o != null && o.TryGetValue(key, out v) ? v as string : null;
        }

        static AgentConfig Config(object json, string harness, string argvFile)
        {
            var o = Obj(json);
            var config = new AgentConfig();
            foreach (var kv in o)
            {
                switch (kv.Key)
                {
                    case "type": config.Type = (string)kv.Value; break;
                    case "bin": config.Bin = (string)kv.Value; break;
                    case "model": config.Model = (string)kv.Value; break;
                    case "agent_id": config.AgentId = (string)kv.Value; break;
                    case "cwd": config.Cwd = (string)kv.Value; break;
                    default: throw new CheckFailed("the parity table's config has a key this runner does not map: " + kv.Key);
                }
            }
            if (harness != null)
            {
                config.Bin = TestEnv.FakeHarness;
                config.Env = new Dictionary<string, string>
                {
                    { "AGENTSTREAM_FAKE_TRACE", Path.Combine(TestEnv.Golden, harness) },
                    { "AGENTSTREAM_FAKE_ARGV_FILE", argvFile },
                };
            }
            return config;
        }

        static RunOptions Options(CaseRun run, Dictionary<string, object> step)
        {
            var options = new RunOptions();
            foreach (var kv in Obj(step["request"]))
            {
                switch (kv.Key)
                {
                    case "prompt": options.Prompt = (string)kv.Value; break;
                    case "model": options.Model = (string)kv.Value; break;
                    case "cwd": options.Cwd = (string)kv.Value; break;
                    case "resume": options.Resume = (string)kv.Value; break;
                    case "timeout_ms": options.Timeout = TimeSpan.FromMilliseconds(Convert.ToDouble(kv.Value)); break;
                    case "env": options.Env = Obj(kv.Value).ToDictionary(e => e.Key, e => (string)e.Value); break;
                    default: throw new CheckFailed("the parity table names a request key this runner does not map: " + kv.Key);
                }
            }
            object onEvent;
            if (step.TryGetValue("on_event", out onEvent) && (bool)onEvent)
            {
                options.OnEvent = h =>
                {
                    if (run.FirstHook == null)
                    {
                        run.FirstHook = h.Type;
                    }
                };
            }
            return options;
        }

        /// <summary>Every key of <paramref name="want"/> matches in <paramref name="got"/> (null: absent or null).</summary>
        static bool Matches(object want, object got)
        {
            var w = Obj(want);
            if (w != null)
            {
                var g = Obj(got);
                foreach (var kv in w)
                {
                    object v = null;
                    if (g != null)
                    {
                        g.TryGetValue(kv.Key, out v);
                    }
                    if (!Matches(kv.Value, v))
                    {
                        return false;
                    }
                }
                return true;
            }
            return Json.Equal(want, got);
        }

        static void Step(CaseRun run, Dictionary<string, object> step)
        {
            string call = Str(step, "call");
            string what = run.Name + " / " + call;
            int callsBefore = run.HandlerCalls;
            object got = null;
            Exception error = null;
            try
            {
                switch (call)
                {
                    case "new":
                        run.Evolve = new Evolve(Config(step["config"], null, run.ArgvFile));
                        run.Evolve.HandlerFailed += (s, e) => { };
                        break;
                    case "on":
                        bool throws = Str(step, "handler") == "throw";
                        run.Evolve.On(Str(step, "channel"), e =>
                        {
                            Interlocked.Increment(ref run.HandlerCalls);
                            if (throws)
                            {
                                throw new InvalidOperationException("a throwing handler");
                            }
                        });
                        break;
                    case "off":
                        run.Evolve.Off(Str(step, "channel"));
                        break;
                    case "run":
                        run.FirstHook = null;
                        var result = run.Evolve.RunAsync(Options(run, step)).GetAwaiter().GetResult();
                        got = AgentstreamJson.Deserialize<object>(AgentstreamJson.Serialize(result));
                        break;
                    case "status":
                        got = AgentstreamJson.Deserialize<object>(run.Evolve.Status.ToString());
                        break;
                    case "get_session":
                        got = run.Evolve.SessionId;
                        break;
                    case "set_session":
                        run.Evolve.SessionId = Str(step, "session_id");
                        break;
                    case "interrupt":
                        got = run.Evolve.Interrupt();
                        break;
                    case "kill":
                        got = run.Evolve.Kill();
                        break;
                    case "pause":
                        run.Evolve.Pause();
                        break;
                    case "resume":
                        run.Evolve.Resume();
                        break;
                    case "argv":
                        got = AgentstreamJson.Deserialize<object>(File.ReadAllText(run.ArgvFile));
                        break;
                    default:
                        throw new CheckFailed(what + ": the parity table names a call this runner does not know");
                }
            }
            catch (CheckFailed)
            {
                throw;
            }
            catch (Exception e)
            {
                error = e;
            }

            string expectedError = Str(step, "error");
            if (expectedError != null)
            {
                var agentstreamError = error as IAgentstreamError;
                Check.True(agentstreamError != null && agentstreamError.Kind.ToWire() == expectedError,
                    what + ": expected a " + expectedError + " error, got " + (error == null ? "none" : error.GetType().Name + ": " + error.Message));
                object needles;
                if (step.TryGetValue("message_has", out needles))
                {
                    foreach (string needle in (List<object>)needles)
                    {
                        Check.Contains(error.Message, needle, what + ": message");
                    }
                }
                return;
            }
            if (error != null)
            {
                throw new CheckFailed(what + ": unexpected " + error);
            }
            object returns;
            if (step.TryGetValue("returns", out returns))
            {
                Check.True(Matches(returns, got), what + ": returned " + AgentstreamJson.Serialize(got) + ", expected " + AgentstreamJson.Serialize(returns));
            }
            object atLeast;
            if (step.TryGetValue("handler_calls_at_least", out atLeast))
            {
                Check.True(run.HandlerCalls - callsBefore >= Convert.ToInt32(atLeast), what + ": " + (run.HandlerCalls - callsBefore) + " handler calls");
            }
            if (step.TryGetValue("handler_errors_at_least", out atLeast))
            {
                Check.True(Convert.ToInt64(Obj(got)["handler_errors"]) >= Convert.ToInt64(atLeast), what + ": handler errors");
            }
            string hooksFirst = Str(step, "hooks_first");
            if (hooksFirst != null)
            {
                Check.Equal(hooksFirst, run.FirstHook, what + ": first hook");
            }
            if (call == "argv")
            {
                var argv = ((List<object>)got).Cast<string>().ToList();
                object has;
                if (step.TryGetValue("argv_has", out has))
                {
                    var needle = ((List<object>)has).Cast<string>().ToList();
                    bool found = Enumerable.Range(0, Math.Max(0, argv.Count - needle.Count + 1)).Any(i => argv.Skip(i).Take(needle.Count).SequenceEqual(needle));
                    // `--opt value` in the table also matches the joined `--opt=value` a harness gets.
                    found = found || (needle.Count == 2 && argv.Contains(needle[0] + "=" + needle[1]));
                    Check.True(found, what + ": [" + string.Join(", ", needle) + "] not in [" + string.Join(", ", argv) + "]");
                }
                object lacks;
                if (step.TryGetValue("argv_lacks", out lacks))
                {
                    foreach (string lack in (List<object>)lacks)
                    {
                        Check.True(!argv.Any(a => a == lack || a.StartsWith(lack + "=")), what + ": " + lack + " in [" + string.Join(", ", argv) + "]");
                    }
                }
            }
        }

        [Test]
        static void TheParityTablePasses()
        {
            var table = Obj(AgentstreamJson.Deserialize<object>(File.ReadAllText(Path.Combine(TestEnv.Repo, "tests", "parity", "api.json"))));
            var cases = (List<object>)table["cases"];
            Check.True(cases.Count > 0, "cases in the table");
            var dir = TestEnv.TempDir();
            try
            {
                int i = 0;
                foreach (Dictionary<string, object> kase in cases)
                {
                    var run = new CaseRun { Name = Str(kase, "name"), ArgvFile = Path.Combine(dir, "argv-" + i++ + ".json") };
                    try
                    {
                        object config;
                        if (kase.TryGetValue("config", out config))
                        {
                            run.Evolve = new Evolve(Config(config, Str(kase, "harness"), run.ArgvFile));
                            run.Evolve.HandlerFailed += (s, e) => { }; // counted in the result (checked); reports are tested elsewhere
                        }
                        foreach (Dictionary<string, object> step in (List<object>)kase["steps"])
                        {
                            Step(run, step);
                        }
                    }
                    finally
                    {
                        if (run.Evolve != null)
                        {
                            run.Evolve.Dispose();
                        }
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
