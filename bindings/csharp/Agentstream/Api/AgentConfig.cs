using System.Collections.Generic;

namespace Agentstream
{
    /// <summary>
    /// Which harness an <see cref="Evolve"/> runs and how to start it (the seed's AgentConfig). The
    /// library validates it; a bad value is an <see cref="InvalidArgumentException"/> (an
    /// <see cref="System.ArgumentException"/>) whose message names the property (<c>Type</c>,
    /// <c>Env</c>, …) and, for an unknown agent, lists the valid names.
    /// </summary>
    public sealed class AgentConfig
    {
        /// <summary>The harness: "claude", "codex", "gemini", "qwen", "kimi", "opencode" or "droid".</summary>
        public string Type { get; set; }

        /// <summary>The id hook events report as <c>AgentId</c> (default: the agent's name).</summary>
        public string AgentId { get; set; }

        /// <summary>The harness executable: a path, or a command name looked up on PATH (default: the harness's usual command).</summary>
        public string Bin { get; set; }

        /// <summary>The model to ask for, with the harness's own flag (default: the harness's). <see cref="RunOptions.Model"/> overrides it for one run.</summary>
        public string Model { get; set; }

        /// <summary>Extra arguments for the harness, after its streaming flags and before the prompt.</summary>
        public IList<string> ExtraArgs { get; set; }

        /// <summary>The harness's working directory (default: the current directory).</summary>
        public string Cwd { get; set; }

        /// <summary>Environment variables added to (or overriding) the inherited environment of the harness.</summary>
        public IDictionary<string, string> Env { get; set; }

        /// <summary>A copy (an <see cref="Evolve"/> keeps its own).</summary>
        public AgentConfig Clone()
        {
            return new AgentConfig
            {
                Type = Type,
                AgentId = AgentId,
                Bin = Bin,
                Model = Model,
                ExtraArgs = ExtraArgs == null ? null : new List<string>(ExtraArgs),
                Cwd = Cwd,
                Env = Env == null ? null : new Dictionary<string, string>(Env),
            };
        }

        /// <summary>The core's JSON form (<c>{"type", "agent_id"?, …}</c>).</summary>
        internal string ToJson()
        {
            var w = new JsonWriter();
            w.BeginObject();
            if (Type != null)
            {
                w.Key("type");
                w.String(Type);
            }
            Options.OptionalString(w, "agent_id", AgentId);
            Options.OptionalString(w, "bin", Bin);
            Options.OptionalString(w, "model", Model);
            Options.StringList(w, "extra_args", ExtraArgs);
            Options.OptionalString(w, "cwd", Cwd);
            Options.StringMap(w, "env", Env);
            w.EndObject();
            return w.ToString();
        }
    }
}
