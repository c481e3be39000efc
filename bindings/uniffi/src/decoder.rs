//! [`Decoder`] and the one-shot functions: decoding recorded harness output without a process.
//! Events cross as JSON text (an array per call): uniffi cannot carry free JSON, and one string
//! per call is the cheapest crossing; the Kotlin layer reads them into its generated types.

use std::sync::{Mutex, MutexGuard};

use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::{Agent, DecoderOptions, ErrorKind, OutputEvent, RedactionPolicy};

use crate::error::{Result, error};

pub(crate) fn agent(name: &str) -> Result<Agent> {
    name.parse::<Agent>().map_err(|e| agentstream_core::Error::from(e).into())
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| error(ErrorKind::Internal, format!("did not serialize: {e}")))
}

fn events_json(events: &[OutputEvent]) -> Result<String> {
    to_json(events)
}

/// The stateful decoder of one harness's output (the core's `Decoder`): bytes in any chunking
/// in, `OutputEvent`s out. Thread-safe (calls are serialized).
#[derive(uniffi::Object)]
pub struct Decoder {
    inner: Mutex<agentstream_core::Decoder>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").field("agent", &self.lock().agent()).finish_non_exhaustive()
    }
}

impl Decoder {
    fn lock(&self) -> MutexGuard<'_, agentstream_core::Decoder> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[uniffi::export]
impl Decoder {
    /// A decoder for `agent` (`claude`, `codex`, `gemini`, `qwen`, `kimi`, `opencode`,
    /// `droid`; an unknown name is an `InvalidArgument` error listing them). Lines longer than
    /// `max_line_bytes` (default 16 MiB) are skipped and reported. Secret shapes in tool-call
    /// inputs are masked unless `redact` is false (default true).
    #[uniffi::constructor]
    pub fn new(agent: String, max_line_bytes: Option<i64>, redact: Option<bool>) -> Result<std::sync::Arc<Self>> {
        let agent = self::agent(&agent)?;
        let mut options = DecoderOptions::default().with_redaction(RedactionPolicy::from_switch(redact));
        if let Some(max) = max_line_bytes {
            options.max_line_bytes = match usize::try_from(max) {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(error(
                        ErrorKind::InvalidArgument,
                        format!("maxLineBytes must be greater than 0, got {max}"),
                    ));
                }
            };
        }
        Ok(std::sync::Arc::new(Decoder { inner: Mutex::new(agentstream_core::Decoder::with_options(agent, options)) }))
    }

    /// Feed bytes; returns the events of every line they complete, as a JSON array.
    pub fn feed(&self, bytes: Vec<u8>) -> Result<String> {
        events_json(&self.lock().feed(&bytes))
    }

    /// Feed text (as UTF-8); returns a JSON array like `feed`.
    pub fn feed_text(&self, text: String) -> Result<String> {
        events_json(&self.lock().feed(text.as_bytes()))
    }

    /// End of input: decodes a last line without a newline and flushes held-back events (a
    /// JSON array). Later calls return `[]`.
    pub fn finish(&self) -> Result<String> {
        events_json(&self.lock().finish())
    }

    /// Decode statistics so far (`DecodeStats` JSON).
    pub fn stats_json(&self) -> Result<String> {
        to_json(self.lock().stats())
    }

    /// Diagnostics since the last call (oversize lines, invalid UTF-8): a JSON array of
    /// `Diagnostic`.
    pub fn take_diagnostics_json(&self) -> Result<String> {
        to_json(&self.lock().take_diagnostics())
    }

    /// The harness session id, once seen.
    pub fn session_id(&self) -> Option<String> {
        self.lock().session_id().map(str::to_string)
    }

    /// The agent this decoder reads (its canonical name).
    pub fn agent(&self) -> String {
        self.lock().agent().name().to_string()
    }

    /// True when bytes of an unfinished line are held.
    pub fn has_partial_line(&self) -> bool {
        self.lock().has_partial_line()
    }
}

/// Decode a whole recorded output at once: a JSON array of `OutputEvent`. Secret shapes in
/// tool-call inputs are masked unless `redact` is false (default true).
#[uniffi::export]
pub fn parse_json(agent: String, bytes: Vec<u8>, redact: Option<bool>) -> Result<String> {
    let options = DecoderOptions::default().with_redaction(RedactionPolicy::from_switch(redact));
    events_json(&agentstream_core::parse_with_options(self::agent(&agent)?, &bytes, options))
}

/// Replay a recorded output through the whole pipeline without a process (decoder, run stream,
/// terminal and hook derivation), as a live run would deliver it. Returns JSON
/// `{"items": [Envelope…], "hooks": [HookEvent…], "outcome": RunOutcome, "stats": DecodeStats}`
/// (envelopes in their wire form, hooks canonical). Deterministic: run id `replay`, timestamps
/// at the epoch, unless given. Secret shapes in tool-call inputs are masked unless `redact` is
/// false (default true).
#[uniffi::export]
pub fn replay_json(
    agent: String,
    bytes: Vec<u8>,
    run_id: Option<String>,
    agent_id: Option<String>,
    timestamp: Option<String>,
    redact: Option<bool>,
) -> Result<String> {
    let agent = self::agent(&agent)?;
    let mut options = ReplayOptions { redaction: RedactionPolicy::from_switch(redact), ..ReplayOptions::default() };
    if let Some(run_id) = run_id {
        options.run_id = run_id;
    }
    options.agent_id = agent_id;
    if let Some(ts) = timestamp {
        options = options.with_timestamp(&ts)?;
    }
    to_json(&replay(agent, &bytes, &options))
}

/// Every agent name, in documentation order.
#[uniffi::export]
pub fn agent_names() -> Vec<String> {
    Agent::ALL.iter().map(|a| a.name().to_string()).collect()
}

/// The four channel names, in documentation order.
#[uniffi::export]
pub fn channel_names() -> Vec<String> {
    agentstream_core::Channel::ALL.iter().map(|c| c.name().to_string()).collect()
}

/// The version of the core this library was built from.
#[uniffi::export]
pub fn core_version() -> String {
    agentstream_core::VERSION.to_string()
}
