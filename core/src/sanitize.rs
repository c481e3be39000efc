//! What every content event goes through before it leaves the decoder: its harness records
//! (`rawInput`, `rawOutput`, `extra`, a usage's `extra`) made readable by every JSON reader and
//! by every binding at any nesting depth ([`RawJson::normalized`]), then — unless the caller
//! turned redaction off — every field derived from a tool call's input masked
//! ([`Redactor`]); a masked record's containers past the depth limit
//! are masked whole (fail closed) rather than delivered as text.
//!
//! One place, applied where events are emitted ([`Decoder`](crate::Decoder) output), so no
//! decoder has to remember it and every consumer — the CLI, `parse`, `replay`, a live run, every
//! binding — gets the same events.

use crate::event::{OutputEvent, RawJson, SessionUpdate};
use crate::raw_json::{DeepContainers, Repairs};
use crate::redact::{RedactionPolicy, Redactor};

/// Prepares decoded events for delivery. One per decoder: it remembers the secrets of the
/// run's inputs (see [`Redactor`]).
#[derive(Debug, Default)]
pub struct Sanitizer {
    redactor: Option<Redactor>,
}

impl Sanitizer {
    /// A sanitizer that masks tool inputs when `policy` is enabled.
    pub fn new(policy: RedactionPolicy) -> Self {
        Sanitizer { redactor: policy.enabled.then(Redactor::new) }
    }

    /// Whether tool inputs are masked.
    pub fn redacts(&self) -> bool {
        self.redactor.is_some()
    }

    /// `text` (something the harness printed) masked as raw lines are for others, with the
    /// secrets remembered from this run's inputs too ([`Redactor::mask_raw_text`]); unchanged
    /// when redaction is off.
    pub fn mask_raw_text<'t>(&mut self, text: &'t str) -> std::borrow::Cow<'t, str> {
        match &mut self.redactor {
            Some(redactor) => redactor.mask_raw_text(text),
            None => std::borrow::Cow::Borrowed(text),
        }
    }

    /// Make `ev` safe to deliver, in place; returns what had to be repaired in its records.
    pub fn event(&mut self, ev: &mut OutputEvent) -> Repairs {
        let mut repairs = Repairs::default();
        // A record that is masked has its too-deep parts masked whole, not delivered as text.
        let input = if self.redactor.is_some() { DeepContainers::Masked } else { DeepContainers::AsText };
        let mut fix = |raw: &mut Option<RawJson>, deep: DeepContainers| {
            if let Some((fixed, r)) = raw.as_ref().and_then(|r| r.normalized(deep)) {
                *raw = Some(fixed);
                repairs += r;
            }
        };
        fix(&mut ev.extra, DeepContainers::AsText);
        match &mut ev.update {
            SessionUpdate::ToolCall(call) => fix(&mut call.raw_input, input),
            SessionUpdate::ToolCallUpdate(update) => fix(&mut update.raw_output, input),
            SessionUpdate::Usage { usage, .. } => fix(&mut usage.extra, DeepContainers::AsText),
            SessionUpdate::AgentMessageChunk { .. }
            | SessionUpdate::AgentThoughtChunk { .. }
            | SessionUpdate::UserMessageChunk { .. }
            | SessionUpdate::Plan { .. }
            | SessionUpdate::Error { .. } => {}
        }
        if let Some(redactor) = &mut self.redactor {
            redactor.mask_event(ev);
        }
        repairs
    }
}
