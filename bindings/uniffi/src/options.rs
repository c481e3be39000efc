//! What a Kotlin or Swift caller asks for, as uniffi records: [`AgentConfig`] (the core's
//! [`AgentSpec`]) and [`RunOptions`] (its [`RunRequest`]). Marshalling only: every default,
//! limit and validation message is the core's (`Naming::Camel`: the message names `timeoutMs`,
//! as both languages spell it). An option left `null` takes the core's default.
//!
//! The conversions destructure every field on both sides, so a field added to the core's
//! types fails to compile here until the records carry it.

use std::collections::HashMap;
use std::sync::Arc;

use agentstream_core::bridge::{AgentSpec, Limits, Naming, ReadMode as CoreReadMode, RunRequest};
use agentstream_core::bridge::{count_from_f64, millis_from_f64};

use crate::error::Result;
use crate::run::CancelToken;

/// How Kotlin and Swift spell option names in messages.
pub(crate) const NAMING: Naming = Naming::Camel;

/// Which harness to run and how to start it (the seed's `AgentConfig`).
#[derive(Debug, Clone, uniffi::Record)]
pub struct AgentConfig {
    /// The harness: `claude` (or `claude-code`), `codex`, `gemini`, `qwen`, `kimi`, `opencode`,
    /// `droid`.
    pub r#type: String,
    /// The id hook events report as `agent_id` (default: the agent's name).
    #[uniffi(default = None)]
    pub agent_id: Option<String>,
    /// The harness executable: a path, or a command name looked up on PATH (default: the
    /// harness's usual command, e.g. `claude`).
    #[uniffi(default = None)]
    pub bin: Option<String>,
    /// The model to ask for, with the harness's own flag (default: the harness's).
    #[uniffi(default = None)]
    pub model: Option<String>,
    /// Extra arguments, after the streaming flags and before the prompt.
    #[uniffi(default)]
    pub extra_args: Vec<String>,
    /// Working directory of the harness (default: the current directory of the process).
    #[uniffi(default = None)]
    pub cwd: Option<String>,
    /// Environment variables added to (or overriding) the inherited environment.
    #[uniffi(default)]
    pub env: HashMap<String, String>,
}

impl AgentConfig {
    pub(crate) fn to_spec(&self) -> AgentSpec {
        let AgentConfig { r#type, agent_id, bin, model, extra_args, cwd, env } = self.clone();
        AgentSpec { agent: r#type, agent_id, bin, model, extra_args, cwd, env: env.into_iter().collect() }
    }
}

/// How the caller reads a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ReadMode {
    /// Deliveries go to the listeners registered on the client (`on`) and to the run's hook
    /// listener; only their channels are buffered. With no listener at all the run is
    /// await-only.
    Handlers,
    /// The caller pulls the whole stream itself (every channel, and hook events when `hooks`
    /// is on), besides any registered listeners.
    Iterate,
    /// Nobody reads: events are numbered and discarded; only the result is kept.
    AwaitOnly,
}

impl From<ReadMode> for CoreReadMode {
    fn from(mode: ReadMode) -> Self {
        match mode {
            ReadMode::Handlers => CoreReadMode::Handlers,
            ReadMode::Iterate => CoreReadMode::Iterate,
            ReadMode::AwaitOnly => CoreReadMode::AwaitOnly,
        }
    }
}

impl From<CoreReadMode> for ReadMode {
    fn from(mode: CoreReadMode) -> Self {
        match mode {
            CoreReadMode::Handlers => ReadMode::Handlers,
            CoreReadMode::Iterate => ReadMode::Iterate,
            CoreReadMode::AwaitOnly => ReadMode::AwaitOnly,
        }
    }
}

/// Buffer, stall and line limits of one run; `null` takes the core's default.
#[derive(Debug, Clone, Default, uniffi::Record)]
pub struct RunLimits {
    /// Unread events that may wait before arriving text deltas merge (default 256; 0 merges
    /// from the first delta).
    #[uniffi(default = None)]
    pub high_water: Option<i64>,
    /// Unread bytes that may wait (default 8 MiB, > 0).
    #[uniffi(default = None)]
    pub byte_budget: Option<i64>,
    /// How long delivered events may stay unread before the run is cancelled as stalled, in
    /// milliseconds (default 30 000, > 0).
    #[uniffi(default = None)]
    pub stall_ms: Option<i64>,
    /// The longest harness stdout line decoded, in bytes (default 16 MiB, > 0); a longer line
    /// is skipped and reported.
    #[uniffi(default = None)]
    pub max_line_bytes: Option<i64>,
}

/// One run: a harness run (`prompt`) or a command run (`command`), and how to run it. Exactly
/// one of `prompt` and `command` is given. Per-run `model`, `cwd` and `env` override the
/// client's configuration for this run only.
#[derive(Debug, Clone, Default, uniffi::Record)]
pub struct RunOptions {
    /// The prompt of a harness run.
    #[uniffi(default = None)]
    pub prompt: Option<String>,
    /// A command run: the program and its arguments (not a shell string: use
    /// `["sh", "-c", "…"]` for one). No content decoding, the same lifecycle.
    #[uniffi(default = None)]
    pub command: Option<Vec<String>>,
    /// The model for this run (default: the client's).
    #[uniffi(default = None)]
    pub model: Option<String>,
    /// The working directory for this run (default: the client's).
    #[uniffi(default = None)]
    pub cwd: Option<String>,
    /// Environment variables for this run, on top of the client's.
    #[uniffi(default)]
    pub env: HashMap<String, String>,
    /// Cancel the run after this many milliseconds (reported as a stop: `run.stopped`);
    /// `null`: no time limit. Must be greater than 0.
    #[uniffi(default = None)]
    pub timeout_ms: Option<i64>,
    /// A background run: the caller is not waiting on it (terminal reasons
    /// `run_background_*`).
    #[uniffi(default = false)]
    pub background: bool,
    /// Derive hook events (`run.started`, `tool.started`, …): for the hook listener, or in a
    /// stream. Implied by passing a hook listener.
    #[uniffi(default = false)]
    pub hooks: bool,
    /// Mask secret shapes in everything derived from tool input (default true).
    #[uniffi(default = None)]
    pub redact: Option<bool>,
    /// Continue this harness session instead of the client's current one.
    #[uniffi(default = None)]
    pub resume: Option<String>,
    /// Tools whose in-flight calls are safe to retry when the run is cancelled.
    #[uniffi(default)]
    pub idempotent_tools: Vec<String>,
    /// Grace period between SIGTERM and SIGKILL when the run is cancelled, in milliseconds
    /// (default 5 000).
    #[uniffi(default = None)]
    pub kill_grace_ms: Option<i64>,
    /// Buffer, stall and line limits.
    #[uniffi(default = None)]
    pub limits: Option<RunLimits>,
    /// How the run is read (default: by the listeners).
    #[uniffi(default = None)]
    pub read: Option<ReadMode>,
}

/// Milliseconds from a signed 64-bit number: a negative value is refused with the core's
/// message for the field; the upper bound is the core's validation.
fn millis(value: i64, field: &str) -> Result<u64> {
    u64::try_from(value).or_else(|_| millis_from_f64(value as f64, field, NAMING)).map_err(Into::into)
}

/// A count (events, bytes) from a signed 64-bit number, as [`millis`].
fn count(value: i64, field: &str) -> Result<u64> {
    u64::try_from(value).or_else(|_| count_from_f64(value as f64, field, NAMING)).map_err(Into::into)
}

impl RunLimits {
    fn to_core(&self) -> Result<Limits> {
        let RunLimits { high_water, byte_budget, stall_ms, max_line_bytes } = self.clone();
        let d = Limits::default();
        Ok(Limits {
            high_water: high_water.map(|v| count(v, "limits.high_water")).transpose()?.unwrap_or(d.high_water),
            byte_budget: byte_budget.map(|v| count(v, "limits.byte_budget")).transpose()?.unwrap_or(d.byte_budget),
            stall_ms: stall_ms.map(|v| millis(v, "limits.stall_ms")).transpose()?.unwrap_or(d.stall_ms),
            max_line_bytes: max_line_bytes
                .map(|v| count(v, "limits.max_line_bytes"))
                .transpose()?
                .unwrap_or(d.max_line_bytes),
        })
    }
}

impl RunOptions {
    /// The core's request (not yet validated: `Client::start` does that, naming the field).
    pub(crate) fn to_request(&self, cancel: Option<&Arc<CancelToken>>) -> Result<RunRequest> {
        let RunOptions {
            prompt,
            command,
            model,
            cwd,
            env,
            timeout_ms,
            background,
            hooks,
            redact,
            resume,
            idempotent_tools,
            kill_grace_ms,
            limits,
            read,
        } = self.clone();
        let d = RunRequest::default();
        Ok(RunRequest {
            prompt,
            command,
            model,
            cwd,
            env: env.into_iter().collect(),
            timeout_ms: timeout_ms.map(|v| millis(v, "timeout_ms")).transpose()?,
            background,
            hooks,
            redact: redact.unwrap_or(d.redact),
            resume,
            idempotent_tools,
            kill_grace_ms: kill_grace_ms.map(|v| millis(v, "kill_grace_ms")).transpose()?.unwrap_or(d.kill_grace_ms),
            limits: limits.map(|l| l.to_core()).transpose()?.unwrap_or(d.limits),
            read: read.map(Into::into).unwrap_or(d.read),
            cancel_token: cancel.map(|t| t.token()),
            deadline: None,
            budget: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_options_take_the_cores_defaults() {
        let r = RunOptions { prompt: Some("hi".into()), ..Default::default() }.to_request(None).unwrap();
        let d = RunRequest::prompt("hi");
        assert_eq!(r.redact, d.redact);
        assert_eq!(r.kill_grace_ms, d.kill_grace_ms);
        assert_eq!(r.limits, d.limits);
        assert_eq!(r.read, d.read);
        r.validate(NAMING).unwrap();
    }

    #[test]
    fn negative_numbers_are_refused_naming_the_field_in_camel_case() {
        let o = RunOptions { prompt: Some("hi".into()), timeout_ms: Some(-5), ..Default::default() };
        let e = o.to_request(None).unwrap_err().to_string();
        assert!(e.starts_with("timeoutMs must be a number of milliseconds"), "{e}");
        let o = RunOptions {
            prompt: Some("hi".into()),
            limits: Some(RunLimits { byte_budget: Some(-1), ..Default::default() }),
            ..Default::default()
        };
        let e = o.to_request(None).unwrap_err().to_string();
        assert!(e.starts_with("limits.byteBudget must be a whole number"), "{e}");
    }

    #[test]
    fn the_config_keeps_every_field() {
        let c = AgentConfig {
            r#type: "codex".into(),
            agent_id: Some("a".into()),
            bin: Some("/bin/codex".into()),
            model: Some("m".into()),
            extra_args: vec!["--x".into()],
            cwd: Some("/tmp".into()),
            env: HashMap::from([("K".to_string(), "v".to_string())]),
        };
        let spec = c.to_spec();
        assert_eq!(spec.agent, "codex");
        assert_eq!(spec.bin.as_deref(), Some("/bin/codex"));
        assert_eq!(spec.env.get("K").map(String::as_str), Some("v"));
        spec.to_config(NAMING).unwrap();
    }
}
