using System;
using System.Collections.Generic;
using Agentstream.Interop;

namespace Agentstream
{
    /// <summary>Everything a replayed run delivers (see <see cref="Replay.Run"/>).</summary>
    public sealed class ReplayResult
    {
        /// <summary>The numbered stream: run_start, each stdout line followed by its content events, the terminal lifecycle event last.</summary>
        public IList<Envelope> Items { get; internal set; }

        /// <summary>The hook events derived from it, in order.</summary>
        public IList<AgentEvent> Hooks { get; internal set; }

        /// <summary>How the run ended.</summary>
        public RunOutcome Outcome { get; internal set; }

        /// <summary>The decode statistics.</summary>
        public DecodeStats Stats { get; internal set; }
    }

    /// <summary>Options of <see cref="Replay.Run"/>.</summary>
    public sealed class ReplayOptions
    {
        /// <summary>The run id stamped on every item and hook (default "replay").</summary>
        public string RunId { get; set; }

        /// <summary>The hooks' agent id (default: the agent's name).</summary>
        public string AgentId { get; set; }

        /// <summary>The timestamp of lifecycle and hook events (default "1970-01-01T00:00:00.000Z").</summary>
        public string Timestamp { get; set; }

        /// <summary>Mask secret shapes in tool-call inputs (default true); false delivers them as the harness printed them.</summary>
        public bool Redact { get; set; } = true;
    }

    /// <summary>Recorded harness output through the whole pipeline, without a process.</summary>
    public static class Replay
    {
        /// <summary>
        /// Runs a recorded harness output (its stdout JSONL) through the whole pipeline — decoder, run
        /// stream, terminal, hooks — deterministically. The golden
        /// <c>tests/golden/&lt;agent&gt;/&lt;case&gt;.hooks.jsonl</c> files are the <see cref="ReplayResult.Hooks"/>
        /// of a replay with <c>RunId = "golden"</c>.
        /// </summary>
        public static ReplayResult Run(string agent, byte[] data, ReplayOptions options = null)
        {
            if (data == null)
            {
                throw new NullArgumentException("data must not be null");
            }
            var w = new JsonWriter();
            w.BeginObject();
            if (options != null)
            {
                Options.OptionalString(w, "run_id", options.RunId);
                Options.OptionalString(w, "agent_id", options.AgentId);
                Options.OptionalString(w, "timestamp", options.Timestamp);
                if (!options.Redact)
                {
                    w.Key("redact");
                    w.Bool(false);
                }
            }
            w.EndObject();
            IntPtr p;
            UIntPtr n;
            Native.Check(Native.agentstream_replay_json(Native.Utf8(agent), data, (UIntPtr)(uint)data.Length, Native.Utf8(w.ToString()), out p, out n));
            int len;
            var buffer = Native.TakeIntoThreadBuffer(p, n, out len);
            var r = JsonReader.ForThread(buffer, 0, len);
            var result = new ReplayResult();
            r.BeginObject();
            string k;
            while (r.NextKey(out k))
            {
                switch (k)
                {
                    case "items": result.Items = r.ReadList(rr => WireCodec.ReadEnvelope(rr)); break;
                    case "hooks": result.Hooks = r.ReadList(rr => WireCodec.ReadAgentEvent(rr)); break;
                    case "outcome": result.Outcome = WireCodec.ReadRunOutcome(r); break;
                    case "stats": result.Stats = WireCodec.ReadDecodeStats(r); break;
                    default: r.Skip(); break;
                }
            }
            return result;
        }
    }
}
