//! Tool calls in flight, and what to call them when a run stops under them.
//!
//! A tool call is OPEN from its `tool_call` until a `tool_call_update` (or a repeated
//! `tool_call`) with status `completed` or `failed`. A call still open when the run is
//! cancelled or dies was stopped after dispatch: whether its side effect landed cannot be
//! known, so it is reported **indeterminate** — claiming it was rolled back when nobody rolled
//! it back is the worse answer. A call of a tool the caller declared idempotent is reported
//! **failed and safe to retry** instead. [`classify_interrupted`] makes that call; the hook
//! layer reports it (`tool.indeterminate` / `tool.failed` with `retryable`).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

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

/// Tracks which tool calls are open, from the content events of one run. Each event costs
/// the same however many calls are open (a harness that leaves thousands open made every
/// event search them all, under the stream's lock), and what is kept is bounded per call.
#[derive(Debug, Clone, Default)]
pub struct ToolCallTracker {
    /// The open calls by the sequence that opened them (then by arrival: two calls observed
    /// under one sequence stay two): oldest first.
    open: BTreeMap<(u64, u64), OpenToolCall>,
    /// Where each open call is in `open`.
    by_id: HashMap<String, (u64, u64)>,
    /// Calls opened so far (the second half of their key).
    opened: u64,
    /// Ids finished before (or without) being announced: an out-of-order `tool_call` for them
    /// must not reopen them.
    finished_early: FinishedEarly,
}

/// The ids of tool calls whose result came before (or without) their announcement: a
/// `tool_call` arriving for one later must not open it. The stream's open calls and the hook
/// layer's both follow this rule. Bounded: the newest [`FinishedEarly::MAX`] are kept.
#[derive(Debug, Clone, Default)]
pub struct FinishedEarly {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl FinishedEarly {
    /// How many ids are remembered (oldest forgotten first: a call announced that late is an
    /// odd harness's, and shows as open at worst).
    pub const MAX: usize = 4096;

    /// Remember that call `id` finished without having been announced.
    pub fn insert(&mut self, id: &str) {
        if self.ids.insert(id.to_string()) {
            self.order.push_back(id.to_string());
            if self.order.len() > Self::MAX {
                if let Some(oldest) = self.order.pop_front() {
                    self.ids.remove(&oldest);
                }
            }
        }
    }

    /// Whether call `id` finished before it was announced.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

impl ToolCallTracker {
    /// The most of a title kept for an open call, in bytes (cut at a character, with `…`).
    pub const MAX_TITLE_BYTES: usize = 1024;

    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Observe one content event numbered `sequence`.
    pub fn observe(&mut self, sequence: u64, ev: &OutputEvent) {
        match &ev.update {
            SessionUpdate::ToolCall(call) => {
                let at = self.by_id.get(&call.tool_call_id).copied();
                if is_final(Some(call.status)) {
                    self.finish(&call.tool_call_id, at);
                } else if let Some(c) = at.and_then(|at| self.open.get_mut(&at)) {
                    c.title = capped(&call.title);
                    c.kind = call.kind;
                    if call.tool_name.is_some() {
                        c.tool_name.clone_from(&call.tool_name);
                    }
                } else if !self.finished_early.contains(&call.tool_call_id) {
                    let key = (sequence, self.opened);
                    self.opened += 1;
                    self.by_id.insert(call.tool_call_id.clone(), key);
                    self.open.insert(
                        key,
                        OpenToolCall {
                            tool_call_id: call.tool_call_id.clone(),
                            tool_name: call.tool_name.clone(),
                            title: capped(&call.title),
                            kind: call.kind,
                            sequence,
                        },
                    );
                }
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let at = self.by_id.get(&u.tool_call_id).copied();
                if is_final(u.status) {
                    self.finish(&u.tool_call_id, at);
                } else if let (Some(c), Some(title)) = (at.and_then(|at| self.open.get_mut(&at)), &u.title) {
                    c.title = capped(title);
                }
            }
            _ => {}
        }
    }

    /// The call `id` finished: closed when open (at `at`), else remembered as finished early.
    fn finish(&mut self, id: &str, at: Option<(u64, u64)>) {
        match at {
            Some(at) => {
                self.open.remove(&at);
                self.by_id.remove(id);
            }
            None => self.finished_early.insert(id),
        }
    }

    /// The open calls, oldest first.
    pub fn open(&self) -> Vec<OpenToolCall> {
        self.open.values().cloned().collect()
    }

    /// How many calls are open.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }
}

/// `title`, cut at a character boundary to [`ToolCallTracker::MAX_TITLE_BYTES`] (with `…`).
fn capped(title: &str) -> String {
    if title.len() <= ToolCallTracker::MAX_TITLE_BYTES {
        return title.to_string();
    }
    format!("{}…", crate::char_boundary::prefix(title, ToolCallTracker::MAX_TITLE_BYTES))
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
        // Two calls observed under one sequence stay two, and close one by one.
        t.observe(10, &call("e", "Bash", ToolCallStatus::Pending));
        t.observe(10, &call("f", "Bash", ToolCallStatus::Pending));
        t.observe(11, &done("e", Some(ToolCallStatus::Completed)));
        assert_eq!(t.open().iter().map(|c| c.tool_call_id.as_str()).collect::<Vec<_>>(), ["d", "f"]);
    }

    #[test]
    fn many_open_calls_and_early_finishes_stay_bounded_and_in_order() {
        let mut t = ToolCallTracker::new();
        // Thousands open at once (a harness that never reports results): still oldest first.
        for i in 0..5000u64 {
            t.observe(i, &call(&format!("c{i}"), "Bash", ToolCallStatus::InProgress));
        }
        for i in (0..5000u64).step_by(2) {
            t.observe(10_000 + i, &done(&format!("c{i}"), Some(ToolCallStatus::Completed)));
        }
        let open = t.open();
        assert_eq!(t.open_count(), 2500);
        assert_eq!(open.first().map(|c| c.tool_call_id.as_str()), Some("c1"));
        assert!(open.windows(2).all(|w| w[0].sequence < w[1].sequence));
        // Early finishes are remembered up to the cap, the oldest forgotten first.
        let mut early = ToolCallTracker::new();
        let n = FinishedEarly::MAX as u64 + 10;
        for i in 0..n {
            early.observe(i, &done(&format!("e{i}"), Some(ToolCallStatus::Completed)));
        }
        assert_eq!(early.finished_early.ids.len(), FinishedEarly::MAX);
        early.observe(n, &call(&format!("e{}", n - 1), "Bash", ToolCallStatus::Pending));
        assert_eq!(early.open_count(), 0, "a recent early finish is not reopened");
        early.observe(n + 1, &call("e0", "Bash", ToolCallStatus::Pending));
        assert_eq!(early.open_count(), 1, "the oldest was forgotten");
        // A long title is kept cut, at a character.
        let mut long = ToolCallTracker::new();
        let mut ev = call("t", "Bash", ToolCallStatus::Pending);
        if let SessionUpdate::ToolCall(c) = &mut ev.update {
            c.title = "é".repeat(4000);
        }
        long.observe(0, &ev);
        let title = &long.open()[0].title;
        assert!(title.len() <= ToolCallTracker::MAX_TITLE_BYTES + '…'.len_utf8() && title.ends_with('…'));
    }

    #[test]
    fn idempotent_tools_are_failed_and_retryable() {
        let mut t = ToolCallTracker::new();
        t.observe(0, &call("a", "Bash", ToolCallStatus::InProgress));
        t.observe(1, &call("b", "Read", ToolCallStatus::InProgress));
        let idem: HashSet<String> = ["Read".to_string()].into();
        let open = t.open();
        let fates: Vec<_> =
            classify_interrupted(&open, &idem).into_iter().map(|(c, f)| (c.tool_call_id.as_str(), f)).collect();
        assert_eq!(fates, [("a", InterruptedToolCall::Indeterminate), ("b", InterruptedToolCall::FailedRetryable)]);
    }
}
