using System;
using System.Collections.Generic;
using System.Globalization;

namespace Agentstream
{
    /// <summary>
    /// One run: a harness run (<see cref="Prompt"/>) or a command run (<see cref="Command"/>), and how
    /// to run it. Unset values take the library's defaults. The library validates them (one rule
    /// for every language); its messages name the property as C# spells it (<c>Prompt</c>,
    /// <c>TimeoutMs</c> for <see cref="Timeout"/>, <c>Limits.StallMs</c> for
    /// <see cref="RunLimits.Stall"/>, …).
    /// </summary>
    public sealed class RunOptions
    {
        /// <summary>The task for the agent (a harness run).</summary>
        public string Prompt { get; set; }

        /// <summary>
        /// A command run instead of a harness run (the seed's <c>execute_command</c>): the program and
        /// its arguments, not a shell string (use <c>{ "sh", "-c", "…" }</c> for one). Streamed like a
        /// run (stdout/stderr, lifecycle <c>command_start</c> … <c>command_complete</c>), without
        /// content decoding. Give <see cref="Prompt"/> or <see cref="Command"/>, not both.
        /// </summary>
        public IList<string> Command { get; set; }

        /// <summary>This run's model (over <see cref="AgentConfig.Model"/>).</summary>
        public string Model { get; set; }

        /// <summary>This run's working directory (over <see cref="AgentConfig.Cwd"/>).</summary>
        public string Cwd { get; set; }

        /// <summary>This run's extra environment, on top of <see cref="AgentConfig.Env"/>.</summary>
        public IDictionary<string, string> Env { get; set; }

        /// <summary>
        /// Stop the run after this long (it ends <c>run_interrupted</c>, hook <c>run.stopped</c>);
        /// null: no time limit. Whole milliseconds, rounded up; zero or negative is an error.
        /// </summary>
        public TimeSpan? Timeout { get; set; }

        /// <summary>A background run (terminal reasons <c>run_background_*</c>): start it with <see cref="Evolve.Start"/> and await it when you want the result.</summary>
        public bool Background { get; set; }

        /// <summary>
        /// Receives the run's hook events (<c>run.started</c> or <c>run.resumed</c>, <c>tool.started</c>,
        /// …, exactly one terminal: <c>run.completed</c> / <c>run.failed</c> / <c>run.cancelled</c> /
        /// <c>run.stopped</c>), in sequence order, after the item each was derived from, on the run's
        /// delivery thread. An exception it throws is a handler failure (see <see cref="Evolve.HandlerFailed"/>).
        /// </summary>
        public Action<AgentEvent> OnEvent { get; set; }

        /// <summary>Make a <see cref="RunStream"/> hand over hook events too (implied by <see cref="OnEvent"/>).</summary>
        public bool Hooks { get; set; }

        /// <summary>Mask secret shapes in everything derived from tool input (default true; answer text is never altered).</summary>
        public bool Redact { get; set; } = true;

        /// <summary>Continue this harness session instead of the <see cref="Evolve"/>'s current one (harness runs only).</summary>
        public string Resume { get; set; }

        /// <summary>Tools whose calls in flight at a cancellation are safe to retry (reported retryable, not indeterminate).</summary>
        public IList<string> IdempotentTools { get; set; }

        /// <summary>The SIGTERM→SIGKILL grace period of a cancellation (null: 5 s).</summary>
        public TimeSpan? KillGrace { get; set; }

        /// <summary>Bounds on what may wait unread for the reader (null: the defaults).</summary>
        public RunLimits Limits { get; set; }

        /// <summary>The core's run request JSON; <paramref name="read"/> is null (handlers) or "iterate".</summary>
        internal string ToRequestJson(string read)
        {
            var w = new JsonWriter();
            w.BeginObject();
            Options.OptionalString(w, "prompt", Prompt);
            if (Command != null)
            {
                w.Key("command");
                Options.Strings(w, Command);
            }
            Options.OptionalString(w, "model", Model);
            Options.OptionalString(w, "cwd", Cwd);
            Options.StringMap(w, "env", Env);
            Options.OptionalMillis(w, "timeout_ms", "Timeout", Timeout);
            if (Background)
            {
                w.Key("background");
                w.Bool(true);
            }
            if (Hooks || OnEvent != null)
            {
                w.Key("hooks");
                w.Bool(true);
            }
            if (!Redact)
            {
                w.Key("redact");
                w.Bool(false);
            }
            Options.OptionalString(w, "resume", Resume);
            Options.StringList(w, "idempotent_tools", IdempotentTools);
            Options.OptionalMillis(w, "kill_grace_ms", "KillGrace", KillGrace);
            if (Limits != null)
            {
                Limits.Write(w);
            }
            if (read != null)
            {
                w.Key("read");
                w.String(read);
            }
            w.EndObject();
            return w.ToString();
        }
    }

    /// <summary>
    /// Limits of one run (unset: the defaults — 256 events, 8 MiB, 30 s, 16 MiB). Above
    /// <see cref="HighWater"/> unread events or <see cref="ByteBudget"/> unread bytes, arriving text
    /// deltas merge into the newest unread one (<c>Envelope.Coalesced</c> counts them; nothing else
    /// is merged or dropped); a reader that leaves events unread for <see cref="Stall"/> has the run
    /// cancelled; a harness stdout line longer than <see cref="MaxLineBytes"/> is skipped and reported.
    /// </summary>
    public sealed class RunLimits
    {
        /// <summary>Unread events that may wait before text deltas merge.</summary>
        public long? HighWater { get; set; }

        /// <summary>Unread bytes that may wait.</summary>
        public long? ByteBudget { get; set; }

        /// <summary>How long delivered events may stay unread before the run is cancelled as stalled.</summary>
        public TimeSpan? Stall { get; set; }

        /// <summary>The longest harness stdout line decoded, in bytes.</summary>
        public long? MaxLineBytes { get; set; }

        internal void Write(JsonWriter w)
        {
            w.Key("limits");
            w.BeginObject();
            Options.OptionalCount(w, "high_water", "Limits.HighWater", HighWater);
            Options.OptionalCount(w, "byte_budget", "Limits.ByteBudget", ByteBudget);
            Options.OptionalMillis(w, "stall_ms", "Limits.Stall", Stall);
            Options.OptionalCount(w, "max_line_bytes", "Limits.MaxLineBytes", MaxLineBytes);
            w.EndObject();
        }
    }

    /// <summary>
    /// Writing options into the core's JSON forms. The only checks here are the ones the JSON form
    /// cannot carry (a negative duration or count has no unsigned form); everything else is the
    /// library's to validate.
    /// </summary>
    internal static class Options
    {
        internal static void OptionalString(JsonWriter w, string key, string value)
        {
            if (value != null)
            {
                w.Key(key);
                w.String(value);
            }
        }

        internal static void Strings(JsonWriter w, IList<string> values)
        {
            w.BeginArray();
            foreach (var v in values)
            {
                w.String(v);
            }
            w.EndArray();
        }

        internal static void StringList(JsonWriter w, string key, IList<string> values)
        {
            if (values != null && values.Count > 0)
            {
                w.Key(key);
                Strings(w, values);
            }
        }

        internal static void StringMap(JsonWriter w, string key, IDictionary<string, string> map)
        {
            if (map == null || map.Count == 0)
            {
                return;
            }
            w.Key(key);
            w.BeginObject();
            foreach (var kv in map)
            {
                w.Key(kv.Key);
                w.String(kv.Value);
            }
            w.EndObject();
        }

        /// <summary>A duration as whole milliseconds, rounded up (so a positive one never becomes 0).</summary>
        internal static void OptionalMillis(JsonWriter w, string key, string property, TimeSpan? value)
        {
            if (!value.HasValue)
            {
                return;
            }
            long ticks = value.Value.Ticks;
            if (ticks < 0)
            {
                throw new InvalidArgumentException(
                    property + " must not be negative, got " + value.Value.ToString("c", CultureInfo.InvariantCulture) +
                    " (leave it null for the default)");
            }
            ulong ms = (ulong)(ticks / TimeSpan.TicksPerMillisecond);
            if (ticks % TimeSpan.TicksPerMillisecond != 0)
            {
                ms++;
            }
            w.Key(key);
            w.Number(ms);
        }

        internal static void OptionalCount(JsonWriter w, string key, string property, long? value)
        {
            if (!value.HasValue)
            {
                return;
            }
            if (value.Value < 0)
            {
                throw new InvalidArgumentException(
                    property + " must not be negative, got " + value.Value.ToString(CultureInfo.InvariantCulture) +
                    " (leave it null for the default)");
            }
            w.Key(key);
            w.Number(value.Value);
        }
    }
}
