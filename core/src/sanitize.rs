//! What every content event goes through before it leaves the decoder: its harness records
//! (`rawInput`, `rawOutput`, `extra`, a usage's `extra`) made readable by every JSON reader and
//! by every binding at any nesting depth ([`RawJson::normalized`]).
//!
//! One place, applied where events are emitted ([`Decoder`](crate::Decoder) output), so no
//! decoder has to remember it and every consumer — the CLI, `parse`, `replay`, a live run, every
//! binding — gets the same events.

use crate::event::{OutputEvent, RawJson, SessionUpdate};
use crate::raw_json::{DeepContainers, Repairs};

/// Prepares decoded events for delivery. One per decoder (it may keep state across events).
#[derive(Debug, Default)]
pub struct Sanitizer {}

impl Sanitizer {
    /// A sanitizer.
    pub fn new() -> Self {
        Sanitizer {}
    }

    /// Make `ev` safe to deliver, in place; returns what had to be repaired in its records.
    pub fn event(&mut self, ev: &mut OutputEvent) -> Repairs {
        let mut repairs = Repairs::default();
        let mut fix = |raw: &mut Option<RawJson>, deep: DeepContainers| {
            if let Some((fixed, r)) = raw.as_ref().and_then(|r| r.normalized(deep)) {
                *raw = Some(fixed);
                repairs += r;
            }
        };
        fix(&mut ev.extra, DeepContainers::AsText);
        match &mut ev.update {
            SessionUpdate::ToolCall(call) => fix(&mut call.raw_input, DeepContainers::AsText),
            SessionUpdate::ToolCallUpdate(update) => fix(&mut update.raw_output, DeepContainers::AsText),
            SessionUpdate::Usage { usage, .. } => fix(&mut usage.extra, DeepContainers::AsText),
            SessionUpdate::AgentMessageChunk { .. }
            | SessionUpdate::AgentThoughtChunk { .. }
            | SessionUpdate::UserMessageChunk { .. }
            | SessionUpdate::Plan { .. }
            | SessionUpdate::Error { .. } => {}
        }
        repairs
    }
}
