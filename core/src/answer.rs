//! What a run's result needs from its content events beyond the stream's own record: the final
//! answer text and the first fatal error the harness reported.

use crate::event::{OutputEvent, SessionUpdate, ToolCallStatus};

/// Tracks the answer (the message text after the last tool call) and the first fatal error.
#[derive(Debug, Default, Clone)]
pub struct AnswerTracker {
    current: String,
    fatal_error: Option<String>,
}

impl AnswerTracker {
    /// Observe one content event.
    pub fn observe(&mut self, ev: &OutputEvent) {
        match &ev.update {
            SessionUpdate::AgentMessageChunk { content } => {
                if let Some(t) = content.as_text() {
                    self.current.push_str(t);
                }
            }
            // Text before a tool call is narration; the answer is what follows the last call.
            SessionUpdate::ToolCall(c) if !matches!(c.status, ToolCallStatus::Completed | ToolCallStatus::Failed) => {
                self.current.clear();
            }
            SessionUpdate::Error { message, fatal: true } => {
                self.fatal_error.get_or_insert_with(|| message.clone());
            }
            _ => {}
        }
    }

    /// The answer so far (only meaningful for a completed run).
    pub fn answer(&self) -> &str {
        &self.current
    }

    /// The first error the harness treated as terminal.
    pub fn fatal_error(&self) -> Option<&str> {
        self.fatal_error.as_deref()
    }
}
