//! The tokio process runner (feature `runner`): spawns a harness CLI (or any command) as a real
//! child process in its own process group and drives the sans-IO core with its output.
//!
//! * [`Session`] is one agent configuration (the "sandbox" is the local working environment):
//!   one operation at a time (`start_run`, `start_command`), `pause`/`resume` (SIGSTOP/SIGCONT
//!   to the group), `interrupt` (SIGTERM, then SIGKILL after a grace period) and `kill`.
//! * [`RunHandle`] is one operation: pull its sequenced stream (`next`, `next_blocking`,
//!   `next_batch_blocking`), with hook events interleaved when asked for, cancel it, read its
//!   backpressure, and wait for its [`RunResult`].
//!
//! Every stdout line goes out on `stdout` as printed, followed by the content events decoded
//! from it (immediately, unless the reader is behind: then a batch's lines come first, so that
//! lines and deltas merge); memory is bounded by bytes: with `byte_budget` bytes unread the
//! harness's pipes are not read until the reader catches up; stderr text goes out as received; lifecycle events mark the start
//! and exactly one terminal, last, after every byte of stdout was decoded (a final line without
//! a newline included). A reader that reads only some channels says so
//! ([`RunOptions::channels`], [`RunHandle::set_channels`]): the others are numbered and not
//! buffered, and raw lines nobody reads are never copied. Each operation is driven by its own
//! thread (a single-threaded tokio runtime), so callers (bindings) need no runtime of their
//! own; [`runtime`] is a small shared one for their async helpers.

mod argv;
mod batch;
mod dispatch;
mod driver;
mod handle;
mod harness;
#[cfg(target_os = "linux")]
mod host_lifeline;
pub mod open_files;
pub mod process;
#[cfg(target_os = "linux")]
mod self_exec;
mod session;
#[cfg(target_os = "linux")]
mod supervisor;
#[cfg(test)]
mod tests;

pub use argv::{AgentConfig, default_program, harness_args, resume_args};
pub use batch::{deliveries_to_json, write_deliveries_json};
pub use dispatch::{Dispatcher, HandlerFailure, HandlerResult};
pub use handle::{BatchLimits, Delivery, Next, RunHandle};
pub use session::{CommandOptions, Resume, RunOptions, Session};

#[cfg(target_os = "linux")]
pub use self_exec::supervise_if_asked;

/// Make this program its own runs' supervisor (Linux; elsewhere this returns at once).
#[cfg(not(target_os = "linux"))]
pub fn supervise_if_asked() {}

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::decode::DecodeStats;
use crate::stream::Pressure;
use crate::usage::UsageTotals;

/// A shared tokio runtime for bindings' and the CLI's async helpers (two worker threads,
/// created on first use). Operations do not run on it: each has its own driving thread.
///
/// One per PROCESS: a child created by `fork()` (Python's `multiprocessing` does that by
/// default on Linux) inherits the parent's runtime object but none of its threads, so a run
/// started there would never be driven. The first call in a new process builds that process's
/// own runtime (the inherited one is left alone: dropping it could touch the parent's threads).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut current = RT.lock().unwrap_or_else(|p| p.into_inner());
    match *current {
        Some((owner, rt)) if owner == pid => rt,
        _ => {
            let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("agentstream-runner")
                    .enable_all()
                    .build()
                    .expect("agentstream: cannot start the tokio runtime"),
            ));
            *current = Some((pid, rt));
            rt
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RunState"))]
#[serde(rename_all = "snake_case")]
pub enum FinalState {
    /// The harness finished its work and exited 0.
    Completed,
    /// Non-zero exit, death by signal, a harness-reported fatal error, or output cut mid-line
    /// or mid tool call.
    Failed,
    /// Cancelled (caller, reader left, stall, timeout, interrupt, kill).
    Cancelled,
}

/// The authoritative record of a finished operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunResult {
    /// The run's id.
    pub run_id: String,
    /// How it ended.
    pub state: FinalState,
    /// The process exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the process, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The harness's session id, once seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Token usage totals (see [`UsageTotals`]).
    pub usage: UsageTotals,
    /// The final answer: the message text after the last tool result. For a completed run, and
    /// for one that failed because the harness stopped without its end-of-run record (error
    /// `no_final_result`: the answer so far is kept, the run is still `failed`); otherwise absent,
    /// partial text is never presented as an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<String>,
    /// The machine-readable kind of the cancellation ([`CancelReason::code`](crate::stream::CancelReason::code):
    /// `caller`, `reader_left`, `stalled` or `timeout`), so callers need not parse `cancel_reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<crate::schema::CancelKind>"))]
    pub cancel_kind: Option<String>,
    /// Backpressure statistics at the end.
    pub pressure: Pressure,
    /// Decode statistics of the harness's stdout.
    pub stats: DecodeStats,
    /// The sequence of the terminal item.
    pub last_sequence: u64,
    /// Problems with the input (oversize lines, invalid UTF-8), for people.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<String>,
    /// Wall-clock duration in milliseconds.
    pub duration_ms: u64,
    /// How many times the caller's handlers failed (raised, threw, returned an error or
    /// panicked) on this run's deliveries; each failing handler was reported once.
    #[serde(default)]
    pub handler_errors: u64,
}
