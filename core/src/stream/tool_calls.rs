//! Tool calls in flight, and what to call them when a run stops under them.
//!
//! A tool call is OPEN from its `tool_call` until a `tool_call_update` (or a repeated
//! `tool_call`) with status `completed` or `failed`. A call still open when the run is
//! cancelled or dies was stopped after dispatch: whether its side effect landed cannot be
//! known, so it is reported **indeterminate** — claiming it was rolled back when nobody rolled
//! it back is the worse answer. A call of a tool the caller declared idempotent is reported
//! **failed and safe to retry** instead. [`classify_interrupted`] makes that call; the hook
//! layer reports it (`tool.indeterminate` / `tool.failed` with `retryable`).

use std::collections::HashSet;

use crate::event::{OutputEvent, SessionUpdate, ToolCallStatus, ToolKind};

/// A tool call seen starting and not seen finishing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenToolCall {
    /// The harness's id for the call.
    pub tool_call_id: String,
    /// The harness-native tool name, when the decoder knew it.
    pub tool_name: Option<String>,
    /// The call's title (already redacted when the stream redacts).
    pub title: String,
    /// The tool's category.
    pub kind: ToolKind,
    /// The sequence of the `tool_call` item that opened it.
    pub sequence: u64,
}

/// What an interrupted tool call ended as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InterruptedToolCall {
    /// Stopped after dispatch; whether its effect landed cannot be known.
    Indeterminate,
    /// Stopped after dispatch, but the tool is idempotent: failed, and safe to retry.
    FailedRetryable,
}

impl OpenToolCall {
    /// What this call ends as if the run stops now: [`InterruptedToolCall::FailedRetryable`]
    /// when its `tool_name` is in `idempotent_tools`, else
    /// [`InterruptedToolCall::Indeterminate`]. Matching is on the harness-native tool name,
    /// exactly; a call whose name is unknown is indeterminate.
    pub fn fate(&self, idempotent_tools: &HashSet<String>) -> InterruptedToolCall {
        InterruptedToolCall::of(self.tool_name.as_deref(), idempotent_tools)
    }
}

impl InterruptedToolCall {
    /// The fate of an interrupted call of the tool `tool_name` (the rule of [`OpenToolCall::fate`]).
    pub fn of(tool_name: Option<&str>, idempotent_tools: &HashSet<String>) -> Self {
        match tool_name {
            Some(n) if idempotent_tools.contains(n) => InterruptedToolCall::FailedRetryable,
            _ => InterruptedToolCall::Indeterminate,
        }
    }
}

/// Classify every open call (see [`OpenToolCall::fate`]), oldest first.
pub fn classify_interrupted<'a>(
    open: &'a [OpenToolCall],
    idempotent_tools: &HashSet<String>,
) -> Vec<(&'a OpenToolCall, InterruptedToolCall)> {
    open.iter().map(|c| (c, c.fate(idempotent_tools))).collect()
}

fn is_final(status: Option<ToolCallStatus>) -> bool {
    matches!(status, Some(ToolCallStatus::Completed | ToolCallStatus::Failed))
}

/// Tracks which tool calls are open, from the content events of one run.
#[derive(Debug, Clone, Default)]
pub struct ToolCallTracker {
    open: Vec<OpenToolCall>,
    /// Ids finished before (or without) being announced: an out-of-order `tool_call` for them
    /// must not reopen them.
    finished_early: HashSet<String>,
}

impl ToolCallTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Observe one content event numbered `sequence`.
    pub fn observe(&mut self, sequence: u64, ev: &OutputEvent) {
        match &ev.update {
            SessionUpdate::ToolCall(call) => {
                let pos = self.open.iter().position(|c| c.tool_call_id == call.tool_call_id);
                if is_final(Some(call.status)) {
                    match pos {
                        Some(i) => {
                            self.open.remove(i);
                        }
                        None => {
                            self.finished_early.insert(call.tool_call_id.clone());
                        }
                    }
                } else if let Some(i) = pos {
                    let c = &mut self.open[i];
                    c.title.clone_from(&call.title);
                    c.kind = call.kind;
                    if call.tool_name.is_some() {
                        c.tool_name.clone_from(&call.tool_name);
                    }
                } else if !self.finished_early.contains(&call.tool_call_id) {
                    self.open.push(OpenToolCall {
                        tool_call_id: call.tool_call_id.clone(),
                        tool_name: call.tool_name.clone(),
                        title: call.title.clone(),
                        kind: call.kind,
                        sequence,
                    });
                }
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let pos = self.open.iter().position(|c| c.tool_call_id == u.tool_call_id);
                if is_final(u.status) {
                    match pos {
                        Some(i) => {
                            self.open.remove(i);
                        }
                        None => {
                            self.finished_early.insert(u.tool_call_id.clone());
                        }
                    }
                } else if let (Some(i), Some(title)) = (pos, &u.title) {
                    self.open[i].title.clone_from(title);
                }
            }
            _ => {}
        }
    }

    /// The open calls, oldest first.
    pub fn open(&self) -> &[OpenToolCall] {
        &self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ToolCall, ToolCallUpdate};

    fn call(id: &str, name: &str, status: ToolCallStatus) -> OutputEvent {
        OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id.into(),
            title: format!("run {name}"),
            tool_name: Some(name.into()),
            kind: ToolKind::Execute,
            status,
            raw_input: None,
            content: None,
            locations: None,
        }))
    }

    fn done(id: &str, status: Option<ToolCallStatus>) -> OutputEvent {
        let mut u = ToolCallUpdate::new(id);
        u.status = status;
        OutputEvent::new(SessionUpdate::ToolCallUpdate(u))
    }

    #[test]
    fn open_until_a_final_status() {
        let mut t = ToolCallTracker::new();
        t.observe(0, &call("a", "Bash", ToolCallStatus::Pending));
        t.observe(1, &call("b", "Read", ToolCallStatus::InProgress));
        t.observe(2, &done("a", Some(ToolCallStatus::InProgress)));
        t.observe(3, &done("a", None));
        assert_eq!(t.open().iter().map(|c| c.tool_call_id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        t.observe(4, &done("a", Some(ToolCallStatus::Failed)));
        t.observe(5, &call("b", "Read", ToolCallStatus::Completed));
        assert!(t.open().is_empty());
        // A result before its call (out of order) does not leave the call open.
        t.observe(6, &done("c", Some(ToolCallStatus::Completed)));
        t.observe(7, &call("c", "Bash", ToolCallStatus::Pending));
        assert!(t.open().is_empty());
        // Re-announcing keeps one entry with the first sequence.
        t.observe(8, &call("d", "Bash", ToolCallStatus::Pending));
        t.observe(9, &call("d", "Bash", ToolCallStatus::InProgress));
        assert_eq!(t.open().len(), 1);
        assert_eq!(t.open()[0].sequence, 8);
    }

    #[test]
    fn idempotent_tools_are_failed_and_retryable() {
        let mut t = ToolCallTracker::new();
        t.observe(0, &call("a", "Bash", ToolCallStatus::InProgress));
        t.observe(1, &call("b", "Read", ToolCallStatus::InProgress));
        let idem: HashSet<String> = ["Read".to_string()].into();
        let fates: Vec<_> =
            classify_interrupted(t.open(), &idem).into_iter().map(|(c, f)| (c.tool_call_id.as_str(), f)).collect();
        assert_eq!(fates, [("a", InterruptedToolCall::Indeterminate), ("b", InterruptedToolCall::FailedRetryable)]);
    }
}
