using System;
using System.Globalization;
using System.Threading;

namespace Agentstream
{
    public sealed partial class RunResult
    {
        /// <summary>The run's wall-clock duration (<see cref="DurationMs"/>).</summary>
        public TimeSpan Duration
        {
            get { return TimeSpan.FromMilliseconds(DurationMs); }
        }

        /// <summary>The result as the library's JSON.</summary>
        public override string ToString()
        {
            return AgentstreamJson.Serialize(this);
        }
    }

    public sealed partial class AgentEvent
    {
        /// <summary>When it happened (<see cref="Timestamp"/>, ISO 8601 UTC with milliseconds).</summary>
        public DateTimeOffset Time
        {
            get { return DateTimeOffset.Parse(Timestamp, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal); }
        }

        /// <summary>The hook event as the library's JSON.</summary>
        public override string ToString()
        {
            return AgentstreamJson.Serialize(this);
        }
    }

    public sealed partial class OutputEvent
    {
        /// <summary>The event as the library's JSON (the seed's shape).</summary>
        public override string ToString()
        {
            return AgentstreamJson.Serialize(this);
        }
    }

    public sealed partial class LifecycleEvent
    {
        /// <summary>The event as the library's JSON.</summary>
        public override string ToString()
        {
            return AgentstreamJson.Serialize(this);
        }
    }

    public sealed partial class CancelledException
    {
        /// <summary>The cancelled run's result, when a run was cancelled by a CancellationToken (null otherwise).</summary>
        public RunResult Result { get; private set; }

        internal CancelledException(string message, CancellationToken token, RunResult result) : base(message, token)
        {
            Result = result;
        }
    }
}
