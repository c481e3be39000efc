using System;
using Agentstream.Interop;

namespace Agentstream
{
    /// <summary>
    /// One native run and the reading of it: pulled in batches (one library call per batch of what
    /// is ready, <c>agentstream_run_next_batch_json</c>), each batch parsed into <see cref="Event"/>s;
    /// cancel, leave, handler failures, the result. <see cref="AgentRun"/> reads it from a thread of
    /// its own and calls the handlers; <see cref="RunStream"/> reads it as its caller enumerates.
    /// </summary>
    internal sealed class RunChannel : IDisposable
    {
        readonly RunHandle handle;
        readonly JsonReader reader = new JsonReader(new byte[0], 0, 0);
        byte[] buffer;
        readonly object gate = new object();
        RunResult result;

        internal RunChannel(RunHandle handle)
        {
            this.handle = handle;
            IntPtr p;
            UIntPtr n;
            Native.Check(Native.agentstream_run_id(handle, out p, out n));
            Id = Native.TakeString(p, n);
        }

        /// <summary>The run's id.</summary>
        internal string Id { get; private set; }

        /// <summary>The reason a cancellation by a CancellationToken gives (how a result tells it apart).</summary>
        internal const string TokenReason = "cancelled by the CancellationToken";

        /// <summary>
        /// Pulls what is ready, waiting up to <paramref name="timeoutMs"/> (negative: as long as it
        /// takes) for the first delivery: BATCH (then read its deliveries with <see cref="Next"/>),
        /// TIMEOUT or END.
        /// </summary>
        internal uint Pull(long timeoutMs)
        {
            uint kind;
            IntPtr p;
            UIntPtr n;
            Native.Check(Native.agentstream_run_next_batch_json(handle, UIntPtr.Zero, UIntPtr.Zero, timeoutMs, out kind, out p, out n));
            int len = Native.TakeBytes(p, n, ref buffer);
            if (kind == Native.NextBatch)
            {
                reader.Reset(buffer, 0, len);
                reader.BeginArray();
            }
            return kind;
        }

        /// <summary>
        /// The next delivery of the batch pulled last, or null at its end. Deliveries are read one at
        /// a time, as they are handed over, so each is garbage as soon as its handlers returned.
        /// </summary>
        internal Event Next()
        {
            if (!reader.NextElement())
            {
                return null;
            }
            Event e = null;
            reader.BeginObject();
            string key;
            while (reader.NextKey(out key))
            {
                if (key == "item")
                {
                    e = new Event(WireCodec.ReadEnvelope(reader));
                }
                else if (key == "hook")
                {
                    e = new Event(WireCodec.ReadAgentEvent(reader));
                }
                else
                {
                    reader.Skip();
                }
            }
            if (e == null)
            {
                throw reader.Error("a delivery that is neither an item nor a hook");
            }
            return e;
        }

        /// <summary>Counts a handler's failure on the run; true for that handler's first (the one to report).</summary>
        internal bool HandlerFailed(ulong handlerId, string channel, ulong sequence, string message)
        {
            byte first;
            uint status = Native.agentstream_run_handler_failed(handle, handlerId, Native.Utf8(channel), sequence, Native.Utf8Text(message), out first);
            return status == 0 && first != 0;
        }

        /// <summary>Cancels the run (the first reason stands; nothing after the end).</summary>
        internal void Cancel(string reason)
        {
            lock (gate)
            {
                if (!handle.IsClosed)
                {
                    Native.Check(Native.agentstream_run_cancel(handle, Native.Utf8Text(reason ?? "cancelled")));
                }
            }
        }

        /// <summary>The reader stops before the end: the run is cancelled (reason <c>reader_left</c>).</summary>
        internal void Leave()
        {
            lock (gate)
            {
                if (!handle.IsClosed)
                {
                    Native.Check(Native.agentstream_run_leave(handle));
                }
            }
        }

        /// <summary>Live backpressure statistics; the final ones after the end.</summary>
        internal Pressure Pressure()
        {
            lock (gate)
            {
                if (handle.IsClosed)
                {
                    return result == null ? null : result.Pressure;
                }
                IntPtr p;
                UIntPtr n;
                Native.Check(Native.agentstream_run_pressure_json(handle, out p, out n));
                return AgentstreamJson.Deserialize<Pressure>(Native.TakeString(p, n));
            }
        }

        /// <summary>Waits for the result (after the last delivery was pulled), then frees the run.</summary>
        internal RunResult Finish()
        {
            IntPtr p;
            UIntPtr n;
            Native.Check(Native.agentstream_run_wait(handle, -1, out p, out n));
            var r = AgentstreamJson.Deserialize<RunResult>(Native.TakeString(p, n));
            lock (gate)
            {
                result = r;
                handle.Dispose();
            }
            return r;
        }

        /// <summary>Frees the run (an unfinished one is cancelled, reason <c>reader_left</c>).</summary>
        public void Dispose()
        {
            lock (gate)
            {
                handle.Dispose();
            }
        }
    }
}
