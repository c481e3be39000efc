using System;
using System.Threading;
using System.Threading.Tasks;

namespace Agentstream
{
    /// <summary>
    /// One started run (or command): its id, its completion with the <see cref="RunResult"/>, and
    /// the controls. A thread of its own pulls the run's deliveries in batches and calls the
    /// <see cref="Evolve.On"/> handlers and <see cref="RunOptions.OnEvent"/> until the terminal
    /// event; <see cref="Completion"/> completes after the last handler call returned. Safe to use
    /// from several threads.
    /// </summary>
    public sealed class AgentRun
    {
        readonly Evolve owner;
        readonly RunChannel channel;
        readonly Action<AgentEvent> onEvent;
        readonly TaskCompletionSource<RunResult> done =
            new TaskCompletionSource<RunResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        readonly CancellationTokenRegistration registration;
        readonly Thread thread;

        internal AgentRun(Evolve owner, RunChannel channel, Action<AgentEvent> onEvent, CancellationToken token)
        {
            this.owner = owner;
            this.channel = channel;
            this.onEvent = onEvent;
            Id = channel.Id;
            thread = new Thread(Deliver) { IsBackground = true, Name = "agentstream " + Id };
            // Registered before the thread starts: its end disposes the registration.
            if (token.CanBeCanceled)
            {
                registration = token.Register(() => Cancel(RunChannel.TokenReason));
            }
            thread.Start();
        }

        /// <summary>The run's id (<c>run_…</c>).</summary>
        public string Id { get; private set; }

        /// <summary>
        /// Completes with the run's result once it ended and its last handler call returned. A run
        /// that failed or was cancelled completes too (read <see cref="RunResult.State"/>); the task
        /// fails only when the run could not be read (an <see cref="InternalException"/>: a bug).
        /// </summary>
        public Task<RunResult> Completion
        {
            get { return done.Task; }
        }

        /// <summary>Whether the run ended (and its last handler call returned).</summary>
        public bool IsCompleted
        {
            get { return done.Task.IsCompleted; }
        }

        /// <summary>The result once the run ended; a <see cref="StillRunningException"/> before.</summary>
        public RunResult Result
        {
            get
            {
                if (!done.Task.IsCompleted)
                {
                    throw new StillRunningException("run " + Id + " is still running: wait for it (Wait, WaitAsync or Completion)");
                }
                return done.Task.GetAwaiter().GetResult();
            }
        }

        /// <summary>
        /// Blocks until the run ended and returns its result. From one of the run's own handlers it
        /// would wait for itself, and from a handler of any run of the same <see cref="Evolve"/> (a
        /// handler that started the next run) for the handlers it holds back: a
        /// <see cref="BusyException"/>.
        /// </summary>
        public RunResult Wait()
        {
            NotFromAHandler();
            return done.Task.GetAwaiter().GetResult();
        }

        void NotFromAHandler()
        {
            if (Thread.CurrentThread == thread)
            {
                throw new BusyException("run " + Id + " was waited for from one of its own handlers, which would wait for itself: wait from another thread");
            }
            // The On handlers of one Evolve are called one at a time, under its gate: this run's
            // handlers cannot be called while this thread holds it.
            if (Monitor.IsEntered(owner.DispatchGate))
            {
                throw new BusyException("run " + Id + " was waited for from a handler of the same Evolve, whose handlers it would then wait for: wait from another thread");
            }
        }

        /// <summary>
        /// Blocks until the run ended or <paramref name="timeout"/> passed: the result, or a
        /// <see cref="StillRunningException"/> (the run goes on).
        /// </summary>
        public RunResult Wait(TimeSpan timeout)
        {
            NotFromAHandler();
            if (!done.Task.Wait(timeout))
            {
                throw new StillRunningException("run " + Id + " is still running after " + timeout + ": wait again, or cancel it");
            }
            return done.Task.GetAwaiter().GetResult();
        }

        /// <summary>
        /// Waits for the result. When <paramref name="cancellationToken"/> is cancelled first, the run
        /// is cancelled, and the task fails with a <see cref="CancelledException"/> carrying the result.
        /// </summary>
        public async Task<RunResult> WaitAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            using (cancellationToken.Register(() => Cancel(RunChannel.TokenReason)))
            {
                var result = await done.Task.ConfigureAwait(false);
                return ThrowIfCancelledByToken(result, cancellationToken);
            }
        }

        /// <summary>
        /// Cancels the run (SIGTERM to its process group, SIGKILL after the grace period; it ends
        /// <c>run_interrupted</c> with <paramref name="reason"/>). The first reason stands; after the end
        /// it does nothing.
        /// </summary>
        public void Cancel(string reason = "cancelled")
        {
            channel.Cancel(reason);
        }

        /// <summary>The run's live backpressure statistics (after the end: the final ones).</summary>
        public Pressure Pressure
        {
            get { return channel.Pressure(); }
        }

        /// <summary>The result, or a <see cref="CancelledException"/> when the token cancelled the run.</summary>
        internal static RunResult ThrowIfCancelledByToken(RunResult result, CancellationToken token)
        {
            if (result.State == RunState.Cancelled && token.IsCancellationRequested && result.CancelReason != null &&
                result.CancelReason.EndsWith(RunChannel.TokenReason, StringComparison.Ordinal))
            {
                throw new CancelledException("run " + result.RunId + " was cancelled by its CancellationToken", token, result);
            }
            return result;
        }

        void Deliver()
        {
            try
            {
                bool reading = true;
                while (channel.Pull(-1) != Interop.Native.NextEnd)
                {
                    if (!reading)
                    {
                        continue; // draining to the end after a delivery could not be read
                    }
                    try
                    {
                        Event e;
                        while ((e = channel.Next()) != null)
                        {
                            Dispatch(e);
                        }
                    }
                    catch (FormatException e)
                    {
                        // A delivery this assembly cannot read (a bug, or a newer library): stop
                        // dispatching, cancel the run, fail the completion, and drain the run.
                        reading = false;
                        done.TrySetException(new InternalException("agentstream: cannot read a delivery of run " + Id + ": " + e.Message));
                        channel.Leave();
                    }
                }
                done.TrySetResult(channel.Finish());
            }
            catch (Exception e)
            {
                done.TrySetException(e);
            }
            finally
            {
                channel.Dispose();
                registration.Dispose();
            }
        }

        void Dispatch(Event e)
        {
            if (e.Hook != null)
            {
                if (onEvent != null)
                {
                    Call(Evolve.OnEventHandlerId, "on_event", e.Sequence, null, e);
                }
                return;
            }
            var entries = owner.Subscriptions.Of((int)e.Item.Channel);
            if (entries.Length == 0)
            {
                return;
            }
            lock (owner.DispatchGate)
            {
                foreach (var entry in entries)
                {
                    if (!entry.Removed)
                    {
                        Call(entry.Id, e.Item.Channel.ToWire(), e.Sequence, entry.Handler, e);
                    }
                }
            }
        }

        /// <summary>Runs one handler; an exception is counted on the run, and reported when it is that handler's first.</summary>
        void Call(ulong handlerId, string channelName, ulong sequence, Action<Event> handler, Event e)
        {
            try
            {
                if (handler != null)
                {
                    handler(e);
                }
                else
                {
                    onEvent(e.Hook);
                }
            }
            catch (Exception failure)
            {
                if (channel.HandlerFailed(handlerId, channelName, sequence, HandlerFailedEventArgs.Describe(failure)))
                {
                    owner.ReportHandlerFailure(new HandlerFailedEventArgs(Id, channelName, sequence, failure));
                }
            }
        }
    }
}
