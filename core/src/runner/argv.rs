//! The argv each harness needs for a headless, streaming run.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::decode::Agent;

/// How to start a harness: which binary, extra arguments, working directory, environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// Which harness.
    pub agent: Agent,
    /// The agent id reported on hook events (default: the agent's name).
    pub agent_id: Option<String>,
    /// Replaces the harness executable (default: the harness's usual command name on PATH).
    pub bin: Option<PathBuf>,
    /// The model to ask for, passed with the harness's own flag.
    pub model: Option<String>,
    /// Extra arguments, placed after the streaming flags and before the prompt.
    pub extra_args: Vec<String>,
    /// Working directory of the harness (default: the current one).
    pub cwd: Option<PathBuf>,
    /// Environment variables added to (or overriding) the inherited environment.
    pub env: Vec<(String, String)>,
}

impl AgentConfig {
    /// A config for `agent` with every default.
    pub fn new(agent: Agent) -> Self {
        AgentConfig {
            agent,
            agent_id: None,
            bin: None,
            model: None,
            extra_args: Vec::new(),
            cwd: None,
            env: Vec::new(),
        }
    }

    /// The id hooks report: the configured one, or the agent's name.
    pub fn agent_id(&self) -> String {
        self.agent_id.clone().unwrap_or_else(|| self.agent.name().to_string())
    }

    /// The executable to run.
    pub fn program(&self) -> OsString {
        match &self.bin {
            Some(p) => p.clone().into_os_string(),
            None => default_program(self.agent).into(),
        }
    }

    /// The arguments for a run with `prompt`.
    pub fn args(&self, prompt: &str) -> Vec<String> {
        harness_args(self.agent, prompt, self.model.as_deref(), &self.extra_args)
    }
}

/// The command name each harness installs.
pub fn default_program(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "claude",
        Agent::Codex => "codex",
        Agent::Gemini => "gemini",
        Agent::Qwen => "qwen",
        Agent::Kimi => "kimi",
        Agent::Opencode => "opencode",
        Agent::Droid => "droid",
    }
}

/// Headless streaming arguments (see each harness's docs; `extra` goes before the prompt).
pub fn harness_args(agent: Agent, prompt: &str, model: Option<&str>, extra: &[String]) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let mut args: Vec<String> = match agent {
        Agent::Claude => vec![s("--output-format"), s("stream-json"), s("--verbose")],
        Agent::Codex => vec![s("exec"), s("--json")],
        Agent::Gemini => vec![s("--output-format"), s("stream-json")],
        Agent::Qwen => vec![s("--output-format"), s("stream-json")],
        Agent::Kimi => vec![s("--print"), s("--output-format"), s("stream-json")],
        Agent::Opencode => vec![s("run"), s("--format"), s("json")],
        Agent::Droid => vec![s("exec"), s("--output-format"), s("stream-json")],
    };
    if let Some(m) = model {
        args.push(s(if agent == Agent::Claude { "--model" } else { "-m" }));
        args.push(s(m));
    }
    args.extend(extra.iter().cloned());
    match agent {
        Agent::Claude | Agent::Gemini | Agent::Qwen | Agent::Kimi => {
            args.push(s("-p"));
            args.push(s(prompt));
        }
        Agent::Codex | Agent::Opencode | Agent::Droid => {
            // A prompt starting with '-' must not be read as a flag.
            args.push(s("--"));
            args.push(s(prompt));
        }
    }
    args
}

/// The arguments that make a harness continue an earlier session (`session_id`: the
/// `sessionId` its events carried) instead of starting a new one, as each CLI documents them:
/// claude, gemini and qwen `--resume <id>`, codex's `exec resume <id>` subcommand, kimi `-r <id>`,
/// opencode `--session <id>`, droid `--session-id <id>`. Pass them as extra arguments
/// ([`AgentConfig::extra_args`]): they go after the streaming flags and before the prompt.
pub fn resume_args(agent: Agent, session_id: &str) -> Vec<String> {
    let flag = match agent {
        Agent::Claude | Agent::Gemini | Agent::Qwen => "--resume",
        Agent::Codex => "resume",
        Agent::Kimi => "-r",
        Agent::Opencode => "--session",
        Agent::Droid => "--session-id",
    };
    vec![flag.to_string(), session_id.to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headless_streaming_argv_per_harness() {
        assert_eq!(
            harness_args(Agent::Claude, "hi", None, &[]),
            ["--output-format", "stream-json", "--verbose", "-p", "hi"]
        );
        assert_eq!(
            harness_args(Agent::Codex, "hi", Some("gpt"), &["--yolo".into()]),
            ["exec", "--json", "-m", "gpt", "--yolo", "--", "hi"]
        );
        assert_eq!(
            harness_args(Agent::Kimi, "hi", None, &[]),
            ["--print", "--output-format", "stream-json", "-p", "hi"]
        );
        assert_eq!(AgentConfig::new(Agent::Opencode).program(), "opencode");
    }

    #[test]
    fn resume_goes_between_the_streaming_flags_and_the_prompt() {
        assert_eq!(
            harness_args(Agent::Claude, "hi", None, &resume_args(Agent::Claude, "s1")),
            ["--output-format", "stream-json", "--verbose", "--resume", "s1", "-p", "hi"]
        );
        assert_eq!(
            harness_args(Agent::Codex, "hi", None, &resume_args(Agent::Codex, "t1")),
            ["exec", "--json", "resume", "t1", "--", "hi"]
        );
        for agent in Agent::ALL {
            assert_eq!(resume_args(agent, "x").len(), 2);
        }
    }
}
