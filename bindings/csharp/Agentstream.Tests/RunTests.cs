using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Agentstream.Tests
{
    /// <summary>One thing a handler got: a delivery of a channel, or a hook event.</summary>
    sealed class Seen
    {
        public Event Item;
        public AgentEvent Hook;

        public bool IsHook { get { return Hook != null; } }
        public Channel? Channel { get { return Item == null ? null : Item.Channel; } }
        public ulong Sequence { get { return Item != null ? Item.Sequence : Hook.Sequence; } }
        public string RunId { get { return Item != null ? Item.RunId : Hook.RunId; } }
        public OutputEvent Content { get { return Item == null ? null : Item.Content; } }
        public LifecycleEvent Lifecycle { get { return Item == null ? null : Item.Lifecycle; } }
        public string Text { get { return Item == null ? null : Item.Text; } }
    }

    /// <summary>What a run's handlers saw, in order, and on which threads.</summary>
    sealed class Recorder
    {
        readonly List<Seen> events = new List<Seen>();
        readonly HashSet<int> threads = new HashSet<int>();

        public void Attach(Evolve evolve)
        {
            foreach (var channel in new[] { "content", "lifecycle", "stdout", "stderr" })
            {
                evolve.On(channel, Record);
            }
        }

        void Add(Seen seen)
        {
            lock (events)
            {
                events.Add(seen);
                threads.Add(Thread.CurrentThread.ManagedThreadId);
            }
        }

        public void Record(Event e)
        {
            Add(e.IsHook ? new Seen { Hook = e.Hook } : new Seen { Item = e });
        }

        public void OnEvent(AgentEvent hook)
        {
            Add(new Seen { Hook = hook });
        }

        public List<Seen> Events
        {
            get { lock (events) { return events.ToList(); } }
        }

        public HashSet<int> Threads
        {
            get { lock (events) { return new HashSet<int>(threads); } }
        }

        public int Count(Channel channel)
        {
            return Events.Count(e => e.Channel == channel);
        }

        public List<LifecycleReason> Reasons()
        {
            return Events.Where(e => e.Lifecycle != null).Select(e => e.Lifecycle.Reason).ToList();
        }

        public List<AgentEvent> Hooks()
        {
            return Events.Where(e => e.IsHook).Select(e => e.Hook).ToList();
        }

        public string Text(Channel channel)
        {
            return string.Concat(Events.Where(e => e.Channel == channel).Select(e => e.Text));
        }

        public void OneTerminalLast()
        {
            var items = Events.Where(e => !e.IsHook).ToList();
            var terminals = items.Where(e => e.Lifecycle != null && GoldenTests.IsTerminal(e.Lifecycle.Reason)).ToList();
            Check.Equal(1, terminals.Count, "terminal lifecycle events");
            Check.True(ReferenceEquals(terminals[0], items.Last()), "the terminal is the last item");
            var hooks = Hooks();
            var terminalHooks = new[] { "run.completed", "run.failed", "run.cancelled", "run.stopped" };
            if (hooks.Count > 0)
            {
                Check.Equal(1, hooks.Count(h => terminalHooks.Contains(h.Type)), "terminal hook events");
                Check.True(terminalHooks.Contains(hooks.Last().Type), "the terminal hook is the last hook");
            }
        }
    }

    /// <summary>Real runs of the fake harness (target/release/fake-harness: a golden trace replayed as a real process).</summary>
    static class RunTests
    {
        static string Trace(string agent, string name)
        {
            return Path.Combine(TestEnv.Golden, agent, name);
        }

        static Evolve Fake(string agent, string name, params string[] env)
        {
            var evolve = new Evolve(TestEnv.Fake(agent, Trace(agent, name), env));
            evolve.HandlerFailed += (s, e) => { };
            return evolve;
        }

        [Test]
        static async Task EveryCaptureRunsLikeItsGoldenFiles()
        {
            int runs = 0;
            foreach (var c in TestEnv.GoldenCases().Where(g => g.IsCapture))
            {
                using (var evolve = Fake(c.Agent, Path.GetFileName(c.Prefix)))
                {
                    var rec = new Recorder();
                    rec.Attach(evolve);
                    int caller = Thread.CurrentThread.ManagedThreadId;
                    var result = await evolve.RunAsync(new RunOptions { Prompt = "replay", OnEvent = rec.OnEvent });
                    runs++;
                    Check.True(result.State == RunState.Completed || File.ReadAllText(c.Prefix + ".meta.json").Contains("\"exit_code\": 1"), c.Name + ": " + result);
                    Check.Equal(0UL, result.HandlerErrors, c.Name + ": handler errors");
                    Check.True(!rec.Threads.Contains(caller) && rec.Threads.Count == 1, c.Name + ": every handler call on one thread that is not the caller's");
                    var reasons = rec.Reasons();
                    Check.Equal(LifecycleReason.SandboxReady, reasons[0], c.Name + ": first lifecycle");
                    Check.Equal(LifecycleReason.RunStart, reasons[1], c.Name + ": second lifecycle");
                    rec.OneTerminalLast();

                    // Sequence order: the n-th item is sequence n-1; each hook refers to an item already delivered.
                    ulong next = 0;
                    foreach (var e in rec.Events)
                    {
                        if (e.IsHook)
                        {
                            Check.True(next > 0 && e.Hook.Sequence < next, c.Name + ": hook " + e.Hook.Type + " after its item");
                            Check.Equal(result.RunId, e.Hook.RunId, c.Name + ": hook run id");
                            continue;
                        }
                        Check.Equal(next++, e.Sequence, c.Name + ": sequence");
                        Check.Equal(result.RunId, e.RunId, c.Name + ": run id");
                    }
                    Check.Equal(result.LastSequence, next - 1, c.Name + ": last sequence");

                    var expected = c.Expected();
                    var content = rec.Events.Where(e => e.Content != null).Select(e => AgentstreamJson.Serialize(e.Content)).ToList();
                    Check.Equal(expected.Count, content.Count, c.Name + ": content events");
                    for (int i = 0; i < expected.Count; i++)
                    {
                        Check.JsonEqual(expected[i], content[i], c.Name + ": content event " + (i + 1));
                    }
                    Check.Equal(File.ReadAllText(c.Input), rec.Text(Channel.Stdout), c.Name + ": stdout is the trace");
                    var stderr = c.Prefix + ".stderr.txt";
                    Check.Equal(File.Exists(stderr) ? File.ReadAllText(stderr) : "", rec.Text(Channel.Stderr), c.Name + ": stderr is the trace's");

                    // The golden hook view (run id, timestamps and sequence numbers differ in a live run).
                    var golden = c.Hooks().Select(l => AgentstreamJson.Deserialize<AgentEvent>(l)).ToList();
                    var hooks = rec.Hooks();
                    Check.Equal(golden.Count, hooks.Count, c.Name + ": hook events");
                    for (int i = 0; i < golden.Count; i++)
                    {
                        Check.Equal(golden[i].Type, hooks[i].Type, c.Name + ": hook " + i);
                        Check.Equal(golden[i].Status, hooks[i].Status, c.Name + ": hook status " + i);
                        Check.Equal(golden[i].AgentId, hooks[i].AgentId, c.Name + ": hook agent " + i);
                        Check.JsonEqual(AgentstreamJson.Serialize(golden[i].Details), AgentstreamJson.Serialize(hooks[i].Details), c.Name + ": hook details " + i);
                        Check.True(Math.Abs((hooks[i].Time - DateTimeOffset.UtcNow).TotalMinutes) < 5, "a live hook's time is now");
                    }
                }
            }
            Check.True(runs >= 14, "captures run: " + runs);
        }

        [Test]
        static void StreamYieldsEverythingInOrderAndEndsAfterTheTerminal()
        {
            using (var evolve = Fake("codex", "s2-bash"))
            {
                var seen = new List<Event>();
                using (var stream = evolve.Stream(new RunOptions { Prompt = "x", Hooks = true }))
                {
                    int caller = Thread.CurrentThread.ManagedThreadId;
                    foreach (var e in stream)
                    {
                        Check.Equal(caller, Thread.CurrentThread.ManagedThreadId, "a stream is read on the caller's thread");
                        seen.Add(e);
                    }
                    var result = stream.Result;
                    Check.Equal(RunState.Completed, result.State, "state");
                    var items = seen.Where(e => !e.IsHook).ToList();
                    for (int i = 0; i < items.Count; i++)
                    {
                        Check.Equal((ulong)i, items[i].Sequence, "gapless sequence");
                    }
                    Check.Equal(result.LastSequence, items.Last().Sequence, "the last item is the last sequence");
                    Check.True(GoldenTests.IsTerminal(items.Last().Lifecycle.Reason), "the last item is the terminal");
                    Check.Equal("run.completed", seen.Last().Hook.Type, "the stream ends with the terminal hook");
                    Check.True(seen.Any(e => e.Channel == Channel.Stdout) && seen.Any(e => e.Content != null), "every channel is read");
                    Check.Throws<InvalidOperationException>(() => stream.GetEnumerator(), "a stream is read once");
                }
                Check.Equal(false, evolve.Status.ActiveRunId != null, "no active run after the stream");
            }
        }

        [Test]
        static void LeavingAStreamEarlyCancelsTheRun()
        {
            using (var evolve = Fake("claude", "s2-bash", "AGENTSTREAM_FAKE_HANG", "1"))
            {
                var stream = evolve.Stream(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) });
                Check.Throws<StillRunningException>(() => { var r = stream.Result; }, "result before the end");
                foreach (var e in stream)
                {
                    if (e.Channel == Channel.Content)
                    {
                        break;
                    }
                }
                var result = stream.Result;
                Check.Equal(RunState.Cancelled, result.State, "state");
                Check.Equal(CancelKind.ReaderLeft, result.CancelKind, "cancel kind");
                Check.Equal(null, evolve.Status.ActiveRunId, "the run ended");
            }
        }

        [Test]
        static void CancellingAStreamEndsItWithTheReasonAndItsPressureIsLive()
        {
            using (var evolve = Fake("claude", "s2-bash", "AGENTSTREAM_FAKE_HANG", "1"))
            {
                using (var stream = evolve.Stream(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) }))
                {
                    var events = 0;
                    Event last = null;
                    foreach (var e in stream)
                    {
                        if (++events == 1)
                        {
                            var pressure = stream.Pressure;
                            Check.True(pressure != null && pressure.Peak >= pressure.Buffered, "live pressure");
                            stream.Cancel("stop here");
                        }
                        last = e;
                    }
                    Check.True(last != null && last.Channel == Channel.Lifecycle && GoldenTests.IsTerminal(last.Lifecycle.Reason), "the stream ends with its terminal event");
                    var result = stream.Result;
                    Check.Equal(RunState.Cancelled, result.State, "state");
                    Check.Equal(CancelKind.Caller, result.CancelKind, "cancel kind");
                    Check.True(result.CancelReason.EndsWith("stop here"), "the reason given: " + result.CancelReason);
                }
            }
        }

        [Test]
        static void DisposingAStreamWhileItIsReadEndsTheEnumeration()
        {
            using (var evolve = Fake("claude", "s2-bash", "AGENTSTREAM_FAKE_DELAY_MS", "20"))
            {
                // From its own OnEvent, which then throws: that hook is not handed over, and the
                // failure is reported (not an ObjectDisposedException out of the foreach).
                var reported = new List<string>();
                evolve.HandlerFailed += (sender, e) => reported.Add(e.Channel);
                RunStream stream = null;
                stream = evolve.Stream(new RunOptions
                {
                    Prompt = "x",
                    KillGrace = TimeSpan.FromMilliseconds(200),
                    OnEvent = h =>
                    {
                        stream.Dispose();
                        throw new InvalidOperationException("thrown after the dispose");
                    },
                });
                int read = 0;
                int hooksRead = 0;
                foreach (var e in stream)
                {
                    read++;
                    if (e.Hook != null)
                    {
                        hooksRead++;
                    }
                }
                Check.True(read > 0, "read until the dispose: " + read);
                Check.Equal(0, hooksRead, "the hook whose OnEvent disposed the stream is not handed over");
                Check.Equal(RunState.Cancelled, stream.Result.State, "the run was left");
                Check.Equal("on_event", string.Join(",", reported), "the failure after the dispose is reported");
                // From another thread, while the reader waits for the next batch.
                var other = evolve.Stream(new RunOptions { Prompt = "y", KillGrace = TimeSpan.FromMilliseconds(200) });
                var disposer = new Thread(() => { Thread.Sleep(100); other.Dispose(); });
                disposer.Start();
                int more = 0;
                foreach (var e in other)
                {
                    more++;
                }
                // Not joined first: once the enumeration ended, the result is there (the reader's
                // end waits for the other thread's dispose to finish).
                Check.Equal(RunState.Cancelled, other.Result.State, "the other run was left too");
                disposer.Join();
            }
        }

        [Test]
        static void AStreamDroppedUndisposedIsCollectedWhileItsTokenLives()
        {
            using (var cts = new CancellationTokenSource())
            using (var evolve = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_HANG", "1"))
            {
                StartAndDrop(evolve, cts.Token);
                // The token's registration held the run's handle: never finalized, the run went
                // on (and held this Evolve) for as long as the token lived.
                var deadline = DateTime.UtcNow.AddSeconds(20);
                while (evolve.Status.ActiveRunId != null)
                {
                    Check.True(DateTime.UtcNow < deadline, "the dropped stream's run is still active");
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    Thread.Sleep(50);
                }
            }
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        static void StartAndDrop(Evolve evolve, CancellationToken token)
        {
            evolve.Stream(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) }, token);
        }

        [Test]
        static async Task CancellationTokenCancelsTheRunThroughTheCore()
        {
            using (var evolve = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_HANG", "1"))
            {
                var rec = new Recorder();
                rec.Attach(evolve);
                using (var cts = new CancellationTokenSource(TimeSpan.FromMilliseconds(300)))
                {
                    var e = await CheckAsync.Throws<CancelledException>(
                        () => evolve.RunAsync(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) }, cts.Token), "RunAsync");
                    Check.True(e is OperationCanceledException, "a CancelledException is an OperationCanceledException");
                    Check.Equal(cts.Token, e.CancellationToken, "the exception's token");
                    Check.Equal(RunState.Cancelled, e.Result.State, "the result it carries");
                    Check.Equal(CancelKind.Caller, e.Result.CancelKind, "cancel kind");
                }
                Check.Equal(LifecycleReason.RunInterrupted, rec.Reasons().Last(), "the run ended interrupted");
                rec.OneTerminalLast();

                // A token already cancelled: the run is cancelled at once.
                var cancelled = new CancellationToken(true);
                Check.Throws<CancelledException>(() => evolve.Run(new RunOptions { Prompt = "x" }, cancelled), "Run with a cancelled token");

                // A stream: the token cancels the run, and the sequence ends with its terminal.
                using (var cts = new CancellationTokenSource(TimeSpan.FromMilliseconds(300)))
                using (var stream = evolve.Stream(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) }, cts.Token))
                {
                    var last = stream.Last(ev => !ev.IsHook);
                    Check.Equal(LifecycleReason.RunInterrupted, last.Lifecycle.Reason, "the stream's terminal");
                    Check.Equal(RunState.Cancelled, stream.Result.State, "stream result");
                }

                // WaitAsync with its own token cancels the run it waits for.
                var run = evolve.Start(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) });
                using (var cts = new CancellationTokenSource(TimeSpan.FromMilliseconds(200)))
                {
                    await CheckAsync.Throws<CancelledException>(() => run.WaitAsync(cts.Token), "WaitAsync");
                }
                Check.Equal(RunState.Cancelled, run.Result.State, "the waited run was cancelled");
            }
        }

        [Test]
        static void AThrowingHandlerIsReportedOnceWithItsStackAndCounted()
        {
            using (var evolve = Fake("claude", "s2-bash"))
            {
                var reports = new List<HandlerFailedEventArgs>();
                evolve.HandlerFailed += (sender, e) =>
                {
                    lock (reports)
                    {
                        reports.Add(e);
                    }
                    throw new InvalidOperationException("a failing report does not stop the run");
                };
                int throwingCalls = 0, goodCalls = 0, hookCalls = 0;
                evolve.On("content", e => { throwingCalls++; Thrower.Throw("content handler"); });
                evolve.On("content", e => goodCalls++);
                var result = evolve.Run(new RunOptions
                {
                    Prompt = "x",
                    OnEvent = h => { hookCalls++; throw new ArgumentException("hook handler"); },
                });
                Check.Equal(RunState.Completed, result.State, "the run goes on");
                Check.Equal(8, throwingCalls, "the throwing handler got every event");
                Check.Equal(8, goodCalls, "the next handler got every event");
                Check.Equal((ulong)(throwingCalls + hookCalls), result.HandlerErrors, "every failure is counted");
                Check.Equal(2, reports.Count, "one report per failing handler");
                var content = reports.Single(r => r.Channel == "content");
                Check.Equal(result.RunId, content.RunId, "report run id");
                Check.Contains(content.Exception.StackTrace, "Thrower.Throw", "the report carries the stack");
                Check.Contains(content.ToString(), "content handler", "the report's text");
                var hook = reports.Single(r => r.Channel == "on_event");
                Check.True(hook.Exception is ArgumentException, "the hook handler's exception");
            }
        }

        sealed class UnreadableException : Exception
        {
            public override string Message
            {
                get { throw new InvalidOperationException("no message for you"); }
            }
        }

        [Test]
        static void AnExceptionWhoseMessageCannotBeReadIsCountedAndTheRunGoesOn()
        {
            using (var evolve = Fake("claude", "s2-bash"))
            {
                var reports = new List<HandlerFailedEventArgs>();
                evolve.HandlerFailed += (sender, e) =>
                {
                    lock (reports)
                    {
                        reports.Add(e);
                    }
                };
                int calls = 0;
                evolve.On("content", e => { calls++; throw new UnreadableException(); });
                // Before, describing the exception threw, and the run was cancelled.
                var result = evolve.Run(new RunOptions { Prompt = "x" });
                Check.Equal(RunState.Completed, result.State, "the run goes on");
                Check.Equal((ulong)calls, result.HandlerErrors, "every failure is counted");
                Check.Equal(1, reports.Count, "one report");
                Check.Contains(reports[0].ToString(), "its message could not be read", "the report's text");
            }
        }

        [Test]
        static void WithoutASubscriberFailuresAreWrittenToStandardError()
        {
            var saved = Console.Error;
            var captured = new StringWriter();
            Console.SetError(captured);
            try
            {
                using (var evolve = new Evolve(TestEnv.Fake("claude", Trace("claude", "s1-text"))))
                {
                    evolve.On("lifecycle", e => Thrower.Throw("lifecycle handler"));
                    var result = evolve.Run(new RunOptions { Prompt = "x" });
                    Check.Equal(3UL, result.HandlerErrors, "counted");
                }
            }
            finally
            {
                Console.SetError(saved);
            }
            var text = captured.ToString();
            Check.Contains(text, "a lifecycle handler of run", "the report");
            Check.Contains(text, "Thrower.Throw", "the stack");
            Check.Equal(1, text.Split(new[] { "agentstream: " }, StringSplitOptions.None).Length - 1, "reported once");
        }

        [Test]
        static void PauseAndResume()
        {
            using (var evolve = Fake("gemini", "s2-bash", "AGENTSTREAM_FAKE_DELAY_MS", "60"))
            {
                Check.Throws<NotRunningException>(() => evolve.Pause(), "pause when idle");
                Check.Throws<NotRunningException>(() => evolve.Resume(), "resume when idle");
                var rec = new Recorder();
                rec.Attach(evolve);
                var run = evolve.Start(new RunOptions { Prompt = "x" });
                Thread.Sleep(150);
                evolve.Pause();
                Check.Equal(SandboxState.Paused, evolve.Status.Sandbox, "paused");
                Thread.Sleep(150);
                int before = rec.Count(Channel.Stdout);
                Thread.Sleep(400);
                int during = rec.Count(Channel.Stdout);
                Check.True(during == before && before < 12, "no output while paused: " + before + " then " + during);
                evolve.Resume();
                var result = run.Wait();
                Check.Equal(RunState.Completed, result.State, "state");
                Check.Equal(12, rec.Count(Channel.Stdout), "every line after resuming");
                Check.True(rec.Reasons().SequenceEqual(new[]
                {
                    LifecycleReason.SandboxReady, LifecycleReason.RunStart, LifecycleReason.SandboxPause,
                    LifecycleReason.SandboxResume, LifecycleReason.RunComplete,
                }), "lifecycle: " + string.Join(", ", rec.Reasons()));
            }
        }

        [Test]
        static void InterruptKillAndOneRunAtATime()
        {
            using (var evolve = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_HANG", "1"))
            {
                Check.Equal(false, evolve.Interrupt(), "nothing to interrupt");
                Check.Equal(false, evolve.Kill(), "nothing to kill");
                var run = evolve.Start(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(200) });
                Check.True(evolve.Status.ActiveRunId == run.Id && evolve.Status.HasRun, "status while running");
                var busy = Check.Throws<AlreadyRunningException>(() => evolve.Run(new RunOptions { Prompt = "y" }), "a second run");
                Check.True(busy is InvalidOperationException, "AlreadyRunning is an InvalidOperationException");
                Check.Equal(true, evolve.Interrupt("enough"), "interrupted");
                var result = run.Wait(TimeSpan.FromSeconds(30));
                Check.Equal(RunState.Cancelled, result.State, "state");
                Check.Contains(result.CancelReason, "enough", "the reason");

                var killer = Task.Run(() => { Thread.Sleep(200); return evolve.Kill(); });
                result = evolve.Run(new RunOptions { Prompt = "x" });
                Check.True(killer.Result, "killed");
                Check.Equal(RunState.Cancelled, result.State, "killed state");
                Check.Equal(9, result.Signal, "SIGKILL");
                Check.Equal(RunState.Cancelled, evolve.Status.LastStatus, "last status");
            }
        }

        [Test]
        static void TimeoutStopsTheRun()
        {
            using (var evolve = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_HANG", "1"))
            {
                var hooks = new List<string>();
                var result = evolve.Run(new RunOptions
                {
                    Prompt = "x",
                    Timeout = TimeSpan.FromMilliseconds(300),
                    KillGrace = TimeSpan.FromMilliseconds(100),
                    OnEvent = h => hooks.Add(h.Type),
                });
                Check.Equal(RunState.Cancelled, result.State, "state");
                Check.Equal(CancelKind.Timeout, result.CancelKind, "cancel kind");
                Check.Equal("run.stopped", hooks.Last(), "the terminal hook");
                Check.True(result.Duration >= TimeSpan.FromMilliseconds(250), "duration " + result.Duration);
            }
        }

        [Test]
        static void AHarnessKilledMidLineFails()
        {
            using (var evolve = Fake("claude", "s2-bash", "AGENTSTREAM_FAKE_DIE_MID_LINE", "1"))
            {
                var rec = new Recorder();
                rec.Attach(evolve);
                var result = evolve.Run(new RunOptions { Prompt = "x" });
                Check.Equal(RunState.Failed, result.State, "state");
                Check.Equal(9, result.Signal, "signal");
                Check.Equal(LifecycleReason.RunFailed, rec.Reasons().Last(), "terminal");
                rec.OneTerminalLast();
            }
        }

        [Test]
        static void AMissingHarnessIsHarnessNotFound()
        {
            using (var evolve = new Evolve(new AgentConfig { Type = "codex", Bin = "/nonexistent/codex-not-installed" }))
            {
                var e = Check.Throws<HarnessNotFoundException>(() => evolve.Start(new RunOptions { Prompt = "x" }), "missing harness");
                Check.Contains(e.Message, "/nonexistent/codex-not-installed", "the message names the path");
                Check.Equal(ErrorKind.HarnessNotFound, e.Kind, "kind");
                Check.Equal(1001, e.Code, "code");
                Check.Equal(false, evolve.Status.HasRun, "nothing ran");
            }
        }

        [Test]
        static void SuccessiveRunsContinueTheConversation()
        {
            var dir = TestEnv.TempDir();
            var argvFile = Path.Combine(dir, "argv.json");
            using (var evolve = Fake("claude", "s2-bash", "AGENTSTREAM_FAKE_ARGV_FILE", argvFile))
            {
                Func<string> argv = () => string.Join(" ", AgentstreamJson.Deserialize<object>(File.ReadAllText(argvFile)) is List<object>
                    ? ((List<object>)AgentstreamJson.Deserialize<object>(File.ReadAllText(argvFile))).Cast<string>() : new string[0]).Replace("--resume=", "--resume ");
                Func<RunOptions, string> turn = options =>
                {
                    var hooks = new List<string>();
                    options.OnEvent = h => hooks.Add(h.Type);
                    var result = evolve.Run(options);
                    Check.Equal(RunState.Completed, result.State, "turn state");
                    return hooks[0];
                };
                Check.Equal(null, evolve.SessionId, "no session before the first run");
                Check.Equal("run.started", turn(new RunOptions { Prompt = "first" }), "first turn");
                string session = evolve.SessionId;
                Check.Equal("66c0abf3-0bc5-46a7-8e73-4fef192280ea", session, "the session the run reported");
                Check.Equal("run.resumed", turn(new RunOptions { Prompt = "second" }), "second turn");
                Check.Contains(argv(), "--resume " + session, "argv of the second turn");
                evolve.SessionId = null;
                Check.Equal("run.started", turn(new RunOptions { Prompt = "fresh" }), "fresh turn");
                Check.True(!argv().Contains("--resume"), "a fresh turn does not resume");
                Check.Equal("run.resumed", turn(new RunOptions { Prompt = "explicit", Resume = "explicit-session" }), "explicit resume");
                Check.Contains(argv(), "--resume explicit-session", "argv of the explicit resume");
                var bad = Check.Throws<ArgumentException>(() => evolve.SessionId = "-rf", "a session id that reads as an option");
                Check.True(bad is InvalidArgumentException, "the core's InvalidArgument");
                var status = evolve.Status;
                Check.True(status.Agent == "claude" && status.HasRun && status.SessionId == session && status.LastStatus == RunState.Completed, "status " + status);
            }
            Directory.Delete(dir, true);
        }

        [Test]
        static void CommandRunsStreamTheirOutput()
        {
            using (var evolve = new Evolve(new AgentConfig { Type = "claude" }))
            {
                var rec = new Recorder();
                rec.Attach(evolve);
                var result = evolve.Run(new RunOptions { Command = new[] { "sh", "-c", "echo out; echo err >&2; exit 3" } });
                Check.Equal(RunState.Failed, result.State, "a failing command");
                Check.Equal(3, result.ExitCode, "exit code");
                Check.Equal("out\n", rec.Text(Channel.Stdout), "stdout");
                Check.Equal("err\n", rec.Text(Channel.Stderr), "stderr");
                Check.Equal(LifecycleReason.CommandStart, rec.Reasons()[1], "command start");
                Check.Equal(LifecycleReason.CommandFailed, rec.Reasons().Last(), "command failed");
                Check.Throws<InvalidArgumentException>(() => evolve.Run(new RunOptions { Command = new[] { "true" }, Prompt = "x" }), "prompt and command");
            }
            // Per-run Cwd and Env over the agent's, for that run only.
            var dir = TestEnv.TempDir();
            using (var evolve = new Evolve(new AgentConfig { Type = "claude", Env = new Dictionary<string, string> { { "A", "agent" }, { "B", "agent" } } }))
            {
                var rec = new Recorder();
                rec.Attach(evolve);
                var command = new[] { "sh", "-c", "pwd; echo $A $B" };
                evolve.Run(new RunOptions { Command = command, Cwd = dir, Env = new Dictionary<string, string> { { "A", "run" } } });
                Check.Equal(new DirectoryInfo(dir).FullName + "\nrun agent\n", rec.Text(Channel.Stdout), "this run's cwd and env");
                var again = new Recorder();
                evolve.Off("stdout");
                evolve.On("stdout", again.Record);
                evolve.Run(new RunOptions { Command = command });
                Check.True(again.Text(Channel.Stdout).EndsWith("agent agent\n") && !again.Text(Channel.Stdout).StartsWith(dir), "the next run has the agent's: " + again.Text(Channel.Stdout));
            }
            Directory.Delete(dir, true);
        }

        [Test]
        static void HandlersChangeDuringARun()
        {
            using (var evolve = Fake("gemini", "s2-bash", "AGENTSTREAM_FAKE_DELAY_MS", "40"))
            {
                int first = 0, late = 0;
                IDisposable late1 = null;
                var firstSub = evolve.On("stdout", e =>
                {
                    if (Interlocked.Increment(ref first) == 3)
                    {
                        late1 = evolve.On("stdout", x => Interlocked.Increment(ref late));
                    }
                });
                var run = evolve.Start(new RunOptions { Prompt = "x" });
                Check.Equal(RunState.Completed, run.Wait().State, "state");
                Check.Equal(12, first, "the first handler got every line");
                Check.True(late > 0 && late < 12, "a handler added during the run got the rest of it: " + late);
                firstSub.Dispose();
                int before = first;
                evolve.Off("stdout");
                evolve.Run(new RunOptions { Prompt = "x" });
                Check.Equal(before, first, "removed handlers are not called");
                late1.Dispose(); // after Off: nothing left to remove, no error
            }
        }

        [Test]
        static void NoRemovedHandlerRunsAfterOffReturns()
        {
            using (var evolve = Fake("gemini", "s2-bash", "AGENTSTREAM_FAKE_DELAY_MS", "20"))
            {
                int calls = 0, inFlight = 0;
                evolve.On("stdout", e =>
                {
                    Interlocked.Exchange(ref inFlight, 1);
                    Interlocked.Increment(ref calls);
                    Thread.Sleep(60);
                    Interlocked.Exchange(ref inFlight, 0);
                });
                var run = evolve.Start(new RunOptions { Prompt = "x" });
                while (Volatile.Read(ref calls) < 2)
                {
                    Thread.Sleep(5);
                }
                evolve.Off("stdout");
                Check.Equal(0, Volatile.Read(ref inFlight), "a call in progress finished before Off returned");
                int after = Volatile.Read(ref calls);
                Check.Equal(RunState.Completed, run.Wait().State, "the run goes on");
                Check.Equal(after, calls, "no call after Off");
                Check.True(after < 12, "Off came during the run: " + after);
            }
        }

        [Test]
        static void BackgroundRunsReturnAtOnce()
        {
            using (var evolve = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_DELAY_MS", "100"))
            {
                var run = evolve.Start(new RunOptions { Prompt = "x", Background = true });
                Check.Equal(false, run.IsCompleted, "started in the background");
                Check.Throws<StillRunningException>(() => { var r = run.Result; }, "result before the end");
                var result = run.Completion.Result;
                Check.Equal(RunState.Completed, result.State, "state");
                Check.Equal(result.RunId, run.Id, "id");
                Check.True(run.Pressure != null, "pressure after the end");
            }
        }

        [Test]
        static void DisposingTheEvolveKillsItsRunAndStopsItsHandlers()
        {
            var evolve = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_HANG", "1");
            int calls = 0;
            evolve.On("lifecycle", e => Interlocked.Increment(ref calls));
            var run = evolve.Start(new RunOptions { Prompt = "x" });
            Thread.Sleep(200);
            evolve.Dispose();
            int after = calls;
            var result = run.Wait(TimeSpan.FromSeconds(30));
            Check.Equal(RunState.Cancelled, result.State, "killed");
            Check.Equal(after, calls, "no handler call after Dispose");
        }

        [Test]
        static void BudgetLimitsConcurrentRuns()
        {
            using (var budget = new Budget(1 << 20, 1))
            using (var a = Fake("claude", "s1-text", "AGENTSTREAM_FAKE_HANG", "1"))
            using (var b = Fake("claude", "s1-text"))
            {
                a.SetBudget(budget);
                b.SetBudget(budget);
                var run = a.Start(new RunOptions { Prompt = "x", KillGrace = TimeSpan.FromMilliseconds(100) });
                Check.Equal(1, budget.Active, "one permit taken");
                Check.Throws<InvalidArgumentException>(() => b.Start(new RunOptions { Prompt = "y" }), "every permit taken");
                run.Cancel();
                run.Wait();
                Check.Equal(RunState.Completed, b.Run(new RunOptions { Prompt = "y" }).State, "a permit again");
                b.SetBudget(null);
            }
        }
    }

    static class Thrower
    {
        public static void Throw(string what)
        {
            throw new InvalidOperationException(what + " fails");
        }
    }

    static class CheckAsync
    {
        public static async Task<T> Throws<T>(Func<Task> action, string what) where T : Exception
        {
            try
            {
                await action();
            }
            catch (T e)
            {
                return e;
            }
            catch (Exception e)
            {
                throw new CheckFailed(what + ": expected a " + typeof(T).Name + ", got " + e.GetType().Name + ": " + e.Message);
            }
            throw new CheckFailed(what + ": expected a " + typeof(T).Name + ", nothing was thrown");
        }
    }
}
