using System;
using System.Threading;
using System.Threading.Tasks;
using Agentstream.Interop;

namespace Agentstream
{
    /// <summary>
    /// One configured agent, its handlers, and the runs started from it, one at a time (the seed's
    /// <c>Evolve</c>). Successive runs continue the same harness conversation (see
    /// <see cref="SessionId"/>). Safe to use from several threads. Dispose it when done: an active
    /// run is killed (a forgotten one is freed by the finalizer of its native handle).
    /// </summary>
    /// <example>
    /// <code>
    /// using (var evolve = new Evolve(new AgentConfig { Type = "claude" }))
    /// {
    ///     evolve.On("content", e => Console.WriteLine(e.Content.Update.SessionUpdateKind));
    ///     RunResult result = await evolve.RunAsync(new RunOptions { Prompt = "List the files" });
    /// }
    /// </code>
    /// </example>
    public sealed class Evolve : IDisposable
    {
        /// <summary>The handler id <see cref="RunOptions.OnEvent"/>'s failures are counted under (subscription ids are small numbers from 1).</summary>
        internal const ulong OnEventHandlerId = ulong.MaxValue - 1;

        readonly SessionHandle handle;
        readonly AgentConfig config;
        internal readonly Subscriptions Subscriptions = new Subscriptions();

        /// <summary>
        /// Held while a run calls the handlers of one delivery; removing handlers takes it once after
        /// marking them removed, so no call of a removed handler starts, or is still running on another
        /// thread, after Off, a registration's Dispose or Dispose returned. (Taken after the
        /// subscription lock is released: a handler may call On and Off.)
        /// </summary>
        internal readonly object DispatchGate = new object();

        void WaitForHandlersInFlight()
        {
            lock (DispatchGate)
            {
            }
        }

        /// <summary>
        /// An agent for <paramref name="config"/>. A bad configuration is an
        /// <see cref="InvalidArgumentException"/> (an <see cref="ArgumentException"/>) naming the
        /// property; an unknown agent's message lists the valid names.
        /// </summary>
        public Evolve(AgentConfig config)
        {
            if (config == null)
            {
                throw new NullArgumentException("config must not be null: give an AgentConfig with its Type");
            }
            this.config = config.Clone();
            SessionHandle h;
            Native.Check(Native.agentstream_session_new_json(Native.Utf8(this.config.ToJson()), Native.NamingPascal, out h));
            handle = h;
            Agent = Native.StaticString(Native.agentstream_session_agent(handle));
        }

        /// <summary>A copy of the configuration it was made with.</summary>
        public AgentConfig Config
        {
            get { return config.Clone(); }
        }

        /// <summary>The canonical agent name ("claude", "codex", …).</summary>
        public string Agent { get; private set; }

        /// <summary>
        /// The first failure of each handler in each run (an <see cref="On"/> handler or
        /// <see cref="RunOptions.OnEvent"/>), with the exception and its stack; later failures of that
        /// handler in the run are only counted in <see cref="RunResult.HandlerErrors"/>. Raised on the
        /// run's delivery thread. With no subscriber, the report is written to
        /// <see cref="Console.Error"/>. An exception thrown by a subscriber is ignored.
        /// </summary>
        public event EventHandler<HandlerFailedEventArgs> HandlerFailed;

        internal void ReportHandlerFailure(HandlerFailedEventArgs failure)
        {
            try
            {
                var report = HandlerFailed;
                if (report != null)
                {
                    report(this, failure);
                }
                else
                {
                    Console.Error.WriteLine(failure.ToString());
                }
            }
            catch (Exception)
            {
                // A failing report must not stop the run.
            }
        }

        /// <summary>The live native handle, or an <see cref="InvalidHandleException"/> after <see cref="Dispose"/>.</summary>
        SessionHandle Live()
        {
            if (handle.IsClosed)
            {
                throw new InvalidHandleException("this Evolve was disposed: create a new one");
            }
            return handle;
        }

        /// <summary>
        /// Registers <paramref name="handler"/> for the channel <paramref name="name"/>: "content"
        /// (<see cref="Event.Content"/>, the seed's content event), "lifecycle"
        /// (<see cref="Event.Lifecycle"/>), "stdout" or "stderr" (<see cref="Event.Text"/>). Any other
        /// name is an <see cref="InvalidArgumentException"/> (an <see cref="ArgumentException"/>)
        /// listing the four.
        ///
        /// During a run the handlers are called on the run's delivery thread (not the caller's), in
        /// sequence order, one at a time, the handlers of a channel in registration order; one added
        /// during a run gets the rest of it (unless the run started with no handler and no
        /// <c>OnEvent</c>: such a run is only awaited, and the next run calls it). A handler that throws does not stop the run or the other
        /// handlers: its first failure in a run is reported (<see cref="HandlerFailed"/>) and every
        /// failure is counted (<see cref="RunResult.HandlerErrors"/>). A <see cref="RunStream"/> does
        /// not call these handlers: it yields every delivery.
        /// </summary>
        /// <returns>The registration: disposing it removes this one handler.</returns>
        public IDisposable On(string name, Action<Event> handler)
        {
            if (handler == null)
            {
                throw new NullArgumentException("handler must not be null");
            }
            lock (Subscriptions)
            {
                ulong id;
                Native.Check(Native.agentstream_session_subscribe(Live(), Native.Utf8(name), out id));
                var entry = new Subscriptions.Entry { Id = id, Channel = Subscriptions.IndexOf(name), Handler = handler };
                Subscriptions.Add(entry);
                return new Subscription(this, entry);
            }
        }

        /// <summary>
        /// Removes every handler of the channel <paramref name="name"/> (the seed's <c>off(name)</c>);
        /// an unknown name is an <see cref="InvalidArgumentException"/> listing the four, as for
        /// <see cref="On"/>. When it returns, no removed handler runs or will run (a call in progress
        /// on a run's thread is waited for; from inside a handler, that handler's own call goes on).
        /// </summary>
        public void Off(string name)
        {
            lock (Subscriptions)
            {
                UIntPtr removed;
                Native.Check(Native.agentstream_session_off(Live(), Native.Utf8(name), out removed));
                Subscriptions.RemoveChannel(Subscriptions.IndexOf(name));
            }
            WaitForHandlersInFlight();
        }

        internal void Unsubscribe(Subscriptions.Entry entry)
        {
            lock (Subscriptions)
            {
                if (!handle.IsClosed && !entry.Removed)
                {
                    byte removed;
                    Native.Check(Native.agentstream_session_off_id(handle, entry.Id, out removed));
                }
                Subscriptions.Remove(entry);
            }
            WaitForHandlersInFlight();
        }

        /// <summary>
        /// Starts a run and returns at once (the seed's <c>background=True</c>): a harness run of
        /// <see cref="RunOptions.Prompt"/> or a command run of <see cref="RunOptions.Command"/>. It
        /// continues this agent's harness conversation when there is one (its hooks then begin with
        /// <c>run.resumed</c>). Its deliveries go to the <see cref="On"/> handlers and
        /// <see cref="RunOptions.OnEvent"/> from a thread of its own. Cancelling
        /// <paramref name="cancellationToken"/> cancels the run through the library (SIGTERM, then
        /// SIGKILL after the grace period).
        /// </summary>
        /// <exception cref="HarnessNotFoundException">The harness executable was not found.</exception>
        /// <exception cref="AlreadyRunningException">A run is active (one at a time per Evolve; use another Evolve for parallel runs).</exception>
        /// <exception cref="InvalidArgumentException">A bad option (the message names it).</exception>
        public AgentRun Start(RunOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            var channel = StartNative(options, null);
            try
            {
                return new AgentRun(this, channel, options.OnEvent, cancellationToken);
            }
            catch
            {
                Abandon(channel);
                throw;
            }
        }

        /// <summary>
        /// Runs to the end and returns the run's result: <see cref="Start"/>, then its completion. A run
        /// that failed or was interrupted is not an exception: read <see cref="RunResult.State"/>.
        /// When <paramref name="cancellationToken"/> cancelled the run, the task fails with a
        /// <see cref="CancelledException"/> (an <see cref="OperationCanceledException"/>) that carries
        /// the result.
        /// </summary>
        public async Task<RunResult> RunAsync(RunOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            var run = Start(options, cancellationToken);
            var result = await run.Completion.ConfigureAwait(false);
            return AgentRun.ThrowIfCancelledByToken(result, cancellationToken);
        }

        /// <summary>
        /// <see cref="RunAsync"/>, blocking the calling thread until the run ended. From one of this
        /// Evolve's <see cref="On"/> handlers it would wait for itself (the new run's handlers wait for
        /// this one to return): a <see cref="BusyException"/>, and nothing is started.
        /// </summary>
        public RunResult Run(RunOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            // Checked before the start: a run started here could not be handed back to be waited for
            // or cancelled.
            if (Monitor.IsEntered(DispatchGate))
            {
                throw new BusyException("Run was called from a handler of the same Evolve, whose handlers the new run's would wait for: call Start there (and wait from another thread)");
            }
            var run = Start(options, cancellationToken);
            return AgentRun.ThrowIfCancelledByToken(run.Wait(), cancellationToken);
        }

        /// <summary>
        /// Starts a run read as a blocking sequence of every delivery: every channel's items and, with
        /// <see cref="RunOptions.Hooks"/> or <see cref="RunOptions.OnEvent"/>, the hook events; it ends
        /// after the terminal item and its hooks. The <see cref="On"/> handlers are not called
        /// (<see cref="RunOptions.OnEvent"/> is, before each hook event is yielded). Backpressure comes
        /// from the run's own buffer: nothing is read ahead of the enumeration; leaving events unread
        /// for <see cref="RunLimits.Stall"/> (30 s) has the run cancelled. Cancelling
        /// <paramref name="cancellationToken"/> cancels the run: the sequence then ends with its
        /// terminal (<c>run_interrupted</c>). Dispose the stream (or leave a <c>foreach</c>) to stop
        /// reading early: an unfinished run is cancelled.
        /// </summary>
        public RunStream Stream(RunOptions options, CancellationToken cancellationToken = default(CancellationToken))
        {
            var channel = StartNative(options, "iterate");
            try
            {
                return new RunStream(this, channel, options.OnEvent, cancellationToken);
            }
            catch
            {
                Abandon(channel);
                throw;
            }
        }

        RunChannel StartNative(RunOptions options, string read)
        {
            if (options == null)
            {
                throw new NullArgumentException("options must not be null: give RunOptions with a Prompt or a Command");
            }
            string request = options.ToRequestJson(read);
            RunHandle run;
            Native.Check(Native.agentstream_session_start(Live(), Native.Utf8(request), IntPtr.Zero, IntPtr.Zero, IntPtr.Zero, out run));
            try
            {
                return new RunChannel(run);
            }
            catch
            {
                // Cancelled first: freeing a run that nothing reads would leave its process going.
                Native.agentstream_run_cancel(run, Native.Utf8Text("the run could not be handed over"));
                run.Dispose();
                throw;
            }
        }

        /// <summary>
        /// A started run that could not be handed to the caller (its reader could not be set up):
        /// cancelled and freed at once, so that it neither goes on unseen nor holds this Evolve.
        /// </summary>
        static void Abandon(RunChannel channel)
        {
            try
            {
                channel.Cancel("the run could not be handed over");
            }
            finally
            {
                channel.Dispose();
            }
        }

        /// <summary>Stops the active run's process group (SIGSTOP; lifecycle <c>sandbox_pause</c>). A <see cref="NotRunningException"/> when nothing runs.</summary>
        public void Pause()
        {
            Native.Check(Native.agentstream_session_pause(Live()));
        }

        /// <summary>Continues a paused run (SIGCONT; lifecycle <c>sandbox_resume</c>). A <see cref="NotRunningException"/> when nothing runs.</summary>
        public void Resume()
        {
            Native.Check(Native.agentstream_session_resume(Live()));
        }

        /// <summary>
        /// Interrupts the active run: SIGTERM to its process group, SIGKILL after its grace period; it
        /// ends <c>run_interrupted</c> with <paramref name="reason"/>. Whether anything was interrupted
        /// (false when nothing runs).
        /// </summary>
        public bool Interrupt(string reason = "interrupted")
        {
            byte did;
            Native.Check(Native.agentstream_session_interrupt(Live(), Native.Utf8Text(reason), out did));
            return did != 0;
        }

        /// <summary>Ends the active run at once (SIGKILL; lifecycle <c>sandbox_killed</c>, then <c>run_interrupted</c>). Whether anything was killed.</summary>
        public bool Kill()
        {
            byte did;
            Native.Check(Native.agentstream_session_kill(Live(), out did));
            return did != 0;
        }

        /// <summary>
        /// The agent's state (the seed's <c>status()</c>): sandbox and agent state, whether a run was
        /// ever started, the active run, the conversation the next run continues and how the last run
        /// ended.
        /// </summary>
        public EvolveStatus Status
        {
            get
            {
                IntPtr p;
                UIntPtr n;
                Native.Check(Native.agentstream_session_status_json(Live(), out p, out n));
                return EvolveStatus.Parse(Native.TakeString(p, n));
            }
        }

        /// <summary>
        /// The harness session (conversation) the next run continues: the session id the last run
        /// reported, or the one set here (of this agent's runs or another's); null when the next run
        /// starts a new conversation. Set it to null to start fresh. <see cref="RunOptions.Resume"/>
        /// chooses another for one run.
        /// </summary>
        public string SessionId
        {
            get
            {
                IntPtr p;
                UIntPtr n;
                Native.Check(Native.agentstream_session_session_id(Live(), out p, out n));
                return Native.TakeString(p, n);
            }
            set
            {
                Native.Check(Native.agentstream_session_set_session_id(Live(), Native.Utf8(value)));
            }
        }

        /// <summary>
        /// Lets this agent's runs share <paramref name="budget"/> with every other run using it (null:
        /// none): each run takes one of its permits for its lifetime; starting a run when every permit
        /// is taken is an <see cref="InvalidArgumentException"/>.
        /// </summary>
        public void SetBudget(Budget budget)
        {
            if (budget == null)
            {
                Native.Check(Native.agentstream_session_clear_budget(Live(), IntPtr.Zero));
                return;
            }
            Native.Check(Native.agentstream_session_set_budget(Live(), budget.Live()));
        }

        /// <summary>
        /// Frees the agent: an active run is killed (its <see cref="AgentRun"/> still completes with
        /// the result) and no handler runs afterwards (a call in progress on a run's thread is waited for). Calling it again does nothing; other
        /// members then throw an <see cref="InvalidHandleException"/> (an <see cref="ObjectDisposedException"/>).
        /// </summary>
        public void Dispose()
        {
            lock (Subscriptions)
            {
                Subscriptions.RemoveAll();
                handle.Dispose();
            }
            WaitForHandlersInFlight();
        }
    }
}
