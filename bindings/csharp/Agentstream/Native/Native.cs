using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Agentstream.Interop
{
    /// <summary>
    /// The C ABI (include/agentstream.h) as P/Invoke declarations, and the few helpers every call
    /// shares: UTF-8 arguments, owned strings, and a failed status turned into the exception of its
    /// kind with the library's message. The library is <c>libagentstream.so</c>, found beside the
    /// assembly or on the loader's path (<c>LD_LIBRARY_PATH</c>).
    ///
    /// Statuses are <c>uint</c> (C <c>uint32_t</c>), sizes <c>UIntPtr</c> (<c>size_t</c>), C <c>bool</c>
    /// out-parameters a <c>byte</c> (one byte, not the 4-byte Win32 BOOL the marshaller assumes).
    /// No managed delegate is ever handed to the library: runs are pulled in batches and their
    /// handlers called from managed code, so no exception can unwind into native frames and no
    /// delegate's lifetime has to be tied to native code.
    /// </summary>
    internal static class Native
    {
        const string Lib = "agentstream";
        const CallingConvention Cdecl = CallingConvention.Cdecl;

        internal const uint NamingPascal = 2;
        internal const uint NextItem = 0;
        internal const uint NextHook = 1;
        internal const uint NextBatch = 2;
        internal const uint NextTimeout = 3;
        internal const uint NextEnd = 4;

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern IntPtr agentstream_version();

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_last_error_message(byte[] buf, UIntPtr cap, out UIntPtr len);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern IntPtr agentstream_status_name(uint status);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern void agentstream_string_free(IntPtr s);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_channel_validate(byte[] name);

        // ---- decoder ----

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_new_with_options(byte[] agent, UIntPtr maxLineBytes, out DecoderHandle decoder);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_set_redact(DecoderHandle decoder, [MarshalAs(UnmanagedType.I1)] bool redact);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_feed_json(DecoderHandle decoder, IntPtr bytes, UIntPtr len, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_finish_json(DecoderHandle decoder, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_stats_json(DecoderHandle decoder, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_take_diagnostics_json(DecoderHandle decoder, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_decoder_session_id(DecoderHandle decoder, out IntPtr id, out UIntPtr idLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern void agentstream_decoder_free(IntPtr decoder);

        // ---- replay ----

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_replay_json(byte[] agent, byte[] bytes, UIntPtr len, byte[] options, out IntPtr json, out UIntPtr jsonLen);

        // ---- sessions ----

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_new_json(byte[] config, uint naming, out SessionHandle session);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern IntPtr agentstream_session_agent(SessionHandle session);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_subscribe(SessionHandle session, byte[] channel, out ulong id);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_off(SessionHandle session, byte[] channel, out UIntPtr removed);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_off_id(SessionHandle session, ulong id, out byte removed);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_start(SessionHandle session, byte[] request, IntPtr onEvent, IntPtr userData, IntPtr freeUserData, out RunHandle run);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_status_json(SessionHandle session, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_session_id(SessionHandle session, out IntPtr id, out UIntPtr idLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_set_session_id(SessionHandle session, byte[] id);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_set_budget(SessionHandle session, BudgetHandle budget);

        [DllImport(Lib, CallingConvention = Cdecl, EntryPoint = "agentstream_session_set_budget")]
        internal static extern uint agentstream_session_clear_budget(SessionHandle session, IntPtr none);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_pause(SessionHandle session);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_resume(SessionHandle session);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_interrupt(SessionHandle session, byte[] reason, out byte interrupted);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_session_kill(SessionHandle session, out byte killed);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern void agentstream_session_free(IntPtr session);

        // ---- runs ----

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_wait(RunHandle run, long timeoutMs, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_next_batch_json(RunHandle run, UIntPtr maxEvents, UIntPtr maxBytes, long timeoutMs, out uint kind, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_cancel(RunHandle run, byte[] reason);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_leave(RunHandle run);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_handler_failed(RunHandle run, ulong handler, byte[] channel, ulong sequence, byte[] message, out byte first);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_id(RunHandle run, out IntPtr id, out UIntPtr idLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_run_pressure_json(RunHandle run, out IntPtr json, out UIntPtr jsonLen);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern void agentstream_run_free(IntPtr run);

        // ---- budgets ----

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_budget_new(UIntPtr totalBytes, UIntPtr maxRuns, out BudgetHandle budget);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern uint agentstream_budget_active(BudgetHandle budget, out UIntPtr active);

        [DllImport(Lib, CallingConvention = Cdecl)]
        internal static extern void agentstream_budget_free(IntPtr budget);

        // ---- helpers ----

        /// <summary><paramref name="s"/> (a name, an id, JSON) as NUL-terminated UTF-8 (null stays
        /// null). One holding a NUL is refused: C would read only what comes before it (a channel
        /// <c>"content\0x"</c> taken as <c>"content"</c>).</summary>
        internal static byte[] Utf8(string s)
        {
            if (s == null)
            {
                return null;
            }
            if (s.IndexOf('\0') >= 0)
            {
                string shown = s.Length > 60 ? s.Substring(0, 60) + "…" : s;
                throw new Agentstream.InvalidArgumentException(
                    "a name or value passed to agentstream must not contain a NUL character (\\u0000): \"" + shown.Replace("\0", "\\u0000") + "\"");
            }
            var bytes = new byte[Encoding.UTF8.GetByteCount(s) + 1];
            Encoding.UTF8.GetBytes(s, 0, s.Length, bytes, 0);
            return bytes;
        }

        /// <summary>Free text (a cancel's reason, a handler's message) as NUL-terminated UTF-8: a NUL
        /// becomes U+FFFD, so such a text is never refused (a cancel must act) nor cut short.</summary>
        internal static byte[] Utf8Text(string s)
        {
            return Utf8(s == null ? null : s.Replace('\0', '\uFFFD'));
        }

        /// <summary>A static NUL-terminated UTF-8 string of the library.</summary>
        internal static string StaticString(IntPtr p)
        {
            if (p == IntPtr.Zero)
            {
                return null;
            }
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0)
            {
                n++;
            }
            var bytes = new byte[n];
            Marshal.Copy(p, bytes, 0, n);
            return Encoding.UTF8.GetString(bytes);
        }

        /// <summary>An owned string of the library copied into <paramref name="buffer"/> (grown as needed) and freed; its length.</summary>
        internal static int TakeBytes(IntPtr p, UIntPtr len, ref byte[] buffer)
        {
            if (p == IntPtr.Zero)
            {
                return 0;
            }
            try
            {
                int n = checked((int)len.ToUInt64());
                if (buffer == null || buffer.Length < n)
                {
                    buffer = new byte[Math.Max(n, buffer == null ? 4096 : buffer.Length * 2)];
                }
                Marshal.Copy(p, buffer, 0, n);
                return n;
            }
            finally
            {
                agentstream_string_free(p);
            }
        }

        [ThreadStatic]
        static byte[] threadBuffer;

        /// <summary>
        /// An owned string of the library copied into this thread's scratch buffer and freed: for
        /// text parsed at once, before any user code runs. Returns the buffer; <paramref name="length"/> its length.
        /// </summary>
        internal static byte[] TakeIntoThreadBuffer(IntPtr p, UIntPtr len, out int length)
        {
            var buffer = threadBuffer;
            length = TakeBytes(p, len, ref buffer);
            // Keep a moderate buffer for the next call; a huge one (a 2 MB event) goes back to the GC.
            threadBuffer = buffer != null && buffer.Length <= 1 << 20 ? buffer : null;
            return buffer;
        }

        /// <summary>An owned string of the library as a .NET string (null for NULL), freed.</summary>
        internal static string TakeString(IntPtr p, UIntPtr len)
        {
            if (p == IntPtr.Zero)
            {
                return null;
            }
            byte[] buffer = null;
            int n = TakeBytes(p, len, ref buffer);
            return Encoding.UTF8.GetString(buffer, 0, n);
        }

        /// <summary>The message of the last failed call on this thread.</summary>
        internal static string LastError()
        {
            UIntPtr len;
            agentstream_last_error_message(null, UIntPtr.Zero, out len);
            int n = checked((int)len.ToUInt64());
            var buf = new byte[n + 1];
            agentstream_last_error_message(buf, (UIntPtr)(uint)buf.Length, out len);
            return Encoding.UTF8.GetString(buf, 0, n);
        }

        /// <summary>
        /// Throws the exception of a failed call's kind (the status is the core's error code) with
        /// the library's message; read on the calling thread, right after the call.
        /// </summary>
        internal static void Check(uint status)
        {
            if (status != 0)
            {
                throw Failure(status, LastError());
            }
        }

        /// <summary>The exception of a status and message.</summary>
        internal static Exception Failure(uint status, string message)
        {
            ErrorKind kind;
            if (ErrorTable.TryFromCode((int)status, out kind))
            {
                return kind.ToException(message);
            }
            // A newer library than this assembly: keep its name for the kind.
            string name = StaticString(agentstream_status_name(status));
            return new InternalException("status " + status + " (" + name + "): " + message);
        }
    }

    /// <summary>A decoder handle (<c>agentstream_decoder *</c>), freed once.</summary>
    internal sealed class DecoderHandle : SafeHandle
    {
        public DecoderHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            Native.agentstream_decoder_free(handle);
            return true;
        }
    }

    /// <summary>A session handle (<c>agentstream_session *</c>), freed once (killing its active run).</summary>
    internal sealed class SessionHandle : SafeHandle
    {
        public SessionHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            Native.agentstream_session_free(handle);
            return true;
        }
    }

    /// <summary>A run handle (<c>agentstream_run *</c>), freed once (an unfinished pulled run is cancelled).</summary>
    internal sealed class RunHandle : SafeHandle
    {
        public RunHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            Native.agentstream_run_free(handle);
            return true;
        }
    }

    /// <summary>A budget handle (<c>agentstream_budget *</c>), freed once.</summary>
    internal sealed class BudgetHandle : SafeHandle
    {
        public BudgetHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        protected override bool ReleaseHandle()
        {
            Native.agentstream_budget_free(handle);
            return true;
        }
    }
}
