//! The steps in progress of a [`HookDeriver`](super::HookDeriver): at most one per scope (the
//! main agent, or a subagent by the parent tool call it runs under), found by scope or by step
//! index in constant time, with the text the subagents' steps hold bounded in all.

use std::collections::{BTreeMap, HashMap};

use crate::answer::MAX_ANSWER_BYTES;
use crate::event::SharedStr;

/// The message text all subagent steps in progress hold together (it becomes the run's answer
/// only when the main agent printed none). A harness with hundreds of subagents in flight must
/// not make the deriver hold [`MAX_ANSWER_BYTES`] for each.
pub(super) const SUBAGENTS_TEXT: usize = MAX_ANSWER_BYTES;

#[derive(Debug, Default)]
pub(super) struct Step {
    pub(super) index: u64,
    /// Whose step it is: `None` for the main agent, else the `parentToolCallId` of the subagent
    /// call it runs under (a background subagent's steps interleave with the main agent's).
    pub(super) scope: Option<SharedStr>,
    /// A tool result of this scope came after the step's model output: the next output starts
    /// a new step (for harnesses without message ids).
    pub(super) after_tool_result: bool,
    pub(super) message_id: Option<SharedStr>,
    pub(super) model: Option<SharedStr>,
    pub(super) usage: Option<serde_json::Value>,
    /// The step's message text; only [`Steps::push_text`] adds to it.
    pub(super) text: String,
    pub(super) last_sequence: u64,
    /// `model.completed` was derived: the model's reply is complete (its first tool call or
    /// result was seen, or the step ended).
    pub(super) model_completed: bool,
}

/// The steps in progress, by step index (so oldest first) and by scope.
#[derive(Debug, Default)]
pub(super) struct Steps {
    by_index: BTreeMap<u64, Step>,
    main: Option<u64>,
    subagents: HashMap<SharedStr, u64>,
    /// Bytes of `text` held by subagent steps, in all.
    subagents_text: usize,
}

impl Steps {
    /// The index of `scope`'s step in progress.
    pub(super) fn of_scope(&self, scope: Option<&str>) -> Option<u64> {
        match scope {
            None => self.main,
            Some(id) => self.subagents.get(id).copied(),
        }
    }

    pub(super) fn get(&self, index: u64) -> Option<&Step> {
        self.by_index.get(&index)
    }

    pub(super) fn get_mut(&mut self, index: u64) -> Option<&mut Step> {
        self.by_index.get_mut(&index)
    }

    /// The oldest step in progress.
    pub(super) fn first(&self) -> Option<u64> {
        self.by_index.keys().next().copied()
    }

    /// The steps in progress, oldest first.
    pub(super) fn indexes(&self) -> Vec<u64> {
        self.by_index.keys().copied().collect()
    }

    /// Start `step`; its scope must have no step in progress.
    pub(super) fn insert(&mut self, step: Step) {
        debug_assert!(self.of_scope(step.scope.as_deref()).is_none(), "one step per scope");
        debug_assert!(step.text.is_empty(), "text is added with push_text");
        match &step.scope {
            None => self.main = Some(step.index),
            Some(id) => {
                self.subagents.insert(id.clone(), step.index);
            }
        }
        self.by_index.insert(step.index, step);
    }

    /// End step `index`.
    pub(super) fn remove(&mut self, index: u64) -> Option<Step> {
        let step = self.by_index.remove(&index)?;
        match &step.scope {
            None => self.main = None,
            Some(id) => {
                self.subagents.remove(id);
                self.subagents_text -= step.text.len();
            }
        }
        Some(step)
    }

    /// End every step, oldest first.
    pub(super) fn take_all(&mut self) -> Vec<Step> {
        let steps = std::mem::take(self);
        steps.by_index.into_values().collect()
    }

    /// Add message text to step `index`: up to [`MAX_ANSWER_BYTES`] per step, and for the
    /// subagents' steps up to what [`SUBAGENTS_TEXT`] leaves.
    pub(super) fn push_text(&mut self, index: u64, text: &str) {
        let Some(step) = self.by_index.get_mut(&index) else { return };
        match step.scope {
            None => {
                crate::answer::push_capped(&mut step.text, text);
            }
            Some(_) => {
                let room = SUBAGENTS_TEXT
                    .saturating_sub(self.subagents_text)
                    .min(MAX_ANSWER_BYTES.saturating_sub(step.text.len()));
                let before = step.text.len();
                crate::answer::push_within(&mut step.text, text, room);
                self.subagents_text += step.text.len() - before;
            }
        }
    }

    #[cfg(test)]
    pub(super) fn subagents_text(&self) -> usize {
        debug_assert_eq!(
            self.subagents_text,
            self.by_index.values().filter(|s| s.scope.is_some()).map(|s| s.text.len()).sum::<usize>()
        );
        self.subagents_text
    }
}

impl std::ops::Index<u64> for Steps {
    type Output = Step;

    /// Step `index`, which must be in progress.
    fn index(&self, index: u64) -> &Step {
        &self.by_index[&index]
    }
}

impl std::ops::IndexMut<u64> for Steps {
    fn index_mut(&mut self, index: u64) -> &mut Step {
        self.by_index.get_mut(&index).expect("a step in progress")
    }
}
