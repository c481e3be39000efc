using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;
using Agentstream.Interop;

namespace Agentstream
{
    /// <summary>
    /// Turns one harness CLI's recorded stdout (one run) into content events, without a process:
    /// <see cref="Feed(byte[], int, int)"/> bytes at any chunking, then <see cref="Finish"/> at the end
    /// of the input. Bad lines are never an exception: they are counted in <see cref="Stats"/>. Calls
    /// are serialized (safe to share between threads). Dispose it when done.
    /// </summary>
    public sealed class Decoder : IDisposable
    {
        readonly DecoderHandle handle;
        readonly object gate = new object();

        /// <summary>
        /// A decoder for <paramref name="agent"/>: "claude", "codex", "gemini", "qwen", "kimi",
        /// "opencode" or "droid" (any case); an unknown name is an <see cref="InvalidArgumentException"/>
        /// listing the valid names. A line longer than <paramref name="maxLineBytes"/> (0: the default,
        /// 16 MiB) is skipped, counted and reported as a <see cref="Diagnostic"/>. Secret shapes in
        /// tool-call inputs are masked unless <paramref name="redact"/> is false.
        /// </summary>
        public Decoder(string agent, long maxLineBytes = 0, bool redact = true)
        {
            if (maxLineBytes < 0)
            {
                throw new InvalidArgumentException("maxLineBytes must not be negative, got " + maxLineBytes + " (0 for the default)");
            }
            DecoderHandle h;
            Native.Check(Native.agentstream_decoder_new_with_options(Native.Utf8(agent), (UIntPtr)(ulong)maxLineBytes, out h));
            if (!redact)
            {
                uint status = Native.agentstream_decoder_set_redact(h, false);
                if (status != 0)
                {
                    h.Dispose();
                    Native.Check(status);
                }
            }
            handle = h;
            Agent = agent;
        }

        /// <summary>The agent name it was created with.</summary>
        public string Agent { get; private set; }

        /// <summary>Decodes a whole recorded output at once (secret shapes in tool-call inputs masked unless <paramref name="redact"/> is false).</summary>
        public static IList<OutputEvent> Parse(string agent, byte[] data, bool redact = true)
        {
            using (var d = new Decoder(agent, 0, redact))
            {
                var events = d.Feed(data);
                foreach (var e in d.Finish())
                {
                    events.Add(e);
                }
                return events;
            }
        }

        /// <summary>Decodes a recorded output read from <paramref name="input"/> (to its end), yielding each event as its line completes (secret shapes in tool-call inputs masked unless <paramref name="redact"/> is false).</summary>
        public static IEnumerable<OutputEvent> Decode(string agent, Stream input, bool redact = true)
        {
            using (var d = new Decoder(agent, 0, redact))
            {
                var chunk = new byte[64 * 1024];
                int n;
                while ((n = input.Read(chunk, 0, chunk.Length)) > 0)
                {
                    foreach (var e in d.Feed(chunk, 0, n))
                    {
                        yield return e;
                    }
                }
                foreach (var e in d.Finish())
                {
                    yield return e;
                }
            }
        }

        DecoderHandle Live()
        {
            if (handle.IsClosed)
            {
                throw new InvalidHandleException("this Decoder was disposed: create a new one");
            }
            return handle;
        }

        /// <summary>Decodes <paramref name="data"/>: the events of every line it completed, in order. A line may span calls.</summary>
        public IList<OutputEvent> Feed(byte[] data)
        {
            if (data == null)
            {
                throw new NullArgumentException("data must not be null");
            }
            return Feed(data, 0, data.Length);
        }

        /// <summary>Decodes <paramref name="count"/> bytes of <paramref name="data"/> from <paramref name="offset"/>.</summary>
        public IList<OutputEvent> Feed(byte[] data, int offset, int count)
        {
            if (data == null)
            {
                throw new NullArgumentException("data must not be null");
            }
            if (offset < 0 || count < 0 || offset > data.Length - count)
            {
                throw new InvalidArgumentException("offset " + offset + " and count " + count + " are outside the " + data.Length + " bytes of data");
            }
            lock (gate)
            {
                var pin = GCHandle.Alloc(data, GCHandleType.Pinned);
                IntPtr p;
                UIntPtr n;
                uint status;
                try
                {
                    IntPtr start = pin.AddrOfPinnedObject() + offset;
                    status = Native.agentstream_decoder_feed_json(Live(), start, (UIntPtr)(uint)count, out p, out n);
                }
                finally
                {
                    pin.Free();
                }
                Native.Check(status);
                return Events(p, n);
            }
        }

        /// <summary>Ends the input: decodes a last line without a newline and flushes what waited for the end. Later feeds decode nothing.</summary>
        public IList<OutputEvent> Finish()
        {
            lock (gate)
            {
                IntPtr p;
                UIntPtr n;
                Native.Check(Native.agentstream_decoder_finish_json(Live(), out p, out n));
                return Events(p, n);
            }
        }

        static List<OutputEvent> Events(IntPtr p, UIntPtr n)
        {
            int len;
            var buffer = Native.TakeIntoThreadBuffer(p, n, out len);
            return JsonReader.ForThread(buffer, 0, len).ReadList(r => WireCodec.ReadOutputEvent(r)) ?? new List<OutputEvent>();
        }

        /// <summary>The decode statistics so far (bytes, lines, events, and every kind of bad line).</summary>
        public DecodeStats Stats
        {
            get
            {
                lock (gate)
                {
                    IntPtr p;
                    UIntPtr n;
                    Native.Check(Native.agentstream_decoder_stats_json(Live(), out p, out n));
                    int len;
                    var buffer = Native.TakeIntoThreadBuffer(p, n, out len);
                    return WireCodec.ReadDecodeStats(JsonReader.ForThread(buffer, 0, len));
                }
            }
        }

        /// <summary>The problems found since the last call (over-long lines, invalid UTF-8), which it clears.</summary>
        public IList<Diagnostic> TakeDiagnostics()
        {
            lock (gate)
            {
                IntPtr p;
                UIntPtr n;
                Native.Check(Native.agentstream_decoder_take_diagnostics_json(Live(), out p, out n));
                int len;
                var buffer = Native.TakeIntoThreadBuffer(p, n, out len);
                return JsonReader.ForThread(buffer, 0, len).ReadList(r => WireCodec.ReadDiagnostic(r));
            }
        }

        /// <summary>The harness's session id once one was seen; null before.</summary>
        public string SessionId
        {
            get
            {
                lock (gate)
                {
                    IntPtr p;
                    UIntPtr n;
                    Native.Check(Native.agentstream_decoder_session_id(Live(), out p, out n));
                    return Native.TakeString(p, n);
                }
            }
        }

        /// <summary>Frees the decoder; other members then throw an <see cref="InvalidHandleException"/>. Calling it again does nothing.</summary>
        public void Dispose()
        {
            lock (gate)
            {
                handle.Dispose();
            }
        }
    }
}
