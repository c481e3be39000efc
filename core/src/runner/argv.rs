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

    /// The arguments for a run with `prompt` that continues the harness session `session_id`
    /// (see [`resume_args`]); without one, [`args`](Self::args).
    pub fn args_resuming(&self, prompt: &str, session_id: Option<&str>) -> Vec<String> {
        let mut args = self.args(prompt);
        if let Some(id) = session_id {
            let at = resume_position(self.agent, &args);
            let resume = resume_args(self.agent, id);
            args.splice(at..at, resume);
        }
        args
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
///
/// The prompt is never read as an option, whatever it starts with (`--yolo`, `-p`, `--`): each
/// harness gets it the way its own argument parser takes a value verbatim.
///
/// | harness | parser | the prompt is passed as |
/// |---|---|---|
/// | claude | commander (`-p` is the boolean `--print`, the prompt positional) | `-p -- <prompt>` |
/// | codex | clap (`exec [PROMPT]`) | `-- <prompt>` |
/// | opencode | yargs (`run [message..]`) | `-- <prompt>` |
/// | droid | commander (`exec [prompt]`) | `-- <prompt>` |
/// | gemini, qwen | yargs (`-p/--prompt <string>`; `-p --yolo` reads `--yolo` as a flag) | `--prompt=<prompt>` |
/// | kimi | click/typer (`-p/--prompt TEXT`) | `--prompt=<prompt>` |
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
        // `-p` is claude's boolean print mode; the prompt is its positional argument, after the
        // end of options.
        Agent::Claude => args.extend([s("-p"), s("--"), s(prompt)]),
        // An option's value joined with `=` is taken verbatim by yargs and click, even when it
        // starts with `-`; a separate argument starting with `-` is read as the next option.
        Agent::Gemini | Agent::Qwen | Agent::Kimi => args.push(format!("--prompt={prompt}")),
        Agent::Codex | Agent::Opencode | Agent::Droid => args.extend([s("--"), s(prompt)]),
    }
    args
}

/// How each harness continues a session by id, in its headless mode (from each CLI's own
/// reference):
///
/// | harness | continue session `<id>` |
/// |---|---|
/// | claude | `--resume <id>` |
/// | codex | `exec … resume <id> [PROMPT]` (a subcommand of `exec`, after exec's options) |
/// | gemini, qwen | `--resume <id>` |
/// | kimi | `--session <id>` |
/// | opencode | `run --session <id>` |
/// | droid | `exec --session-id <id>` |
///
/// The id is passed joined to its option (`--resume=<id>`) where the parser takes that form, so
/// it is never read as an option itself; the bridge also refuses ids that start with `-`.
pub fn resume_args(agent: Agent, session_id: &str) -> Vec<String> {
    match agent {
        Agent::Claude | Agent::Gemini | Agent::Qwen => vec![format!("--resume={session_id}")],
        Agent::Kimi | Agent::Opencode => vec![format!("--session={session_id}")],
        Agent::Droid => vec![format!("--session-id={session_id}")],
        Agent::Codex => vec!["resume".to_string(), session_id.to_string()],
    }
}

/// How many arguments at the end of [`harness_args`] carry the prompt: `-p -- <prompt>`
/// (claude), `--prompt=<prompt>` (gemini, qwen, kimi), `-- <prompt>` (codex, opencode, droid).
fn prompt_segment(agent: Agent) -> usize {
    match agent {
        Agent::Claude => 3,
        Agent::Gemini | Agent::Qwen | Agent::Kimi => 1,
        Agent::Codex | Agent::Opencode | Agent::Droid => 2,
    }
}

/// Where the resume arguments go in a run's argv: after the streaming flags, the model and the
/// extra arguments (codex: its `resume` subcommand follows exec's options), before the prompt
/// and what introduces it (`--`, `-p`), so the end of options still comes right before it.
fn resume_position(agent: Agent, args: &[String]) -> usize {
    args.len().saturating_sub(prompt_segment(agent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headless_streaming_argv_per_harness() {
        assert_eq!(
            harness_args(Agent::Claude, "hi", None, &[]),
            ["--output-format", "stream-json", "--verbose", "-p", "--", "hi"]
        );
        assert_eq!(
            harness_args(Agent::Codex, "hi", Some("gpt"), &["--yolo".into()]),
            ["exec", "--json", "-m", "gpt", "--yolo", "--", "hi"]
        );
        assert_eq!(
            harness_args(Agent::Kimi, "hi", None, &[]),
            ["--print", "--output-format", "stream-json", "--prompt=hi"]
        );
        assert_eq!(harness_args(Agent::Gemini, "hi", None, &[]), ["--output-format", "stream-json", "--prompt=hi"]);
        assert_eq!(AgentConfig::new(Agent::Opencode).program(), "opencode");
    }

    /// Prompts that look like options, the ones a harness would act on included.
    const OPTION_LIKE_PROMPTS: &[&str] = &[
        "--yolo",
        "--dangerously-skip-permissions",
        "-p",
        "-",
        "--",
        "-y",
        "--prompt=other",
        "--output-format=text",
        "-m gpt --yolo",
        "--help",
        "-\nmulti\nline",
    ];

    /// How each harness's parser reads argv, reduced to the one question: which arguments are
    /// options. Commander and clap stop at `--`; yargs and click take `--name=value` verbatim.
    fn prompt_as_parsed(agent: Agent, args: &[String]) -> Option<String> {
        match agent {
            Agent::Gemini | Agent::Qwen | Agent::Kimi => {
                let joined: Vec<&String> = args.iter().filter(|a| a.starts_with("--prompt=")).collect();
                (joined.len() == 1).then(|| joined[0]["--prompt=".len()..].to_string())
            }
            _ => {
                let end = args.iter().position(|a| a == "--")?;
                (args.len() == end + 2).then(|| args[end + 1].clone())
            }
        }
    }

    #[test]
    fn no_prompt_is_ever_read_as_an_option() {
        for agent in Agent::ALL {
            for prompt in OPTION_LIKE_PROMPTS {
                let args = harness_args(agent, prompt, Some("m"), &["--extra".into()]);
                assert_eq!(prompt_as_parsed(agent, &args).as_deref(), Some(*prompt), "{agent}: {args:?}");
                // Everything but the prompt is what an ordinary prompt gets: the prompt adds no option.
                let plain = harness_args(agent, "hello", Some("m"), &["--extra".into()]);
                assert_eq!(args[..args.len() - 1], plain[..plain.len() - 1], "{agent}: {prompt:?}");
            }
        }
    }

    #[test]
    fn resuming_adds_each_harness_own_option_before_the_prompt() {
        let resumed = |agent| AgentConfig::new(agent).args_resuming("hi", Some("S1"));
        let claude = resumed(Agent::Claude);
        assert!(claude.contains(&"--resume=S1".to_string()), "{claude:?}");
        assert_eq!(claude.last().unwrap(), "hi");
        let codex = resumed(Agent::Codex);
        let at = codex.iter().position(|a| a == "resume").unwrap();
        assert_eq!(codex[at + 1], "S1");
        assert!(codex.iter().position(|a| a == "--json").unwrap() < at, "exec's options come first: {codex:?}");
        assert_eq!(&codex[codex.len() - 2..], ["--", "hi"]);
        assert!(resumed(Agent::Kimi).contains(&"--session=S1".to_string()));
        assert!(resumed(Agent::Opencode).contains(&"--session=S1".to_string()));
        assert!(resumed(Agent::Droid).contains(&"--session-id=S1".to_string()));
        for agent in Agent::ALL {
            let plain = AgentConfig::new(agent).args("hi");
            let with = resumed(agent);
            assert_eq!(with.last(), plain.last(), "{agent}: the prompt stays last");
            assert_eq!(with.len(), plain.len() + resume_args(agent, "S1").len());
            assert_eq!(AgentConfig::new(agent).args_resuming("hi", None), plain);
        }
    }

    #[test]
    fn resuming_keeps_the_end_of_options_and_the_prompt_last() {
        for agent in Agent::ALL {
            for prompt in OPTION_LIKE_PROMPTS {
                let config = AgentConfig::new(agent);
                let plain = config.args(prompt);
                let with = config.args_resuming(prompt, Some("S1"));
                assert_eq!(prompt_as_parsed(agent, &with).as_deref(), Some(*prompt), "{agent}: {with:?}");
                // The resume arguments go right before the prompt's segment, which is unchanged.
                let segment = prompt_segment(agent);
                assert_eq!(with[with.len() - segment..], plain[plain.len() - segment..], "{agent}: {with:?}");
                let resume = resume_args(agent, "S1");
                let at = with.len() - segment - resume.len();
                assert_eq!(with[at..at + resume.len()], resume[..], "{agent}: {with:?}");
            }
        }
    }
}
