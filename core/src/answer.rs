//! What a run's result needs from its content events beyond the stream's own record: the final
//! answer text and the first fatal error the harness reported.

use crate::event::{OutputEvent, SessionUpdate, ToolCallStatus};

/// The most answer text kept (the run result's `final_text`, the hooks' `output`): the first
/// 8 MiB. A harness that floods its answer must not make the result hold the whole flood; the
/// stream delivers every character all the same.
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// Append `text` to `answer` up to [`MAX_ANSWER_BYTES`] (at a character boundary); returns
/// how many bytes of `text` were not kept.
pub fn push_capped(answer: &mut String, text: &str) -> usize {
    push_within(answer, text, MAX_ANSWER_BYTES.saturating_sub(answer.len()))
}

/// Append at most `room` bytes of `text` to `answer` (cut at a character boundary); returns
/// how many bytes of `text` were not kept.
pub fn push_within(answer: &mut String, text: &str, room: usize) -> usize {
    let kept = crate::char_boundary::prefix(text, room);
    answer.push_str(kept);
    text.len() - kept.len()
}

/// Tracks the answer (the message text after the last tool call) and the first fatal error.
#[derive(Debug, Default, Clone)]
pub struct AnswerTracker {
    current: String,
    /// Bytes of the current answer past [`MAX_ANSWER_BYTES`], not kept.
    dropped: u64,
    fatal_error: Option<String>,
}

impl AnswerTracker {
    /// Observe one content event.
    pub fn observe(&mut self, ev: &OutputEvent) {
        match &ev.update {
            SessionUpdate::AgentMessageChunk { content } => {
                if let Some(t) = content.as_text() {
                    self.dropped += push_capped(&mut self.current, t) as u64;
                }
            }
            // Text before a tool call is narration; the answer is what follows the last call.
            SessionUpdate::ToolCall(c) if !matches!(c.status, ToolCallStatus::Completed | ToolCallStatus::Failed) => {
                self.current.clear();
                self.dropped = 0;
            }
            SessionUpdate::Error { message, fatal: true } => {
                self.fatal_error.get_or_insert_with(|| message.clone());
            }
            _ => {}
        }
    }

    /// The answer so far (only meaningful for a completed run), at most [`MAX_ANSWER_BYTES`].
    pub fn answer(&self) -> &str {
        &self.current
    }

    /// Bytes of the answer past [`MAX_ANSWER_BYTES`] that [`answer`](Self::answer) does not hold.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// The first error the harness treated as terminal.
    pub fn fatal_error(&self) -> Option<&str> {
        self.fatal_error.as_deref()
    }
}
