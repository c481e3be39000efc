using System;
using System.Collections;
using System.Collections.Generic;
using System.Threading;

namespace Agentstream
{
    /// <summary>
    /// A run read as a blocking sequence of every <see cref="Event"/> (see <see cref="Evolve.Stream"/>):
    /// enumerate it once, on any thread; it ends after the terminal item and its hooks, and
    /// <see cref="Result"/> then holds the run's result. Dispose it to stop early (an unfinished run
    /// is cancelled, reason <c>reader_left</c>); a <c>foreach</c> that is left early does that too.
    /// </summary>
    public sealed class RunStream : IEnumerable<Event>, IDisposable
    {
        readonly Evolve owner;
        readonly RunChannel channel;
        readonly Action<AgentEvent> onEvent;
        readonly CancellationTokenRegistration registration;
        readonly object gate = new object();
        bool enumerated;
        bool finished;
        RunResult result;
        // Set when the first Close is done: a second one (the enumeration's end while another
        // thread disposes) waits for it, so that Result is there once either returned.
        readonly ManualResetEventSlim closed = new ManualResetEventSlim(false);

        internal RunStream(Evolve owner, RunChannel channel, Action<AgentEvent> onEvent, CancellationToken token)
        {
            this.owner = owner;
            this.channel = channel;
            this.onEvent = onEvent;
            Id = channel.Id;
            if (token.CanBeCanceled)
            {
                // Weakly: a stream dropped undisposed while a long-lived token lives must still
                // be collected, its run freed (and so cancelled) by the handle's finalizer.
                var weak = new WeakReference<RunChannel>(channel);
                registration = token.Register(() =>
                {
                    RunChannel alive;
                    if (weak.TryGetTarget(out alive))
                    {
                        alive.Cancel(RunChannel.TokenReason);
                    }
                });
            }
        }

        /// <summary>The run's id.</summary>
        public string Id { get; private set; }

        /// <summary>The run's result once the sequence ended (or the stream was disposed); a <see cref="StillRunningException"/> before.</summary>
        public RunResult Result
        {
            get
            {
                lock (gate)
                {
                    if (result == null)
                    {
                        throw new StillRunningException("run " + Id + " is still being read: enumerate the stream to its end (or dispose it) first");
                    }
                    return result;
                }
            }
        }

        /// <summary>Cancels the run; the sequence ends with its terminal event. The first reason stands.</summary>
        public void Cancel(string reason = "cancelled")
        {
            channel.Cancel(reason);
        }

        /// <summary>The run's live backpressure statistics.</summary>
        public Pressure Pressure
        {
            get { return channel.Pressure(); }
        }

        /// <summary>The deliveries, in order (a stream is read once: a second enumeration is an <see cref="InvalidOperationException"/>).</summary>
        public IEnumerator<Event> GetEnumerator()
        {
            lock (gate)
            {
                if (enumerated)
                {
                    throw new InvalidOperationException("a RunStream is read once: start another run to read again");
                }
                enumerated = true;
            }
            return Read();
        }

        IEnumerator IEnumerable.GetEnumerator()
        {
            return GetEnumerator();
        }

        IEnumerator<Event> Read()
        {
            try
            {
                while (PullMore())
                {
                    Event e;
                    while (!Volatile.Read(ref finished) && (e = channel.Next()) != null)
                    {
                        if (e.Hook != null && onEvent != null)
                        {
                            CallOnEvent(e);
                            if (Volatile.Read(ref finished))
                            {
                                // Disposed by its OnEvent: not even this hook is handed over.
                                yield break;
                            }
                        }
                        yield return e;
                    }
                }
            }
            finally
            {
                Close();
            }
        }

        /// <summary>
        /// Pulls the next batch: false at the end, and once the stream was disposed — from its own
        /// <c>OnEvent</c>, or from another thread while this one waited — instead of a pull on a
        /// closed run.
        /// </summary>
        bool PullMore()
        {
            if (Volatile.Read(ref finished))
            {
                return false;
            }
            try
            {
                return channel.Pull(-1) != Interop.Native.NextEnd;
            }
            catch (ObjectDisposedException) when (Volatile.Read(ref finished))
            {
                return false;
            }
        }

        void CallOnEvent(Event e)
        {
            try
            {
                onEvent(e.Hook);
            }
            catch (Exception failure)
            {
                bool first;
                try
                {
                    first = channel.HandlerFailed(Evolve.OnEventHandlerId, "on_event", e.Sequence, HandlerFailedEventArgs.Describe(failure));
                }
                catch (ObjectDisposedException) when (Volatile.Read(ref finished))
                {
                    // The handler disposed the stream, then threw: the run cannot count it any
                    // more; it is reported all the same.
                    first = true;
                }
                if (first)
                {
                    owner.ReportHandlerFailure(new HandlerFailedEventArgs(Id, "on_event", e.Sequence, failure));
                }
            }
        }

        /// <summary>Stops reading: an unfinished run is cancelled and drained, its result kept.</summary>
        void Close()
        {
            bool first;
            lock (gate)
            {
                first = !finished;
                finished = true;
            }
            if (!first)
            {
                // Outside the lock: the first Close takes it to store the result.
                closed.Wait();
                return;
            }
            try
            {
                channel.Leave();
                var r = channel.Finish();
                lock (gate)
                {
                    result = r;
                }
            }
            finally
            {
                channel.Dispose();
                registration.Dispose();
                closed.Set();
            }
        }

        /// <summary>Stops reading (see <see cref="RunStream"/>); the result stays available. Calling it again does nothing.</summary>
        public void Dispose()
        {
            Close();
        }
    }
}
