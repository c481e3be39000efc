//! The one definition of what a binding can ask for: which harness and how to start it
//! ([`AgentSpec`]), and what one run is ([`RunRequest`]), with ONE validation that names the
//! bad field (in the caller's language's spelling, see [`Naming`]) and what is allowed.
//!
//! Both types are plain data with a JSON form (snake_case keys, unknown keys refused), which is
//! how the C ABI and every language on it (Go, C#, Java, Kotlin) pass them; Python and Node
//! build them field by field. Defaults and limits live here, not in bindings.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::decode::Agent;
use crate::error::{Error, ErrorKind};
use crate::framing::DEFAULT_MAX_LINE_BYTES;
use crate::stream::{Backpressure, CancellationToken, DEFAULT_BYTE_BUDGET, DEFAULT_HIGH_WATER, SharedBudget};

/// The largest number of milliseconds any option takes: 2^53 − 1 (exact in every language's
/// numbers, JavaScript's included).
pub const MAX_MILLIS: u64 = (1 << 53) - 1;

/// The default grace period between SIGTERM and SIGKILL when a run is cancelled.
pub const DEFAULT_KILL_GRACE_MS: u64 = 5_000;

/// The default stall limit: how long a reader may leave delivered items unread.
pub const DEFAULT_STALL_MS: u64 = 30_000;

/// How the caller's language spells option names, so that a validation message names the field
/// the way the caller wrote it (`timeout_ms` in Python, C and JSON; `timeoutMs` in TypeScript
/// and Java; `TimeoutMs` in Go and C#).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// `timeout_ms` (Python, C, the JSON form).
    #[default]
    Snake,
    /// `timeoutMs` (TypeScript, Java, Kotlin).
    Camel,
    /// `TimeoutMs` (Go, C#).
    Pascal,
}

impl Naming {
    /// `field` (written snake_case, dotted for nested fields) in this spelling.
    pub fn field(self, field: &str) -> String {
        match self {
            Naming::Snake => field.to_string(),
            Naming::Camel | Naming::Pascal => field
                .split('.')
                .map(|part| {
                    let camel = crate::casing::camel_case(part);
                    if self == Naming::Pascal { upper_first(&camel) } else { camel }
                })
                .collect::<Vec<_>>()
                .join("."),
        }
    }
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// An invalid-argument error naming `field` in the caller's spelling.
pub(crate) fn invalid(naming: Naming, field: &str, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{} {what}", naming.field(field)))
}

/// A number of milliseconds from a language whose numbers are floating point (JavaScript,
/// Python floats): finite, whole or not (rounded up to the next millisecond, so a positive
/// value never becomes 0), within `0..=MAX_MILLIS`. The error names `field`.
pub fn millis_from_f64(value: f64, field: &str, naming: Naming) -> Result<u64, Error> {
    if value.is_finite() && (0.0..=MAX_MILLIS as f64).contains(&value) {
        Ok(value.ceil() as u64)
    } else {
        Err(invalid(
            naming,
            field,
            format_args!("must be a number of milliseconds from 0 to {MAX_MILLIS}, got {value}"),
        ))
    }
}

/// A count (events, bytes) from a language whose numbers are floating point: a whole number
/// within `0..=2^53-1`. The error names `field`.
pub fn count_from_f64(value: f64, field: &str, naming: Naming) -> Result<u64, Error> {
    if value.is_finite() && value.fract() == 0.0 && (0.0..=MAX_MILLIS as f64).contains(&value) {
        Ok(value as u64)
    } else {
        Err(invalid(naming, field, format_args!("must be a whole number from 0 to {MAX_MILLIS}, got {value}")))
    }
}

/// A field of struct type read from an object only. serde would also take a struct's fields
/// as an array, by position (`"limits": [1, 2]`), which gets around the unknown-key check and
/// silently gives the fields left out their defaults.
pub(crate) fn object_only<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct ObjectOnly<T>(std::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for ObjectOnly<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    deserializer.deserialize_map(ObjectOnly(std::marker::PhantomData))
}

/// Parse a JSON object into `T`. serde would also take a struct's fields as an array, by
/// position (`["hello"]` for `{"prompt": "hello"}`), which gets around the unknown-key check:
/// anything but an object is refused, with serde's own message otherwise.
pub fn json_object<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
    match json.trim_start().as_bytes().first() {
        Some(b'{') => serde_json::from_str(json).map_err(|e| e.to_string()),
        Some(b'[') => Err("expected a JSON object ({\"key\": value, …}), found an array".into()),
        _ => serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(json)
            .map_err(|e| e.to_string())
            .and_then(|_| Err("expected a JSON object".into())),
    }
}

/// A shell command line as the argv of a command run: `["sh", "-c", line]`, the one way every
/// binding turns a command given as a string into a program and its arguments. A blank line is
/// an `invalid_argument` error naming `command` in the caller's spelling.
pub fn shell_command(line: &str, naming: Naming) -> Result<Vec<String>, Error> {
    if line.trim().is_empty() {
        return Err(invalid(
            naming,
            "command",
            "must not be blank: give a shell command line (e.g. \"ls -la\") or the program and its arguments",
        ));
    }
    Ok(vec!["sh".to_string(), "-c".to_string(), line.to_string()])
}

/// Which harness to run and how to start it: the seed's `AgentConfig`, in every language.
///
/// JSON form: `{"type": "claude", "agent_id"?, "bin"?, "model"?, "extra_args"?, "cwd"?, "env"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The harness: `claude` (or `claude-code`), `codex`, `gemini`, `qwen`, `kimi`, `opencode`,
    /// `droid`.
    #[serde(rename = "type")]
    pub agent: String,
    /// The id hook events report as `agent_id` (default: the agent's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The harness executable: a path, or a command name looked up on PATH (default: the
    /// harness's usual command, e.g. `claude`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin: Option<String>,
    /// The model to ask for, passed with the harness's own flag (default: the harness's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Extra arguments, after the streaming flags and before the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Working directory of the harness (default: the current directory of the process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Environment variables added to (or overriding) the inherited environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl AgentSpec {
    /// A spec for `agent` with every default.
    pub fn new(agent: impl Into<String>) -> Self {
        AgentSpec {
            agent: agent.into(),
            agent_id: None,
            bin: None,
            model: None,
            extra_args: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
        }
    }

    /// Parse the JSON form (unknown keys are an error naming them).
    pub fn from_json(json: &str) -> Result<Self, Error> {
        json_object(json).map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("invalid agent config JSON: {e}")))
    }

    /// Validate and resolve into the runner's configuration.
    pub fn to_config(&self, naming: Naming) -> Result<crate::runner::AgentConfig, Error> {
        let agent: Agent = self.agent.parse().map_err(|e: crate::decode::UnknownAgent| {
            Error::new(ErrorKind::InvalidArgument, format!("{}: {e}", naming.field("type")))
        })?;
        if let Some(id) = &self.agent_id {
            non_empty(naming, "agent_id", id)?;
        }
        if let Some(bin) = &self.bin {
            non_empty(naming, "bin", bin)?;
        }
        if let Some(model) = &self.model {
            non_empty(naming, "model", model)?;
        }
        if let Some(cwd) = &self.cwd {
            non_empty(naming, "cwd", cwd)?;
        }
        check_env(naming, "env", &self.env)?;
        for (i, arg) in self.extra_args.iter().enumerate() {
            no_nul(naming, &format!("extra_args[{i}]"), arg)?;
        }
        let mut config = crate::runner::AgentConfig::new(agent);
        config.agent_id = self.agent_id.clone();
        config.bin = self.bin.as_ref().map(PathBuf::from);
        config.model = self.model.clone();
        config.extra_args = self.extra_args.clone();
        config.cwd = self.cwd.as_ref().map(PathBuf::from);
        config.env = self.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        Ok(config)
    }
}

fn non_empty(naming: Naming, field: &str, value: &str) -> Result<(), Error> {
    if value.is_empty() {
        return Err(invalid(naming, field, "must not be empty (leave it out for the default)"));
    }
    no_nul(naming, field, value)
}

fn no_nul(naming: Naming, field: &str, value: &str) -> Result<(), Error> {
    if value.contains('\0') {
        return Err(invalid(naming, field, "must not contain a NUL character"));
    }
    Ok(())
}

/// A harness session id: non-empty, no NUL, and not starting with `-` (it is passed on the
/// harness's command line, where it must never read as an option).
pub(crate) fn check_session_id(naming: Naming, field: &str, id: &str) -> Result<(), Error> {
    non_empty(naming, field, id)?;
    if id.starts_with('-') {
        return Err(invalid(
            naming,
            field,
            format_args!("must not start with '-' (got {id:?}): it is not a session id"),
        ));
    }
    Ok(())
}

fn check_env(naming: Naming, field: &str, env: &BTreeMap<String, String>) -> Result<(), Error> {
    for (name, value) in env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(invalid(
                naming,
                field,
                format_args!("has an invalid variable name {name:?}: names must be non-empty, without '=' or NUL"),
            ));
        }
        no_nul(naming, &format!("{field}.{name}"), value)?;
    }
    Ok(())
}

/// Limits of one run: how much may wait unread for the reader, how long, and how long one
/// harness line may be. Every field has a default (see the constants).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Unread events that may wait before arriving text deltas merge (default 256; 0 merges
    /// from the first delta).
    pub high_water: u64,
    /// Unread bytes that may wait (default 8 MiB, > 0). Past it, text deltas merge and the
    /// harness's output is read no faster than the reader reads.
    pub byte_budget: u64,
    /// How long delivered events may stay unread before the run is cancelled as stalled, in
    /// milliseconds (default 30 000, > 0).
    pub stall_ms: u64,
    /// The longest harness stdout line decoded, in bytes (default 16 MiB, > 0); a longer line
    /// is skipped and reported.
    pub max_line_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            high_water: DEFAULT_HIGH_WATER as u64,
            byte_budget: DEFAULT_BYTE_BUDGET as u64,
            stall_ms: DEFAULT_STALL_MS,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES as u64,
        }
    }
}

impl Limits {
    fn validate(&self, naming: Naming) -> Result<(), Error> {
        if self.byte_budget == 0 || usize::try_from(self.byte_budget).is_err() {
            return Err(invalid(
                naming,
                "limits.byte_budget",
                format_args!("must be greater than 0, got {}", self.byte_budget),
            ));
        }
        if self.stall_ms == 0 || self.stall_ms > MAX_MILLIS {
            return Err(invalid(
                naming,
                "limits.stall_ms",
                format_args!("must be a number of milliseconds from 1 to {MAX_MILLIS}, got {}", self.stall_ms),
            ));
        }
        if self.max_line_bytes == 0 || usize::try_from(self.max_line_bytes).is_err() {
            return Err(invalid(
                naming,
                "limits.max_line_bytes",
                format_args!("must be greater than 0, got {}", self.max_line_bytes),
            ));
        }
        Ok(())
    }

    /// The stream's backpressure policy.
    pub fn backpressure(&self) -> Backpressure {
        Backpressure {
            high_water: usize::try_from(self.high_water).unwrap_or(usize::MAX),
            byte_budget: usize::try_from(self.byte_budget).unwrap_or(usize::MAX),
            stall_seconds: self.stall_ms as f64 / 1000.0,
        }
    }
}

/// How the caller reads the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReadMode {
    /// Deliveries go to the handlers subscribed on the client (`on(...)`) and to the run's
    /// hook handler: only their channels are buffered. With no handler at all the run is
    /// await-only (events are numbered and discarded; only the result is kept).
    #[default]
    Handlers,
    /// The caller iterates the whole stream itself (every channel, and hook events when
    /// `hooks` is on), besides any subscribed handlers.
    Iterate,
    /// Nobody reads: events are numbered and discarded; only the result is kept.
    AwaitOnly,
}

/// One run: a harness run (`prompt`) or a command run (`command`), and how to run it.
///
/// JSON form: snake_case keys, every key optional but one of `prompt` / `command`, unknown keys
/// refused. Per-run `model`, `cwd` and `env` override the client's [`AgentSpec`] for this run
/// only.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct RunRequest {
    /// The prompt of a harness run. Exactly one of `prompt` and `command` is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A command run (`execute_command`): the program and its arguments (not a shell string:
    /// use `["sh", "-c", "…"]` for one). No content decoding, the same lifecycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The model for this run (default: the client's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The working directory for this run (default: the client's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Environment variables for this run, on top of the client's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Cancel the run after this many milliseconds (reported as a stop: `run.stopped`).
    /// Absent: no time limit. Must be greater than 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A background run: the caller is not waiting on it (terminal reasons `run_background_*`).
    pub background: bool,
    /// Derive `on_event` hook events (a run hook handler, or hooks in an iterated stream).
    pub hooks: bool,
    /// Mask secret shapes in everything derived from tool input (default true).
    pub redact: bool,
    /// Continue this harness session (a session id a previous run reported) instead of the
    /// client's current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// Tools whose in-flight calls are safe to retry when the run is cancelled (reported
    /// failed-and-retryable instead of indeterminate).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub idempotent_tools: Vec<String>,
    /// Grace period between SIGTERM and SIGKILL when the run is cancelled, in milliseconds
    /// (default 5 000).
    pub kill_grace_ms: u64,
    /// Buffer, stall and line limits (a JSON object: see [`object_only`]).
    #[serde(deserialize_with = "object_only")]
    pub limits: Limits,
    /// How the caller reads the run.
    pub read: ReadMode,
    /// A caller's own cancellation token (Rust callers): cancelling it cancels the run through
    /// the one cancellation path, reason `caller`.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub cancel_token: Option<CancellationToken>,
    /// A deadline (Rust callers): the run is stopped at this instant, like a timeout. With
    /// `timeout_ms` too, whichever comes first.
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub deadline: Option<Instant>,
    /// A byte allowance shared with other runs: the run takes one of its permits for its
    /// lifetime and its byte budget is the budget's per-run share (refused when every permit
    /// is taken).
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub budget: Option<SharedBudget>,
}

impl Default for RunRequest {
    /// Neither a prompt nor a command yet; every option at its default (redaction on, the
    /// default kill grace and limits, read by handlers).
    fn default() -> Self {
        RunRequest {
            prompt: None,
            command: None,
            model: None,
            cwd: None,
            env: BTreeMap::new(),
            timeout_ms: None,
            background: false,
            hooks: false,
            redact: true,
            resume: None,
            idempotent_tools: Vec::new(),
            kill_grace_ms: DEFAULT_KILL_GRACE_MS,
            limits: Limits::default(),
            read: ReadMode::default(),
            cancel_token: None,
            deadline: None,
            budget: None,
        }
    }
}

/// The numeric options of a run as a language whose numbers are floating point gives them
/// (JavaScript, Python): each `None` keeps the default, each value is checked and converted by
/// [`millis_from_f64`] (milliseconds) or [`count_from_f64`] (counts), the error naming the field
/// in the caller's spelling. Ranges are then [`RunRequest::validate`]'s.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunNumbers {
    /// `timeout_ms`.
    pub timeout_ms: Option<f64>,
    /// `kill_grace_ms`.
    pub kill_grace_ms: Option<f64>,
    /// `limits.high_water`.
    pub high_water: Option<f64>,
    /// `limits.byte_budget`.
    pub byte_budget: Option<f64>,
    /// `limits.stall_ms`.
    pub stall_ms: Option<f64>,
    /// `limits.max_line_bytes`.
    pub max_line_bytes: Option<f64>,
}

impl RunRequest {
    /// A harness run of `prompt` with every default.
    pub fn prompt(prompt: impl Into<String>) -> Self {
        RunRequest { prompt: Some(prompt.into()), ..RunRequest::defaults() }
    }

    /// A command run of `argv` with every default.
    pub fn command(argv: impl IntoIterator<Item = impl Into<String>>) -> Self {
        RunRequest { command: Some(argv.into_iter().map(Into::into).collect()), ..RunRequest::defaults() }
    }

    fn defaults() -> Self {
        RunRequest::default()
    }

    /// Parse the JSON form (unknown keys are an error naming them; absent keys take their
    /// defaults).
    pub fn from_json(json: &str) -> Result<Self, Error> {
        json_object(json).map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("invalid run options JSON: {e}")))
    }

    /// Check every field; the error names the first bad one and what is allowed.
    pub fn validate(&self, naming: Naming) -> Result<(), Error> {
        match (&self.prompt, &self.command) {
            (Some(_), Some(_)) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "give either {} (a harness run) or {} (a command run), not both",
                        naming.field("prompt"),
                        naming.field("command")
                    ),
                ));
            }
            (None, None) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "{} is required (or {} for a command run)",
                        naming.field("prompt"),
                        naming.field("command")
                    ),
                ));
            }
            (Some(prompt), None) => no_nul(naming, "prompt", prompt)?,
            (None, Some(argv)) => {
                match argv.first() {
                    None => {
                        return Err(invalid(
                            naming,
                            "command",
                            "must not be empty: give the program and its arguments",
                        ));
                    }
                    Some(program) if program.is_empty() => {
                        return Err(invalid(naming, "command[0]", "must name the program to run"));
                    }
                    Some(_) => {}
                }
                for (i, arg) in argv.iter().enumerate() {
                    no_nul(naming, &format!("command[{i}]"), arg)?;
                }
                if self.resume.is_some() {
                    return Err(invalid(naming, "resume", "applies to harness runs only, not to a command"));
                }
            }
        }
        if let Some(model) = &self.model {
            non_empty(naming, "model", model)?;
        }
        if let Some(cwd) = &self.cwd {
            non_empty(naming, "cwd", cwd)?;
        }
        if let Some(resume) = &self.resume {
            check_session_id(naming, "resume", resume)?;
        }
        check_env(naming, "env", &self.env)?;
        if let Some(t) = self.timeout_ms.filter(|&t| t == 0 || t > MAX_MILLIS) {
            return Err(invalid(
                naming,
                "timeout_ms",
                format_args!(
                    "must be a number of milliseconds from 1 to {MAX_MILLIS}, got {t} (leave it out for no time limit)"
                ),
            ));
        }
        if self.kill_grace_ms > MAX_MILLIS {
            return Err(invalid(
                naming,
                "kill_grace_ms",
                format_args!("must be a number of milliseconds from 0 to {MAX_MILLIS}, got {}", self.kill_grace_ms),
            ));
        }
        self.limits.validate(naming)
    }

    /// This request with the numbers a floating-point language gave (see [`RunNumbers`]).
    pub fn with_numbers(mut self, numbers: RunNumbers, naming: Naming) -> Result<Self, Error> {
        let millis = |v: Option<f64>, field: &str| v.map(|v| millis_from_f64(v, field, naming)).transpose();
        let count = |v: Option<f64>, field: &str| v.map(|v| count_from_f64(v, field, naming)).transpose();
        if let Some(t) = millis(numbers.timeout_ms, "timeout_ms")? {
            self.timeout_ms = Some(t);
        }
        if let Some(g) = millis(numbers.kill_grace_ms, "kill_grace_ms")? {
            self.kill_grace_ms = g;
        }
        if let Some(h) = count(numbers.high_water, "limits.high_water")? {
            self.limits.high_water = h;
        }
        if let Some(b) = count(numbers.byte_budget, "limits.byte_budget")? {
            self.limits.byte_budget = b;
        }
        if let Some(s) = millis(numbers.stall_ms, "limits.stall_ms")? {
            self.limits.stall_ms = s;
        }
        if let Some(m) = count(numbers.max_line_bytes, "limits.max_line_bytes")? {
            self.limits.max_line_bytes = m;
        }
        Ok(self)
    }

    /// The time limit as a duration.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_form_defaults_and_unknown_keys() {
        let r = RunRequest::from_json(r#"{"prompt": "hi"}"#).unwrap();
        assert_eq!(r.prompt.as_deref(), Some("hi"));
        assert!(r.redact, "redaction is on by default");
        assert_eq!(r.kill_grace_ms, DEFAULT_KILL_GRACE_MS);
        assert_eq!(r.limits, Limits::default());
        assert_eq!(r.read, ReadMode::Handlers);
        r.validate(Naming::Snake).unwrap();

        // serde's by-position form of a struct is not a way around the key check.
        let e = RunRequest::from_json(r#"["hello"]"#).unwrap_err();
        assert!(e.message.contains("expected a JSON object") && e.message.contains("array"), "{e}");
        let e = AgentSpec::from_json(r#" ["codex"]"#).unwrap_err();
        assert!(e.message.contains("expected a JSON object"), "{e}");
        assert!(RunRequest::from_json("42").unwrap_err().message.contains("expected a map"));
        assert!(RunRequest::from_json("{").unwrap_err().message.contains("EOF"));
        let e = RunRequest::from_json(r#"{"command": ["echo", "hi"], "limits": [1, 1, 1, 1]}"#).unwrap_err();
        assert!(e.message.contains("expected a JSON object"), "{e}");
        let e = RunRequest::from_json(r#"{"prompt": "hi", "timeout": 5}"#).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("unknown field `timeout`"), "{e}");
        let e = RunRequest::from_json(r#"{"prompt": "hi", "limits": {"stall_seconds": 5}}"#).unwrap_err();
        assert!(e.message.contains("stall_seconds"), "{e}");
        let r = RunRequest::from_json(r#"{"command": ["echo", "x"], "read": "iterate", "redact": false}"#).unwrap();
        assert_eq!(r.read, ReadMode::Iterate);
        assert!(!r.redact);
        r.validate(Naming::Snake).unwrap();
    }

    #[test]
    fn validation_names_the_field_in_the_callers_spelling() {
        let mut r = RunRequest::prompt("hi");
        r.timeout_ms = Some(0);
        let cases = [
            (Naming::Snake, "timeout_ms must be"),
            (Naming::Camel, "timeoutMs must be"),
            (Naming::Pascal, "TimeoutMs must be"),
        ];
        for (naming, start) in cases {
            let e = r.validate(naming).unwrap_err();
            assert!(e.message.starts_with(start), "{naming:?}: {e}");
            assert!(e.message.contains("leave it out for no time limit"), "{e}");
        }
        let mut r = RunRequest::prompt("hi");
        r.limits.byte_budget = 0;
        assert!(r.validate(Naming::Camel).unwrap_err().message.starts_with("limits.byteBudget must be greater than 0"));
        let mut r = RunRequest::prompt("hi");
        r.limits.stall_ms = 0;
        assert!(r.validate(Naming::Pascal).unwrap_err().message.starts_with("Limits.StallMs must be"));
    }

    #[test]
    fn exactly_one_of_prompt_and_command() {
        let none = RunRequest::defaults();
        assert!(none.validate(Naming::Snake).unwrap_err().message.contains("prompt is required"));
        let mut both = RunRequest::prompt("x");
        both.command = Some(vec!["ls".into()]);
        assert!(both.validate(Naming::Snake).unwrap_err().message.contains("not both"));
        let empty = RunRequest::command(Vec::<String>::new());
        assert!(empty.validate(Naming::Snake).unwrap_err().message.contains("command must not be empty"));
        let mut resumed = RunRequest::command(["ls"]);
        resumed.resume = Some("s".into());
        assert!(resumed.validate(Naming::Snake).unwrap_err().message.contains("harness runs only"));
    }

    #[test]
    fn env_and_text_fields_are_checked() {
        let mut r = RunRequest::prompt("hi");
        r.env.insert("A=B".into(), "x".into());
        assert!(r.validate(Naming::Snake).unwrap_err().message.contains("invalid variable name \"A=B\""));
        let mut r = RunRequest::prompt("hi");
        r.env.insert("A".into(), "x\0y".into());
        assert!(r.validate(Naming::Snake).unwrap_err().message.starts_with("env.A must not contain a NUL"));
        let r = RunRequest::prompt("a\0b");
        assert!(r.validate(Naming::Snake).unwrap_err().message.starts_with("prompt must not contain"));
        let mut r = RunRequest::prompt("hi");
        r.model = Some(String::new());
        assert!(r.validate(Naming::Snake).unwrap_err().message.starts_with("model must not be empty"));
    }

    #[test]
    fn agent_spec_resolves_and_validates() {
        let spec = AgentSpec::from_json(r#"{"type": "claude-code", "model": "m", "env": {"K": "v"}}"#).unwrap();
        let config = spec.to_config(Naming::Snake).unwrap();
        assert_eq!(config.agent, Agent::Claude);
        assert_eq!(config.model.as_deref(), Some("m"));
        assert_eq!(config.env, [("K".to_string(), "v".to_string())]);
        let e = AgentSpec::new("nope").to_config(Naming::Camel).unwrap_err();
        assert!(e.message.starts_with("type: unknown agent"), "{e}");
        assert!(e.message.contains("opencode"), "the message lists the agents: {e}");
        let e = AgentSpec::from_json(r#"{"type": "codex", "binary": "x"}"#).unwrap_err();
        assert!(e.message.contains("unknown field `binary`"), "{e}");
    }

    #[test]
    fn numbers_of_floating_point_languages_fill_a_request() {
        let numbers =
            RunNumbers { timeout_ms: Some(1.5), stall_ms: Some(100.0), high_water: Some(0.0), ..RunNumbers::default() };
        let r = RunRequest::prompt("x").with_numbers(numbers, Naming::Snake).unwrap();
        assert_eq!(r.timeout_ms, Some(2));
        assert_eq!(r.limits.stall_ms, 100);
        assert_eq!(r.limits.high_water, 0);
        assert_eq!(r.limits.byte_budget, Limits::default().byte_budget, "absent: the default");
        assert_eq!(r.kill_grace_ms, DEFAULT_KILL_GRACE_MS);
        let bad = RunNumbers { byte_budget: Some(1.5), ..RunNumbers::default() };
        let e = RunRequest::prompt("x").with_numbers(bad, Naming::Camel).unwrap_err();
        assert!(e.message.starts_with("limits.byteBudget must be a whole number"), "{e}");
        let bad = RunNumbers { kill_grace_ms: Some(f64::NAN), ..RunNumbers::default() };
        let e = RunRequest::prompt("x").with_numbers(bad, Naming::Snake).unwrap_err();
        assert!(e.message.starts_with("kill_grace_ms must be a number of milliseconds"), "{e}");
        let zero = RunNumbers { timeout_ms: Some(0.0), ..RunNumbers::default() };
        let e = RunRequest::prompt("x").with_numbers(zero, Naming::Snake).unwrap().validate(Naming::Snake).unwrap_err();
        assert!(e.message.starts_with("timeout_ms must be"), "the range is validate's: {e}");
    }

    #[test]
    fn shell_command_lines_run_through_sh() {
        assert_eq!(shell_command("ls -la", Naming::Snake).unwrap(), ["sh", "-c", "ls -la"]);
        let e = shell_command("  \t", Naming::Camel).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.starts_with("command must not be blank"), "{e}");
        let r = RunRequest::command(shell_command("echo hi", Naming::Snake).unwrap());
        r.validate(Naming::Snake).unwrap();
    }

    #[test]
    fn numbers_from_floating_point_languages() {
        assert_eq!(millis_from_f64(1.2, "timeout_ms", Naming::Camel).unwrap(), 2);
        assert_eq!(millis_from_f64(0.0, "timeout_ms", Naming::Camel).unwrap(), 0);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e20] {
            let e = millis_from_f64(bad, "timeout_ms", Naming::Camel).unwrap_err();
            assert!(e.message.starts_with("timeoutMs must be a number of milliseconds"), "{e}");
        }
        assert_eq!(count_from_f64(64.0, "limits.high_water", Naming::Snake).unwrap(), 64);
        assert!(count_from_f64(1.5, "limits.high_water", Naming::Snake).is_err());
    }
}
