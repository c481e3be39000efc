//! # agentstream-core
//!
//! The sans-IO core of agentstream. Coding-agent CLIs (Claude Code, Codex, Gemini CLI, Qwen Code,
//! Kimi CLI, OpenCode, Droid) each print their own JSONL dialect on stdout; this crate turns
//! those bytes into ONE typed stream of ACP-style events:
//!
//! * [`event`] — the seed's `OutputEvent` and its eight `SessionUpdate` variants (the `content`
//!   channel), defined once here; every binding derives from these types.
//! * [`lifecycle`] — the seed's `LifecycleEvent` (the `lifecycle` channel).
//! * [`framing`] — bytes at any chunking in, complete lines out, bounded memory.
//! * [`decode`] — one stateful [`Decoder`] per run and per harness: `feed(bytes)` / `finish()`.
//! * [`tools`] — the cross-harness tool-name → kind table.
//! * [`stream`] — the run stream: one gapless sequence across the four channels, exactly one
//!   terminal item, bounded coalescing buffer, stall detection, one cancellation path, the
//!   envelope wire form and its version-tolerant decoder.
//! * [`usage`] — per-run token/cost totals from `usage` updates.
//! * [`redact`](mod@redact) — masking secret shapes in tool-call inputs.
//!
//! Nothing in the default features does IO: bytes in, events out. The tokio process runner is
//! behind the `runner` feature.
#![warn(missing_docs)]

pub mod answer;
#[cfg(feature = "runner")]
pub mod bridge;
pub mod casing;
pub mod channel;
pub mod char_boundary;
pub(crate) mod counters;
pub mod decode;
pub mod error;
pub mod event;
mod event_json;
pub mod framing;
pub mod hooks;
mod json;
pub mod lifecycle;
pub mod raw_json;
pub mod redact;
pub mod replay;
#[cfg(feature = "runner")]
pub mod runner;
pub mod sanitize;
#[cfg(feature = "schema")]
pub mod schema;
#[cfg(all(test, feature = "runner"))]
mod scratch;
pub mod stream;
mod tail;
#[cfg(test)]
mod test_cases;
pub mod time;
pub mod tools;
pub mod usage;

pub use channel::{Channel, UnknownChannel};
pub use decode::{
    Agent, DecodeStats, Decoder, DecoderOptions, Diagnostic, LineOutcome, UnknownAgent, parse, parse_with_options,
};
pub use error::{Error, ErrorKind};
pub use event::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
    SharedStr, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind,
    UsageScope, did_work,
};
pub use hooks::{HookDeriver, HookEvent, HookInput, HookStatus, TerminalFacts};
pub use lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
pub use raw_json::RawJson;
pub use redact::{RedactionPolicy, redact, redact_tool_input, redact_value};
pub use stream::{
    Backpressure, CancelReason, CancellationToken, Clock, Envelope, EnvelopeReader, ManualClock, Pressure, RunEnd,
    RunKind, RunOutcome, RunRecord, RunStream, SequenceCheck, SharedBudget, StreamError, StreamItem, SystemClock,
    decode_envelope, derive_outcome, new_run_id,
};
pub use usage::{UsageAccumulator, UsageTotals};

/// The crate version (also the version of every binding built from it).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
