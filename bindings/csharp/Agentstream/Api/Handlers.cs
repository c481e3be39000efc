using System;
using System.Threading;

namespace Agentstream
{
    /// <summary>
    /// The first failure of one handler in one run: what <see cref="Evolve.HandlerFailed"/> reports.
    /// Later failures of the same handler in the run are only counted
    /// (<see cref="RunResult.HandlerErrors"/> counts every one).
    /// </summary>
    public sealed class HandlerFailedEventArgs : EventArgs
    {
        internal HandlerFailedEventArgs(string runId, string channel, ulong sequence, Exception exception)
        {
            RunId = runId;
            Channel = channel;
            Sequence = sequence;
            Exception = exception;
        }

        /// <summary>The run it failed on.</summary>
        public string RunId { get; private set; }

        /// <summary>The handler's channel (<c>content</c>, <c>lifecycle</c>, <c>stdout</c>, <c>stderr</c>), or <c>on_event</c> for <see cref="RunOptions.OnEvent"/>.</summary>
        public string Channel { get; private set; }

        /// <summary>The sequence number of the delivery it failed on.</summary>
        public ulong Sequence { get; private set; }

        /// <summary>What the handler threw, with its stack trace.</summary>
        public Exception Exception { get; private set; }

        /// <summary>One line and the exception with its stack: what the default report writes.</summary>
        public override string ToString()
        {
            string what;
            try
            {
                what = Exception.ToString();
            }
            catch (Exception)
            {
                what = Describe(Exception);
            }
            return "agentstream: a " + Channel + " handler of run " + RunId + " failed on sequence " + Sequence +
                " (later failures of this handler in the run are only counted): " + what;
        }

        /// <summary>
        /// <c>Type: message</c> of what a handler threw, or its type alone when reading the
        /// message throws: reporting a handler's failure must never be what stops the run.
        /// </summary>
        internal static string Describe(Exception failure)
        {
            try
            {
                return failure.GetType() + ": " + failure.Message;
            }
            catch (Exception unreadable)
            {
                return failure.GetType() + " (its message could not be read: " + unreadable.GetType() + ")";
            }
        }
    }

    /// <summary>
    /// The handlers of an <see cref="Evolve"/> by channel, in registration order (the order of the
    /// library's subscription ids). Runs read them at each delivery, so a handler added during a run
    /// gets the rest of it and one removed gets nothing after <c>Off</c> returns (a call in progress
    /// on the run's thread may finish). Copy-on-write: a run iterates a snapshot without locks.
    /// </summary>
    internal sealed class Subscriptions
    {
        internal sealed class Entry
        {
            internal ulong Id;
            internal int Channel;
            internal Action<Event> Handler;
            internal volatile bool Removed;
        }

        static readonly Entry[] None = new Entry[0];
        readonly Entry[][] byChannel = { None, None, None, None };
        readonly object gate = new object();

        /// <summary>The channel's index (the <see cref="Agentstream.Channel"/> enum's order), or -1.</summary>
        internal static int IndexOf(string channel)
        {
            switch (channel)
            {
                case "content": return (int)Agentstream.Channel.Content;
                case "lifecycle": return (int)Agentstream.Channel.Lifecycle;
                case "stdout": return (int)Agentstream.Channel.Stdout;
                case "stderr": return (int)Agentstream.Channel.Stderr;
                default: return -1;
            }
        }

        internal void Add(Entry e)
        {
            lock (gate)
            {
                var old = byChannel[e.Channel];
                var next = new Entry[old.Length + 1];
                Array.Copy(old, next, old.Length);
                next[old.Length] = e;
                byChannel[e.Channel] = next;
            }
        }

        internal void Remove(Entry e)
        {
            lock (gate)
            {
                e.Removed = true;
                var old = byChannel[e.Channel];
                int at = Array.IndexOf(old, e);
                if (at < 0)
                {
                    return;
                }
                var next = new Entry[old.Length - 1];
                Array.Copy(old, 0, next, 0, at);
                Array.Copy(old, at + 1, next, at, old.Length - at - 1);
                byChannel[e.Channel] = next;
            }
        }

        internal void RemoveChannel(int channel)
        {
            lock (gate)
            {
                foreach (var e in byChannel[channel])
                {
                    e.Removed = true;
                }
                byChannel[channel] = None;
            }
        }

        internal void RemoveAll()
        {
            for (int c = 0; c < byChannel.Length; c++)
            {
                RemoveChannel(c);
            }
        }

        internal Entry[] Of(int channel)
        {
            return Volatile.Read(ref byChannel[channel]);
        }
    }

    /// <summary>A registration of <see cref="Evolve.On"/>; disposing it removes that one handler.</summary>
    internal sealed class Subscription : IDisposable
    {
        readonly Evolve owner;
        readonly Subscriptions.Entry entry;

        internal Subscription(Evolve owner, Subscriptions.Entry entry)
        {
            this.owner = owner;
            this.entry = entry;
        }

        public void Dispose()
        {
            owner.Unsubscribe(entry);
        }
    }
}
