//! Task-list (todo) tool calls and what a refused one becomes (decisions.md §2).
//!
//! While they succeed, task-list calls follow the seed: a `plan` at the call (each plan replaces
//! the whole list), no `tool_call` (claude, qwen, droid, kimi; gemini and opencode announce the
//! call too), the result swallowed. A call the harness REFUSES (a failed result: the tool is
//! disabled, unknown, denied, or its input invalid) did not change the list, so the consumer
//! must see:
//!
//! 1. its `tool_call`, if none was emitted yet — every `tool_call_update` follows the
//!    `tool_call` that announced it;
//! 2. the failed `tool_call_update` with the harness's message;
//! 3. a `plan` re-stating the list as it was before that call, undoing the refused change.
//!
//! [`TaskListCalls`] holds each call until its result, with the list as it was before it.

use std::collections::HashMap;

use crate::event::{PlanEntry, SessionUpdate, ToolCall};

/// A task-list call waiting for its result.
#[derive(Debug, Clone)]
struct Held {
    /// The `tool_call` to announce if it is refused (`None`: announced already).
    call: Option<ToolCall>,
    /// The list as it was before the call.
    before: Vec<PlanEntry>,
}

/// The task-list calls of one run, and the list as the last plan stated it.
#[derive(Debug, Default)]
pub(crate) struct TaskListCalls {
    held: HashMap<String, Held>,
    current: Vec<PlanEntry>,
}

impl TaskListCalls {
    /// A task-list call that states `entries` now: held with the list as it was, and the `plan`
    /// to emit. `call` is its `tool_call` for a refusal (`None` when the decoder announces the
    /// call itself). A call stated again (a harness that reprints a call as it progresses) keeps
    /// the list as it was before its first statement.
    pub fn call(&mut self, id: &str, call: Option<ToolCall>, entries: Vec<PlanEntry>) -> SessionUpdate {
        let before = std::mem::replace(&mut self.current, entries.clone());
        self.held.entry(id.to_string()).or_insert(Held { call, before });
        SessionUpdate::Plan { entries }
    }

    /// A task-list call whose change is stated only when its result confirms it (claude's task
    /// tools): held, no plan yet.
    pub fn hold(&mut self, id: &str, call: ToolCall) {
        self.held.insert(id.to_string(), Held { call: Some(call), before: self.current.clone() });
    }

    /// The decoder stated the list itself (a confirmed task-tool change).
    pub fn stated(&mut self, entries: &[PlanEntry]) {
        self.current = entries.to_vec();
    }

    /// True when `id` is a held task-list call.
    pub fn holds(&self, id: &str) -> bool {
        !self.held.is_empty() && self.held.contains_key(id)
    }

    /// Call `id` succeeded: the plan already said it (its result is swallowed). False when it is
    /// not a held task-list call.
    pub fn done(&mut self, id: &str) -> bool {
        !self.held.is_empty() && self.held.remove(id).is_some()
    }

    /// Call `id` was refused: what to emit around `update`, the failed `tool_call_update` the
    /// decoder built (see the module docs). Just `update` when `id` is not a held call.
    pub fn refused(&mut self, id: &str, update: SessionUpdate) -> Vec<SessionUpdate> {
        let Some(held) = self.held.remove(id) else { return vec![update] };
        let mut updates = Vec::with_capacity(3);
        if let Some(call) = held.call {
            updates.push(SessionUpdate::ToolCall(call));
        }
        updates.push(update);
        self.current = held.before.clone();
        updates.push(SessionUpdate::Plan { entries: held.before });
        updates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{PlanEntryPriority, PlanEntryStatus, ToolCallStatus, ToolCallUpdate, ToolKind};

    fn entry(text: &str) -> PlanEntry {
        PlanEntry { content: text.into(), status: PlanEntryStatus::Pending, priority: PlanEntryPriority::Medium }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            tool_call_id: id.into(),
            title: "Update TODOs".into(),
            tool_name: Some("TodoWrite".into()),
            kind: ToolKind::Other,
            status: ToolCallStatus::Pending,
            raw_input: None,
            content: None,
            locations: None,
        }
    }

    fn failed(id: &str) -> SessionUpdate {
        let mut u = ToolCallUpdate::new(id);
        u.status = Some(ToolCallStatus::Failed);
        SessionUpdate::ToolCallUpdate(u)
    }

    #[test]
    fn a_refused_call_is_announced_failed_and_undone() {
        let mut t = TaskListCalls::default();
        assert!(matches!(t.call("a", Some(call("a")), vec![entry("one")]), SessionUpdate::Plan { .. }));
        assert!(t.holds("a") && t.done("a") && !t.holds("a"));
        t.call("b", Some(call("b")), vec![entry("one"), entry("two")]);
        let updates = t.refused("b", failed("b"));
        let kinds: Vec<&str> = updates.iter().map(SessionUpdate::kind_name).collect();
        assert_eq!(kinds, ["tool_call", "tool_call_update", "plan"]);
        assert!(matches!(&updates[2], SessionUpdate::Plan { entries } if *entries == [entry("one")]));
        assert_eq!(t.refused("b", failed("b")).len(), 1, "answered once");
        assert!(!t.holds("b") && !t.done("b"));
    }

    #[test]
    fn an_announced_call_is_not_announced_again_and_held_calls_restore_the_stated_list() {
        let mut t = TaskListCalls::default();
        t.stated(&[entry("task 1")]);
        t.hold("c", call("c"));
        t.call("d", None, vec![entry("x")]);
        let updates = t.refused("d", failed("d"));
        assert_eq!(updates.len(), 2, "no second tool_call");
        assert!(matches!(&updates[1], SessionUpdate::Plan { entries } if *entries == [entry("task 1")]));
        let updates = t.refused("c", failed("c"));
        assert!(matches!(&updates[2], SessionUpdate::Plan { entries } if *entries == [entry("task 1")]));
        assert_eq!(t.refused("zzz", failed("zzz")).len(), 1);
    }
}
