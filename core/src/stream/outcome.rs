//! How a run ended: its outcome, the one terminal item it yields, and the record it leaves.
//!
//! The terminal is DERIVED from the run's final state, never emitted by the producer: the
//! driver reports how the process ended ([`RunEnd`]), [`derive_outcome`] turns that into a
//! [`RunOutcome`], and [`RunStream::finish`](super::RunStream::finish) numbers exactly one
//! terminal lifecycle item for it. Partial output is never presented as a completed answer:
//! a non-zero exit, a signal, a fatal harness error, stdout ending mid-line or with a tool call
//! still open, or a harness that stops without printing its own end-of-run record all make the
//! run Failed.

use serde::{Deserialize, Serialize};

use super::cancel::CancelReason;
use super::tool_calls::OpenToolCall;
use crate::hooks::TerminalFacts;
use crate::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
use crate::usage::UsageTotals;

/// What kind of operation the run is: it decides the terminal reasons' family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// A harness CLI run or a replay: `run_start` … `run_complete` / `run_failed` / `run_interrupted`.
    #[default]
    Run,
    /// A command run (`execute_command`): `command_start` … `command_complete` / `command_failed` /
    /// `command_interrupted`.
    Command,
    /// A harness run started in the background: `run_background_complete` / `run_background_failed`
    /// (a cancelled one still ends `run_interrupted`).
    BackgroundRun,
    /// A command started in the background: `command_background_complete` / `command_background_failed`.
    BackgroundCommand,
}

impl RunKind {
    /// The lifecycle reason that starts this kind of run.
    pub fn start_reason(self) -> LifecycleReason {
        match self {
            RunKind::Run | RunKind::BackgroundRun => LifecycleReason::RunStart,
            RunKind::Command | RunKind::BackgroundCommand => LifecycleReason::CommandStart,
        }
    }
}

/// The final state of a run. Serialized as `{"state": "completed"}`,
/// `{"state": "failed", "error": …, "detail": …}` or `{"state": "cancelled", "reason": {…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunOutcome {
    /// Ended well: the harness exited cleanly with every line and tool call complete.
    Completed,
    /// Ended badly.
    Failed {
        /// A short machine-readable cause (`exit_status`, `killed`, `harness_error`,
        /// `unrecognized_output`, `truncated_output`, `no_final_result`, `no_output`, or the
        /// caller's own).
        error: String,
        /// A sentence for people.
        detail: String,
    },
    /// Stopped by a cancellation (the first reason given).
    Cancelled {
        /// Why.
        reason: CancelReason,
    },
}

impl RunOutcome {
    /// A failure with a cause and a detail.
    pub fn failed(error: impl Into<String>, detail: impl Into<String>) -> Self {
        RunOutcome::Failed { error: error.into(), detail: detail.into() }
    }

    /// The cause of a run whose harness stopped without printing its end-of-run record.
    pub const NO_FINAL_RESULT: &'static str = "no_final_result";

    /// The cause of a run whose output was not the harness's: nothing decoded from it.
    pub const UNRECOGNIZED_OUTPUT: &'static str = "unrecognized_output";

    /// The cause of a run whose harness printed nothing on stdout.
    pub const NO_OUTPUT: &'static str = "no_output";

    /// True when the run result keeps the answer text: a completed run, and one whose harness
    /// stopped without its end-of-run record (the partial answer stays, the run still failed).
    pub fn keeps_answer(&self) -> bool {
        match self {
            RunOutcome::Completed => true,
            RunOutcome::Failed { error, .. } => error == Self::NO_FINAL_RESULT,
            RunOutcome::Cancelled { .. } => false,
        }
    }

    /// The terminal lifecycle reason for this outcome in a run of `kind`.
    pub fn terminal_reason(&self, kind: RunKind) -> LifecycleReason {
        use LifecycleReason::*;
        match (self, kind) {
            (RunOutcome::Completed, RunKind::Run) => RunComplete,
            (RunOutcome::Failed { .. }, RunKind::Run) => RunFailed,
            (RunOutcome::Cancelled { .. }, RunKind::Run) => RunInterrupted,
            (RunOutcome::Completed, RunKind::Command) => CommandComplete,
            (RunOutcome::Failed { .. }, RunKind::Command) => CommandFailed,
            (RunOutcome::Cancelled { .. }, RunKind::Command) => CommandInterrupted,
            (RunOutcome::Completed, RunKind::BackgroundRun) => RunBackgroundComplete,
            (RunOutcome::Failed { .. }, RunKind::BackgroundRun) => RunBackgroundFailed,
            (RunOutcome::Cancelled { .. }, RunKind::BackgroundRun) => RunInterrupted,
            (RunOutcome::Completed, RunKind::BackgroundCommand) => CommandBackgroundComplete,
            (RunOutcome::Failed { .. }, RunKind::BackgroundCommand) => CommandBackgroundFailed,
            (RunOutcome::Cancelled { .. }, RunKind::BackgroundCommand) => CommandInterrupted,
        }
    }

    /// The cancellation reason, for a cancelled run.
    pub fn cancel_reason(&self) -> Option<&CancelReason> {
        match self {
            RunOutcome::Cancelled { reason } => Some(reason),
            _ => None,
        }
    }
}

/// How the run's input ended, as the driver saw it. `Default` is a clean end with no process
/// (a replay): every field "nothing went wrong".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunEnd {
    /// The process exit status, when it exited (`None`: killed by a signal, or no process).
    pub exit_code: Option<i32>,
    /// The signal that killed the process, if one did.
    pub signal: Option<i32>,
    /// The process ran, but how it ended cannot be known: what watched it for the run (its
    /// supervisor) was itself killed from outside, e.g. by the OOM killer.
    pub status_unknown: bool,
    /// A cancellation recorded before the end (the token's reason).
    pub cancel: Option<CancelReason>,
    /// The input ended without a final newline and the partial line did not parse as a
    /// complete event (the framer's "ended mid-line").
    pub truncated_mid_line: bool,
    /// Tool calls still open at the end ([`RunStream::open_tool_calls`](super::RunStream::open_tool_calls)).
    pub open_tool_calls: usize,
    /// A fatal error the harness reported (an `error` update with `fatal: true`).
    pub fatal_error: Option<String>,
    /// The harness prints an end-of-run record and the input ended without it: what that
    /// record is, for the message (e.g. "`result` line";
    /// [`Decoder::missing_final_result`](crate::Decoder::missing_final_result)).
    pub missing_final_result: Option<String>,
    /// Nothing was decoded from the harness's output and some of its lines were not the
    /// harness's JSON: why, for the message
    /// ([`Decoder::unrecognized_output`](crate::Decoder::unrecognized_output)).
    pub unrecognized_output: Option<String>,
    /// The harness printed nothing on stdout (blank lines aside).
    pub no_output: bool,
    /// The last non-blank line the process printed on stderr (shortened, masked): quoted by a
    /// failed exit's message, where the reason for the status usually is.
    pub last_stderr_line: Option<String>,
}

/// Derive the outcome from how the run ended, first match wins:
///
/// 1. a cancellation → `Cancelled` (a killed process after a cancel is a cancelled run);
/// 2. a signal, or an end whose status cannot be known (the process's supervisor was killed)
///    → `Failed { error: "killed" }`;
/// 3. a non-zero exit status → `Failed { error: "exit_status" }` (the message quotes the last
///    stderr line);
/// 4. a fatal harness error → `Failed { error: "harness_error" }`;
/// 5. nothing decoded from output that was not the harness's JSON (a wrong executable, another
///    harness's output) → `Failed { error: "unrecognized_output" }`;
/// 6. input ended mid-line → `Failed { error: "truncated_output" }`;
/// 7. tool calls still open → `Failed { error: "truncated_output" }`;
/// 8. no end-of-run record from the harness → `Failed { error: "no_final_result" }` (exit 0 is
///    not success by itself: the harness stopped before it finished);
/// 9. nothing at all on stdout (for a harness that prints no end-of-run record: kimi) →
///    `Failed { error: "no_output" }`: a run with no output has no answer;
/// 10. otherwise `Completed`.
pub fn derive_outcome(end: &RunEnd) -> RunOutcome {
    if let Some(reason) = &end.cancel {
        return RunOutcome::Cancelled { reason: reason.clone() };
    }
    if let Some(sig) = end.signal {
        return RunOutcome::failed("killed", format!("the process was killed by signal {sig}"));
    }
    if end.status_unknown {
        return RunOutcome::failed(
            "killed",
            "the process's exit status cannot be known: the supervisor watching it was killed from outside (the OOM \
             killer, a kill of its process group?); the run did not complete",
        );
    }
    if let Some(code) = end.exit_code.filter(|&c| c != 0) {
        let message = match &end.last_stderr_line {
            Some(line) => format!("the process exited with status {code}; its last stderr line: {line}"),
            None => format!("the process exited with status {code}"),
        };
        return RunOutcome::failed("exit_status", message);
    }
    if let Some(message) = &end.fatal_error {
        return RunOutcome::failed("harness_error", message.clone());
    }
    if let Some(why) = &end.unrecognized_output {
        return RunOutcome::failed(
            RunOutcome::UNRECOGNIZED_OUTPUT,
            format!("the output is not the harness's: {why}; is the executable the right program?"),
        );
    }
    if end.truncated_mid_line {
        return RunOutcome::failed("truncated_output", "the harness output ended in the middle of a line");
    }
    if end.open_tool_calls > 0 {
        return RunOutcome::failed(
            "truncated_output",
            format!("the harness output ended with {} tool call(s) still open", end.open_tool_calls),
        );
    }
    if let Some(record) = &end.missing_final_result {
        return RunOutcome::failed(
            RunOutcome::NO_FINAL_RESULT,
            format!(
                "the harness stopped without its final result (no {record}): the run did not complete; its answer so \
                 far is kept in the run result"
            ),
        );
    }
    if end.no_output {
        return RunOutcome::failed(
            RunOutcome::NO_OUTPUT,
            "the harness printed nothing on stdout: the run has no answer",
        );
    }
    RunOutcome::Completed
}

/// What the terminal builder is told; it returns the terminal [`LifecycleEvent`] (sandbox and
/// agent states, timestamp). The stream has already decided WHICH terminal (`reason`) and
/// overrides the returned event's `reason` with it.
#[derive(Debug, Clone, Copy)]
pub struct TerminalContext<'a> {
    /// The run.
    pub run_id: &'a str,
    /// Run or command.
    pub kind: RunKind,
    /// The terminal reason the stream chose.
    pub reason: LifecycleReason,
    /// The outcome that stands.
    pub outcome: &'a RunOutcome,
    /// The terminal item's own sequence.
    pub sequence: u64,
    /// The sequence of the last item before it (`None`: the terminal is the only item).
    pub last_sequence: Option<u64>,
    /// Usage so far.
    pub usage: &'a UsageTotals,
    /// Tool calls still open.
    pub open_tool_calls: &'a [OpenToolCall],
}

impl TerminalContext<'_> {
    /// A sensible terminal event for a local run: no sandbox id, sandbox `ready`, agent `idle`
    /// (completed), `error` (failed) or `interrupted` (cancelled).
    pub fn default_event(&self, timestamp: impl Into<String>) -> LifecycleEvent {
        let agent = match self.outcome {
            RunOutcome::Completed => AgentState::Idle,
            RunOutcome::Failed { .. } => AgentState::Error,
            RunOutcome::Cancelled { .. } => AgentState::Interrupted,
        };
        LifecycleEvent::local(self.reason, SandboxState::Ready, agent, timestamp)
    }
}

/// What a finished run leaves behind, beside its terminal item: the facts the terminal
/// lifecycle event does not carry (reconcilable: where the stream ended, what it cost, why).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The outcome that stands.
    pub outcome: RunOutcome,
    /// The terminal item's sequence (= `last_sequence + 1`, or 0).
    pub terminal_sequence: u64,
    /// The sequence of the last item before the terminal (`None` when there was none).
    pub last_sequence: Option<u64>,
    /// Usage accrued by the end.
    pub usage: UsageTotals,
    /// Tool calls open at the end (indeterminate, or failed-and-retryable, in the hook view).
    pub open_tool_calls: Vec<OpenToolCall>,
}

impl RunRecord {
    /// The facts the hook layer needs for the terminal hook.
    pub fn terminal_facts(&self) -> TerminalFacts {
        TerminalFacts {
            cancel_reason: self.outcome.cancel_reason().map(ToString::to_string),
            stopped_by_timeout: matches!(self.outcome.cancel_reason(), Some(CancelReason::Timeout)),
            error: match &self.outcome {
                RunOutcome::Failed { error, detail } => Some(format!("{error}: {detail}")),
                _ => None,
            },
            last_sequence: self.last_sequence.map_or(-1, |s| s as i64),
            usage: self.usage.to_json_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_output_is_never_completed() {
        assert_eq!(derive_outcome(&RunEnd::default()), RunOutcome::Completed);
        assert_eq!(derive_outcome(&RunEnd { exit_code: Some(0), ..Default::default() }), RunOutcome::Completed);
        let failed = |end: RunEnd| match derive_outcome(&end) {
            RunOutcome::Failed { error, .. } => error,
            other => panic!("{other:?}"),
        };
        assert_eq!(failed(RunEnd { exit_code: Some(2), ..Default::default() }), "exit_status");
        let quoted = RunEnd {
            exit_code: Some(127),
            last_stderr_line: Some("env: 'node': not found".into()),
            ..Default::default()
        };
        assert!(
            matches!(derive_outcome(&quoted), RunOutcome::Failed { detail, .. } if detail.ends_with("status 127; its last stderr line: env: 'node': not found"))
        );
        assert_eq!(failed(RunEnd { signal: Some(9), ..Default::default() }), "killed");
        // Not a clean exit: with the status unknown, nothing says the run completed.
        assert_eq!(failed(RunEnd { status_unknown: true, ..Default::default() }), "killed");
        assert_eq!(
            failed(RunEnd { truncated_mid_line: true, exit_code: Some(0), ..Default::default() }),
            "truncated_output"
        );
        assert_eq!(failed(RunEnd { open_tool_calls: 1, ..Default::default() }), "truncated_output");
        assert_eq!(failed(RunEnd { fatal_error: Some("rate limited".into()), ..Default::default() }), "harness_error");
        // Exit 0 is not success by itself: no end-of-run record, no completed run.
        let no_result =
            RunEnd { exit_code: Some(0), missing_final_result: Some("`result` line".into()), ..Default::default() };
        assert_eq!(failed(no_result.clone()), "no_final_result");
        let RunOutcome::Failed { detail, .. } = derive_outcome(&no_result) else { unreachable!() };
        assert!(detail.contains("stopped without its final result (no `result` line)"), "{detail}");
        assert!(derive_outcome(&no_result).keeps_answer());
        assert!(RunOutcome::Completed.keeps_answer());
        assert!(!RunOutcome::failed("exit_status", "x").keeps_answer());
        // A more specific cause wins.
        let both = RunEnd { exit_code: Some(1), missing_final_result: Some("x".into()), ..Default::default() };
        assert_eq!(failed(both), "exit_status");
        // Output that is not the harness's, or none at all, is no completed run.
        let foreign = RunEnd {
            exit_code: Some(0),
            unrecognized_output: Some("no events decoded: 2 lines were not kimi JSON (2 unknown type)".into()),
            ..Default::default()
        };
        assert_eq!(failed(foreign.clone()), "unrecognized_output");
        let RunOutcome::Failed { detail, .. } = derive_outcome(&foreign) else { unreachable!() };
        assert!(detail.contains("2 lines were not kimi JSON"), "{detail}");
        let foreign_unfinished = RunEnd { missing_final_result: Some("`result` line".into()), ..foreign };
        assert_eq!(failed(foreign_unfinished), "unrecognized_output", "the more specific cause");
        assert_eq!(failed(RunEnd { exit_code: Some(0), no_output: true, ..Default::default() }), "no_output");
        let empty_unfinished =
            RunEnd { no_output: true, missing_final_result: Some("`result` line".into()), ..Default::default() };
        assert_eq!(failed(empty_unfinished), "no_final_result");
        let cancelled = RunEnd { cancel: Some(CancelReason::Timeout), signal: Some(15), ..Default::default() };
        assert_eq!(derive_outcome(&cancelled), RunOutcome::Cancelled { reason: CancelReason::Timeout });
    }

    #[test]
    fn terminal_reasons_per_kind() {
        let c = RunOutcome::Cancelled { reason: CancelReason::Stalled };
        assert_eq!(c.terminal_reason(RunKind::Run), LifecycleReason::RunInterrupted);
        assert_eq!(c.terminal_reason(RunKind::Command), LifecycleReason::CommandInterrupted);
        assert_eq!(RunOutcome::Completed.terminal_reason(RunKind::Command), LifecycleReason::CommandComplete);
        assert_eq!(RunOutcome::failed("x", "y").terminal_reason(RunKind::Run), LifecycleReason::RunFailed);
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"state":"cancelled","reason":{"kind":"stalled"}}"#);
    }

    #[test]
    fn record_to_terminal_facts() {
        let r = RunRecord {
            outcome: RunOutcome::Cancelled { reason: CancelReason::Timeout },
            terminal_sequence: 0,
            last_sequence: None,
            usage: UsageTotals::default(),
            open_tool_calls: vec![],
        };
        let f = r.terminal_facts();
        assert!(f.stopped_by_timeout);
        assert_eq!(f.last_sequence, -1);
        assert_eq!(f.usage, None);
    }
}
