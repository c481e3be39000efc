using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Agentstream.Tests
{
    /// <summary>
    /// Misuse gets .NET's own exceptions (ArgumentException, ObjectDisposedException,
    /// InvalidOperationException, …) carrying the library's message, one class per error kind of the
    /// core's table; nothing crashes the process.
    /// </summary>
    static class MisuseTests
    {
        static readonly string[] Channels = { "content", "lifecycle", "stdout", "stderr" };
        static readonly string[] Agents = { "claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid" };

        [DllImport("agentstream", CallingConvention = CallingConvention.Cdecl)]
        static extern uint agentstream_testing_panic();

        [DllImport("agentstream", CallingConvention = CallingConvention.Cdecl)]
        static extern IntPtr agentstream_status_name(uint status);

        [Test]
        static void EveryMemberOfADisposedObjectThrowsObjectDisposed()
        {
            var evolve = new Evolve(new AgentConfig { Type = "claude" });
            evolve.Dispose();
            evolve.Dispose(); // twice: nothing
            var calls = new Dictionary<string, Action>
            {
                { "On", () => evolve.On("content", e => { }) },
                { "Off", () => evolve.Off("content") },
                { "Start", () => evolve.Start(new RunOptions { Prompt = "x" }) },
                { "Run", () => evolve.Run(new RunOptions { Prompt = "x" }) },
                { "RunAsync", () => evolve.RunAsync(new RunOptions { Prompt = "x" }).GetAwaiter().GetResult() },
                { "Stream", () => evolve.Stream(new RunOptions { Prompt = "x" }) },
                { "Pause", () => evolve.Pause() },
                { "Resume", () => evolve.Resume() },
                { "Interrupt", () => evolve.Interrupt() },
                { "Kill", () => evolve.Kill() },
                { "Status", () => { var s = evolve.Status; } },
                { "SessionId get", () => { var s = evolve.SessionId; } },
                { "SessionId set", () => evolve.SessionId = "x" },
                { "SetBudget", () => evolve.SetBudget(null) },
            };
            var decoder = new Decoder("codex");
            decoder.Dispose();
            decoder.Dispose();
            calls.Add("Decoder.Feed", () => decoder.Feed(new byte[] { 1 }));
            calls.Add("Decoder.Finish", () => decoder.Finish());
            calls.Add("Decoder.Stats", () => { var s = decoder.Stats; });
            calls.Add("Decoder.TakeDiagnostics", () => decoder.TakeDiagnostics());
            calls.Add("Decoder.SessionId", () => { var s = decoder.SessionId; });
            var budget = new Budget(1024, 1);
            budget.Dispose();
            calls.Add("Budget.Active", () => { var a = budget.Active; });
            foreach (var call in calls)
            {
                var e = Check.Throws<ObjectDisposedException>(call.Value, call.Key + " after Dispose");
                Check.True(e is InvalidHandleException, call.Key + ": the core's invalid_handle kind");
                Check.Equal(ErrorKind.InvalidHandle, ((IAgentstreamError)e).Kind, call.Key + ": kind");
                Check.Contains(e.Message, "disposed", call.Key + ": message");
            }
        }

        [Test]
        static void UnknownChannelsAreArgumentExceptionsListingTheFour()
        {
            using (var evolve = new Evolve(new AgentConfig { Type = "claude" }))
            {
                foreach (var call in new Action[] { () => evolve.On("message", e => { }), () => evolve.Off("message"), () => Library.ValidateChannel("message") })
                {
                    var e = Check.Throws<ArgumentException>(call, "an unknown channel");
                    Check.True(e is InvalidArgumentException && ((IAgentstreamError)e).Code == 1004, "the core's invalid_argument");
                    foreach (var c in Channels)
                    {
                        Check.Contains(e.Message, c, "the message lists the channels");
                    }
                }
                foreach (var c in Channels)
                {
                    Library.ValidateChannel(c);
                    evolve.On(c, e => { }).Dispose();
                    evolve.Off(c);
                }
                Check.Throws<ArgumentNullException>(() => evolve.On(null, e => { }), "a null channel");
                Check.Throws<ArgumentNullException>(() => evolve.On("content", null), "a null handler");
            }
        }

        [Test]
        static void NamesWithANulAreRefusedNotCutShort()
        {
            // C reads "content\0x" as "content": the library subscribed a channel the C# side did
            // not know (an IndexOutOfRangeException, and a native subscription never removed).
            using (var evolve = new Evolve(new AgentConfig { Type = "claude" }))
            {
                var calls = new Dictionary<string, Action>
                {
                    { "On", () => evolve.On("content\0x", e => { }) },
                    { "Off", () => evolve.Off("content\0x") },
                    { "ValidateChannel", () => Library.ValidateChannel("stdout\0") },
                    { "Decoder", () => new Decoder("claude\0") },
                };
                foreach (var call in calls)
                {
                    var e = Check.Throws<InvalidArgumentException>(call.Value, call.Key + " with a NUL");
                    Check.Contains(e.Message, "NUL", call.Key + ": the message says why");
                }
                evolve.On("content", e => { }).Dispose();
                evolve.Off("content");
            }
        }

        [Test]
        static void UnknownAgentsAreArgumentExceptionsListingTheSeven()
        {
            var calls = new Dictionary<string, Action>
            {
                { "Evolve", () => new Evolve(new AgentConfig { Type = "nope" }) },
                { "Decoder", () => new Decoder("nope") },
                { "Replay", () => Replay.Run("nope", new byte[0]) },
            };
            foreach (var call in calls)
            {
                var e = Check.Throws<ArgumentException>(call.Value, call.Key);
                foreach (var a in Agents)
                {
                    Check.Contains(e.Message, a, call.Key + ": the message lists the agents");
                }
            }
            Check.Throws<ArgumentNullException>(() => new Evolve(null), "a null config");
            using (var d = new Decoder("CODEX"))
            {
                Check.Equal("CODEX", d.Agent, "agent names are case-insensitive");
            }
        }

        [Test]
        static void BadOptionsNameTheProperty()
        {
            using (var evolve = new Evolve(new AgentConfig { Type = "claude", Bin = "/nonexistent/claude" }))
            {
                var cases = new Dictionary<string, RunOptions>
                {
                    { "TimeoutMs", new RunOptions { Prompt = "x", Timeout = TimeSpan.Zero } },
                    { "Timeout must not be negative", new RunOptions { Prompt = "x", Timeout = TimeSpan.FromSeconds(-1) } },
                    { "A=B", new RunOptions { Prompt = "x", Env = new Dictionary<string, string> { { "A=B", "1" } } } },
                    { "Prompt", new RunOptions() },
                    { "Command", new RunOptions { Prompt = "x", Command = new[] { "ls" } } },
                    { "Resume", new RunOptions { Prompt = "x", Resume = "-x" } },
                    { "Limits.StallMs", new RunOptions { Prompt = "x", Limits = new RunLimits { Stall = TimeSpan.Zero } } },
                    { "Limits.HighWater", new RunOptions { Prompt = "x", Limits = new RunLimits { HighWater = -1 } } },
                    { "Model", new RunOptions { Prompt = "x", Model = "" } },
                };
                foreach (var c in cases)
                {
                    var e = Check.Throws<ArgumentException>(() => evolve.Start(c.Value), c.Key);
                    Check.True(e is InvalidArgumentException, c.Key + ": the core's invalid_argument");
                    Check.Contains(e.Message, c.Key, "the message names the property");
                    Check.Throws<ArgumentException>(() => evolve.Stream(c.Value), c.Key + " (stream)");
                }
                Check.Throws<ArgumentNullException>(() => evolve.Start(null), "null options");
                Check.Equal(false, evolve.Status.HasRun, "nothing was started");
            }
            var config = Check.Throws<ArgumentException>(() => new Evolve(new AgentConfig { Type = "claude", Bin = "" }), "an empty Bin");
            Check.Contains(config.Message, "Bin", "the message names Bin");
            var env = Check.Throws<ArgumentException>(() => new Evolve(new AgentConfig { Type = "claude", Env = new Dictionary<string, string> { { "", "x" } } }), "an empty variable name");
            Check.Contains(env.Message, "Env", "the message names Env");
            Check.Throws<InvalidArgumentException>(() => new Decoder("claude", -1), "a negative line limit");
            using (var d = new Decoder("claude"))
            {
                Check.Throws<InvalidArgumentException>(() => d.Feed(new byte[4], 2, 3), "a range outside the data");
                Check.Throws<ArgumentNullException>(() => d.Feed(null), "null data");
            }
        }

        [Test]
        static void BadInputIsCountedNeverAnException()
        {
            using (var d = new Decoder("claude", 64))
            {
                var input = Encoding.UTF8.GetBytes("not json\n{\"type\":\"mystery\"}\n[1,2]\n" + new string('x', 100) + "\n\xff\n");
                var events = d.Feed(input);
                events = d.Finish();
                Check.Equal(0, events.Count, "no events");
                var stats = d.Stats;
                Check.True(stats.InvalidJson >= 1 && stats.OversizeLines == 1 && stats.UnknownType == 1 && stats.NonObject == 1, "stats " + AgentstreamJson.Serialize(stats));
                var diagnostics = d.TakeDiagnostics();
                Check.True(diagnostics.Count >= 1, "diagnostics");
                Check.Equal(0, d.TakeDiagnostics().Count, "diagnostics are taken once");
                Check.Equal(null, d.SessionId, "no session id seen");
            }
            using (var d = new Decoder("claude"))
            {
                d.Feed(Encoding.UTF8.GetBytes("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"S-1\"}\n"));
                Check.Equal("S-1", d.SessionId, "the session id once seen");
            }
        }

        [Test]
        static void ALibraryPanicIsAStatusNotACrash()
        {
            uint status = agentstream_testing_panic();
            Check.Equal(1015u, status, "PANIC");
            ErrorKind kind;
            Check.True(ErrorTable.TryFromCode((int)status, out kind) && kind == ErrorKind.Panic, "the table knows it");
            Check.True(kind.ToException("boom") is PanicException, "its exception");
        }

        [Test]
        static void TheErrorTableIsTheLibrarysAndEachKindHasItsException()
        {
            var bases = new Dictionary<ErrorKind, Type>
            {
                { ErrorKind.InvalidArgument, typeof(ArgumentException) },
                { ErrorKind.NullArgument, typeof(ArgumentNullException) },
                { ErrorKind.InvalidHandle, typeof(ObjectDisposedException) },
                { ErrorKind.AlreadyRunning, typeof(InvalidOperationException) },
                { ErrorKind.NotRunning, typeof(InvalidOperationException) },
                { ErrorKind.StillRunning, typeof(InvalidOperationException) },
                { ErrorKind.Busy, typeof(InvalidOperationException) },
                { ErrorKind.Cancelled, typeof(OperationCanceledException) },
                { ErrorKind.Timeout, typeof(TimeoutException) },
                { ErrorKind.Unsupported, typeof(PlatformNotSupportedException) },
                { ErrorKind.CannotResume, typeof(NotSupportedException) },
                { ErrorKind.HarnessNotFound, typeof(AgentstreamException) },
                { ErrorKind.Panic, typeof(AgentstreamException) },
            };
            var kinds = Enum.GetValues(typeof(ErrorKind)).Cast<ErrorKind>().ToList();
            Check.Equal(17, kinds.Count, "the table's kinds");
            foreach (var kind in kinds)
            {
                int code = kind.Code();
                var name = Marshal.PtrToStringAnsi(agentstream_status_name((uint)code));
                Check.Equal(kind.ToWire(), name, "the library's name of code " + code);
                ErrorKind back;
                Check.True(ErrorTable.TryFromCode(code, out back) && back == kind, "code round trip");
                var e = kind.ToException("the library's message");
                var error = e as IAgentstreamError;
                Check.True(error != null && error.Kind == kind && error.Code == code, kind + ": IAgentstreamError");
                Check.Equal("the library's message", e.Message, kind + ": the message is the library's");
                Type expected;
                if (bases.TryGetValue(kind, out expected))
                {
                    Check.True(expected.IsInstanceOfType(e), kind + " is a " + expected.Name);
                }
                Check.True(kind.Advice().Length > 0, "advice");
            }
            Check.Equal("unknown", Marshal.PtrToStringAnsi(agentstream_status_name(999)), "a number that is no status");
        }

        [Test]
        static void ErrorMessagesStayOnTheirThread()
        {
            var failures = new List<string>();
            var threads = Enumerable.Range(0, 8).Select(i => new Thread(() =>
            {
                for (int k = 0; k < 200; k++)
                {
                    string agent = "nope-" + i + "-" + k;
                    try
                    {
                        new Decoder(agent).Dispose();
                    }
                    catch (ArgumentException e)
                    {
                        if (!e.Message.Contains(agent))
                        {
                            lock (failures)
                            {
                                failures.Add(e.Message);
                            }
                        }
                    }
                }
            })).ToList();
            threads.ForEach(t => t.Start());
            threads.ForEach(t => t.Join());
            Check.Equal(0, failures.Count, "messages of another thread: " + string.Join(" | ", failures.Take(3)));
        }

        [Test]
        static void ResultsBeforeTheEndAreStillRunning()
        {
            using (var evolve = new Evolve(TestEnv.Fake("claude", System.IO.Path.Combine(TestEnv.Golden, "claude", "s1-text"), "AGENTSTREAM_FAKE_HANG", "1")))
            {
                var run = evolve.Start(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(100) });
                var e = Check.Throws<InvalidOperationException>(() => { var r = run.Result; }, "Result while running");
                Check.True(e is StillRunningException, "the core's still_running kind");
                Check.Throws<StillRunningException>(() => run.Wait(TimeSpan.FromMilliseconds(50)), "a wait that ran out of time");
                run.Cancel("done");
                Check.Equal(RunState.Cancelled, run.Wait().State, "cancelled");
            }
            using (var evolve = new Evolve(TestEnv.Fake("claude", System.IO.Path.Combine(TestEnv.Golden, "claude", "s1-text"))))
            {
                AgentRun run = null;
                Exception inHandler = null;
                var started = new ManualResetEventSlim();
                evolve.On("lifecycle", e =>
                {
                    started.Wait();
                    try
                    {
                        run.Wait();
                    }
                    catch (Exception x)
                    {
                        inHandler = x;
                    }
                });
                run = evolve.Start(new RunOptions { Prompt = "x" });
                started.Set();
                Check.Equal(RunState.Completed, run.Wait().State, "the run ends");
                Check.True(inHandler is BusyException && inHandler is InvalidOperationException, "Wait from the run's own handler: " + inHandler);
                run.Cancel("again"); // after the end: nothing
            }
            // A handler of the first run starts the next and waits for it: the next run's handlers
            // would wait for this one to return (one Evolve's handlers run one at a time).
            using (var evolve = new Evolve(TestEnv.Fake("claude", System.IO.Path.Combine(TestEnv.Golden, "claude", "s1-text"))))
            {
                AgentRun next = null;
                var inHandler = ThrownAtTheFirstTerminal(evolve, () =>
                {
                    next = evolve.Start(new RunOptions { Prompt = "y" });
                    next.Wait();
                });
                Check.True(inHandler is BusyException, "Wait for the next run from a handler: " + inHandler);
                Check.True(next != null && next.Wait(TimeSpan.FromSeconds(30)).State == RunState.Completed, "the next run ends");
            }
            // Run (start and wait) from a handler is refused before it starts anything: no run is
            // left behind that nobody could wait for or cancel.
            using (var evolve = new Evolve(TestEnv.Fake("claude", System.IO.Path.Combine(TestEnv.Golden, "claude", "s1-text"))))
            {
                int ends = 0;
                evolve.On("lifecycle", e =>
                {
                    if (GoldenTests.IsTerminal(e.Lifecycle.Reason))
                    {
                        Interlocked.Increment(ref ends);
                    }
                });
                var inHandler = ThrownAtTheFirstTerminal(evolve, () => evolve.Run(new RunOptions { Prompt = "y" }));
                Check.True(inHandler is BusyException, "Run from a handler: " + inHandler);
                var after = evolve.Start(new RunOptions { Prompt = "z" });
                Check.True(after.Wait(TimeSpan.FromSeconds(30)).State == RunState.Completed, "nothing was left running: the next start works");
                Check.Equal(2, Volatile.Read(ref ends), "two runs ended: the refused Run started none");
            }
        }

        /// <summary>
        /// Runs <paramref name="evolve"/> once; its handler of the first terminal lifecycle event calls
        /// <paramref name="inHandler"/>. What that threw (null: nothing).
        /// </summary>
        static Exception ThrownAtTheFirstTerminal(Evolve evolve, Action inHandler)
        {
            Exception thrown = null;
            int terminals = 0;
            evolve.On("lifecycle", e =>
            {
                if (!GoldenTests.IsTerminal(e.Lifecycle.Reason) || Interlocked.Increment(ref terminals) != 1)
                {
                    return;
                }
                try
                {
                    inHandler();
                }
                catch (Exception x)
                {
                    thrown = x;
                }
            });
            var first = evolve.Start(new RunOptions { Prompt = "x" });
            Check.True(first.Wait(TimeSpan.FromSeconds(30)).State == RunState.Completed, "the first run ends");
            return thrown;
        }
    }
}
