//! `NativeClient`: the bridge's [`Client`] (the seed's `Evolve`) for JavaScript.
//!
//! Every rule lives in the bridge: the agent configuration's and the run options' validation
//! (messages name fields in TypeScript's spelling, [`Naming::Camel`]: `timeoutMs`,
//! `limits.stallMs`), the channel names, run vs. command, await-only vs. read, the harness
//! conversation successive runs continue, the controls and `status()`. This module converts.

use std::collections::{BTreeMap, HashMap};

use agentstream_core::bridge::{AgentSpec, Client, Naming, ReadMode, RunNumbers, RunRequest, shell_command};
use napi::bindgen_prelude::Result;
use napi_derive::napi;

use crate::run::{NativeRun, to_camel_json};
use crate::{Code, guard, js_error};

const NAMING: Naming = Naming::Camel;

/// How to start a harness (the wrapper's `AgentConfig`; types checked there, values here).
#[napi(object)]
pub struct NativeAgentConfig {
    pub agent: String,
    pub agent_id: Option<String>,
    pub bin: Option<String>,
    pub model: Option<String>,
    pub extra_args: Option<Vec<String>>,
    pub cwd: Option<String>,
    pub env: Option<HashMap<String, String>>,
}

/// One run (the wrapper's `RunOptions` / `ExecuteCommandOptions`): exactly one of `prompt`,
/// `command` (an argv) and `shell` (a command line run through `sh -c`). Times in
/// milliseconds; absent fields take the core's defaults.
#[napi(object)]
pub struct NativeRunOptions {
    pub prompt: Option<String>,
    pub command: Option<Vec<String>>,
    pub shell: Option<String>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    pub env: Option<HashMap<String, String>>,
    pub timeout_ms: Option<f64>,
    pub background: Option<bool>,
    /// Derive hook events (an `onEvent` handler).
    pub hooks: bool,
    pub redact: Option<bool>,
    pub resume: Option<String>,
    pub idempotent_tools: Option<Vec<String>>,
    pub kill_grace_ms: Option<f64>,
    pub high_water: Option<f64>,
    pub byte_budget: Option<f64>,
    pub stall_ms: Option<f64>,
    pub max_line_bytes: Option<f64>,
    /// `true`: the caller iterates every delivery (`stream()`); else the handlers read.
    pub iterate: bool,
}

fn sorted(env: Option<HashMap<String, String>>) -> BTreeMap<String, String> {
    env.unwrap_or_default().into_iter().collect()
}

impl NativeRunOptions {
    fn into_request(self) -> Result<RunRequest, Code> {
        let command = match self.shell {
            Some(line) => Some(shell_command(&line, NAMING).map_err(js_error)?),
            None => self.command,
        };
        let numbers = RunNumbers {
            timeout_ms: self.timeout_ms,
            kill_grace_ms: self.kill_grace_ms,
            high_water: self.high_water,
            byte_budget: self.byte_budget,
            stall_ms: self.stall_ms,
            max_line_bytes: self.max_line_bytes,
        };
        let mut request = RunRequest {
            prompt: self.prompt,
            command,
            model: self.model,
            cwd: self.cwd,
            env: sorted(self.env),
            hooks: self.hooks,
            resume: self.resume,
            idempotent_tools: self.idempotent_tools.unwrap_or_default(),
            read: if self.iterate { ReadMode::Iterate } else { ReadMode::Handlers },
            ..RunRequest::default()
        };
        // Absent: the core's defaults.
        if let Some(background) = self.background {
            request.background = background;
        }
        if let Some(redact) = self.redact {
            request.redact = redact;
        }
        request.with_numbers(numbers, NAMING).map_err(js_error)
    }
}

/// One agent configuration, its subscriptions, one run at a time (the bridge's `Client`).
#[napi]
pub struct NativeClient {
    client: Client,
}

#[napi]
impl NativeClient {
    /// Validated by the core: an unknown agent or a bad field throws `INVALID_ARGUMENT` naming it.
    #[napi(constructor, catch_unwind)]
    pub fn new(config: NativeAgentConfig) -> Result<Self, Code> {
        guard(|| {
            let spec = AgentSpec {
                agent: config.agent,
                agent_id: config.agent_id,
                bin: config.bin,
                model: config.model,
                extra_args: config.extra_args.unwrap_or_default(),
                cwd: config.cwd,
                env: sorted(config.env),
            };
            Ok(NativeClient { client: Client::new(spec, NAMING).map_err(js_error)? })
        })
    }

    /// The canonical agent name.
    #[napi(getter, catch_unwind)]
    pub fn agent(&self) -> Result<String, Code> {
        guard(|| Ok(self.client.agent().name().to_string()))
    }

    /// Subscribe to channel `name`; returns the subscription id (the wrapper keeps the handler
    /// under it). `INVALID_ARGUMENT` listing the four channels for any other name.
    #[napi(catch_unwind)]
    pub fn on(&self, name: String) -> Result<i64, Code> {
        guard(|| self.client.on(&name).map(id).map_err(js_error))
    }

    /// Remove every subscription of channel `name`; returns their ids (an unknown name is an
    /// error, as for `on`).
    #[napi(catch_unwind)]
    pub fn off(&self, name: String) -> Result<Vec<i64>, Code> {
        guard(|| self.client.off(&name).map(|ids| ids.into_iter().map(id).collect()).map_err(js_error))
    }

    /// Remove one subscription; false when it was not there.
    #[napi(catch_unwind)]
    pub fn off_id(&self, subscription: i64) -> Result<bool, Code> {
        guard(|| Ok(u64::try_from(subscription).is_ok_and(|s| self.client.off_id(s))))
    }

    /// The subscription ids of channel `name`, in the order their handlers are called.
    #[napi(catch_unwind)]
    pub fn subscribers(&self, name: String) -> Result<Vec<i64>, Code> {
        guard(|| {
            let channel = name.parse().map_err(|e: agentstream_core::UnknownChannel| js_error(e.into()))?;
            Ok(self.client.subscribers(channel).into_iter().map(id).collect())
        })
    }

    /// Start a run or a command, validated by the core first (the error names the bad field in
    /// camelCase); returns once the process is spawned. Throws `HARNESS_NOT_FOUND`,
    /// `ALREADY_RUNNING`, `SPAWN_FAILED`, `INVALID_ARGUMENT`.
    #[napi(catch_unwind)]
    pub fn start(&self, options: NativeRunOptions) -> Result<NativeRun, Code> {
        guard(|| {
            let request = options.into_request()?;
            Ok(NativeRun::new(self.client.start(request).map_err(js_error)?))
        })
    }

    /// Pause the active run (SIGSTOP; lifecycle `sandbox_pause`). `NOT_RUNNING` without one.
    #[napi(catch_unwind)]
    pub fn pause(&self) -> Result<(), Code> {
        guard(|| self.client.pause().map_err(js_error))
    }

    /// Resume a paused run (SIGCONT; lifecycle `sandbox_resume`). `NOT_RUNNING` without one.
    #[napi(catch_unwind)]
    pub fn resume(&self) -> Result<(), Code> {
        guard(|| self.client.resume().map_err(js_error))
    }

    /// Interrupt the active run (SIGTERM, SIGKILL after the grace period); whether anything was.
    #[napi(catch_unwind)]
    pub fn interrupt(&self, reason: String) -> Result<bool, Code> {
        guard(|| Ok(self.client.interrupt(&reason)))
    }

    /// Kill the active run at once (lifecycle `sandbox_killed`); whether anything was.
    #[napi(catch_unwind)]
    pub fn kill(&self) -> Result<bool, Code> {
        guard(|| Ok(self.client.kill()))
    }

    /// The bridge's `ClientStatus` as camelCase JSON.
    #[napi(catch_unwind)]
    pub fn status_json(&self) -> Result<String, Code> {
        guard(|| to_camel_json(&self.client.status()))
    }

    /// The harness session the next run continues (`null`: a new conversation).
    #[napi(getter, catch_unwind)]
    pub fn session_id(&self) -> Result<Option<String>, Code> {
        guard(|| Ok(self.client.session_id()))
    }

    /// Choose the harness session the next run continues (`null`: start a new conversation).
    #[napi(catch_unwind)]
    pub fn set_session_id(&self, session_id: Option<String>) -> Result<(), Code> {
        guard(|| self.client.set_session_id(session_id).map_err(js_error))
    }

    /// The id of the active run, if any.
    #[napi(getter, catch_unwind)]
    pub fn active_run_id(&self) -> Result<Option<String>, Code> {
        guard(|| Ok(self.client.status().active_run_id))
    }
}

/// A subscription id as a JavaScript number (ids count up from 1, far below 2^53).
fn id(subscription: u64) -> i64 {
    i64::try_from(subscription).unwrap_or(i64::MAX)
}
