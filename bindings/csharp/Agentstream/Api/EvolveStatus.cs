namespace Agentstream
{
    /// <summary>What <see cref="Evolve.Status"/> reports (the seed's <c>status()</c>).</summary>
    public sealed class EvolveStatus
    {
        /// <summary>The harness ("claude", "codex", …).</summary>
        public string Agent { get; private set; }

        /// <summary>The local environment's state (ready, running, paused, stopped, …).</summary>
        public SandboxState Sandbox { get; private set; }

        /// <summary>The agent's state (idle, running, interrupted, error).</summary>
        public AgentState AgentState { get; private set; }

        /// <summary>Whether a run was ever started from this agent.</summary>
        public bool HasRun { get; private set; }

        /// <summary>The active run's id while one runs; null otherwise.</summary>
        public string ActiveRunId { get; private set; }

        /// <summary>The harness session the next run continues; null when it starts a new one.</summary>
        public string SessionId { get; private set; }

        /// <summary>How the last run ended, once one did; null before.</summary>
        public RunState? LastStatus { get; private set; }

        /// <summary>The status as the library's JSON (<c>{"agent", "sandbox", "agent_state", "has_run", …}</c>).</summary>
        public override string ToString()
        {
            var w = new JsonWriter();
            w.BeginObject();
            w.Key("agent");
            w.String(Agent);
            w.Key("sandbox");
            w.String(Sandbox.ToWire());
            w.Key("agent_state");
            w.String(AgentState.ToWire());
            w.Key("has_run");
            w.Bool(HasRun);
            Options.OptionalString(w, "active_run_id", ActiveRunId);
            Options.OptionalString(w, "session_id", SessionId);
            if (LastStatus.HasValue)
            {
                w.Key("last_status");
                w.String(LastStatus.Value.ToWire());
            }
            w.EndObject();
            return w.ToString();
        }

        internal static EvolveStatus Parse(string json)
        {
            var bytes = System.Text.Encoding.UTF8.GetBytes(json);
            var r = JsonReader.ForThread(bytes, 0, bytes.Length);
            var s = new EvolveStatus();
            r.BeginObject();
            string k;
            while (r.NextKey(out k))
            {
                switch (k)
                {
                    case "agent": s.Agent = r.ReadString(); break;
                    case "sandbox": s.Sandbox = WireCodec.ReadSandboxState(r); break;
                    case "agent_state": s.AgentState = WireCodec.ReadAgentState(r); break;
                    case "has_run": s.HasRun = r.ReadBool(); break;
                    case "active_run_id": s.ActiveRunId = r.ReadString(); break;
                    case "session_id": s.SessionId = r.ReadString(); break;
                    case "last_status": s.LastStatus = r.TryReadNull() ? (RunState?)null : WireCodec.ReadRunState(r); break;
                    default: r.Skip(); break;
                }
            }
            return s;
        }
    }
}
