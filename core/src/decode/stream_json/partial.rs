//! Partial messages (`--include-partial-messages`): streamed deltas remembered per scope and
//! reconciled with the complete `assistant` lines (see the protocol docs in [`super`]).

use super::wire::*;
use crate::event::SharedStr;

// ------------------------------------------------------------------------------------------
// Partial-message reconciliation
// ------------------------------------------------------------------------------------------

/// Which stream a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    Text,
    Thought,
}

/// The streaming state of one scope (the main agent, or one subagent by parent tool id).
#[derive(Debug, Default)]
pub(crate) struct Scope {
    pub(crate) parent: Option<String>,
    pub(crate) text: Streamed,
    pub(crate) thought: Streamed,
    pub(crate) message_id: Option<SharedStr>,
    pub(crate) model: Option<SharedStr>,
    pub(crate) start_usage: Option<Usage>,
}

impl Scope {
    pub(crate) fn buffer(&mut self, piece: Piece) -> &mut Streamed {
        match piece {
            Piece::Text => &mut self.text,
            Piece::Thought => &mut self.thought,
        }
    }
}

/// Streamed text not yet confirmed by a complete line, in bounded memory: the first
/// [`MAX_HELD`] bytes as text, the rest only as its length and a hash — enough to tell whether
/// a complete block continues the stream. (A flood of deltas never confirmed must not grow a
/// decoder without bound.)
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    head: String,
    /// Bytes streamed in all: `head`, then `len - head.len()` more, hashed.
    len: usize,
    tail_hash: u64,
}

/// The streamed text a scope holds as text; past it, a length and a hash.
const MAX_HELD: usize = 1024 * 1024;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    if hash == 0 {
        hash = 0xcbf2_9ce4_8422_2325;
    }
    for &b in bytes {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    hash
}

impl Streamed {
    pub(crate) fn push_str(&mut self, text: &str) {
        let mut cut =
            if self.len == self.head.len() { MAX_HELD.saturating_sub(self.head.len()).min(text.len()) } else { 0 };
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.head.push_str(&text[..cut]);
        self.tail_hash = fnv(self.tail_hash, &text.as_bytes()[cut..]);
        self.len += text.len();
    }

    pub(crate) fn clear(&mut self) {
        *self = Streamed::default();
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn len(&self) -> usize {
        self.len
    }

    /// `full` begins with everything streamed.
    fn is_prefix_of(&self, full: &str) -> bool {
        full.len() >= self.len
            && full.starts_with(self.head.as_str())
            && (self.len == self.head.len() || fnv(0, &full.as_bytes()[self.head.len()..self.len]) == self.tail_hash)
    }

    /// Everything streamed begins with `full` (decidable within the text held).
    fn starts_with(&self, full: &str) -> bool {
        self.head.starts_with(full)
    }

    /// Consume the first `n` streamed bytes (`n` within the text held).
    fn drain_front(&mut self, n: usize) {
        self.head.drain(..n);
        self.len -= n;
    }
}

/// Per-scope streamed text not yet confirmed by a complete `assistant` line.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    pub(crate) scopes: Vec<Scope>,
}

impl Streams {
    pub(crate) fn scope(&mut self, parent: Option<&str>) -> &mut Scope {
        let at = match self.scopes.iter().position(|s| s.parent.as_deref() == parent) {
            Some(at) => at,
            None => {
                self.scopes.push(Scope { parent: parent.map(str::to_string), ..Scope::default() });
                self.scopes.len() - 1
            }
        };
        &mut self.scopes[at]
    }

    pub(crate) fn existing(&mut self, parent: Option<&str>) -> Option<&mut Scope> {
        self.scopes.iter_mut().find(|s| s.parent.as_deref() == parent)
    }

    /// Where the part of a complete block's `full` text that still has to be emitted starts:
    /// the streamed prefix is consumed; text that does not continue the stream is emitted whole
    /// (0); `full.len()` when the stream carried all of it.
    pub fn reconcile(&mut self, parent: Option<&str>, piece: Piece, full: &str) -> usize {
        let Some(scope) = self.existing(parent) else { return 0 };
        let buf = scope.buffer(piece);
        if buf.is_empty() {
            0
        } else if buf.is_prefix_of(full) {
            let at = buf.len();
            buf.clear();
            at
        } else if buf.starts_with(full) {
            buf.drain_front(full.len());
            full.len()
        } else {
            buf.clear();
            0
        }
    }

    /// Drop the unconfirmed text of a scope.
    pub fn clear_text(&mut self, parent: Option<&str>) {
        if let Some(s) = self.existing(parent) {
            s.text.clear();
            s.thought.clear();
        }
    }

    /// Forget the streamed message of a scope.
    pub fn end_message(&mut self, parent: Option<&str>) {
        if let Some(s) = self.existing(parent) {
            s.message_id = None;
            s.model = None;
            s.start_usage = None;
        }
    }

    /// A complete line finalized the scope's message (qwen): later deltas belong to a message
    /// whose id is not known yet; the model (configuration-wide in qwen) carries over.
    pub fn line_ended_message(&mut self, parent: Option<&str>, model: Option<&SharedStr>) {
        let scope = self.scope(parent);
        scope.message_id = None;
        scope.start_usage = None;
        if let Some(m) = model {
            scope.model = Some(m.clone());
        }
    }

    /// Forget everything (end of a run).
    pub fn clear(&mut self) {
        self.scopes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_is_held_bounded_and_still_reconciles() {
        let piece = "0123456789abcdé-";
        let mut s = Streamed::default();
        let mut all = String::new();
        while all.len() < 3 * MAX_HELD {
            s.push_str(piece);
            all.push_str(piece);
        }
        assert!(s.head.len() <= MAX_HELD && s.len() == all.len());
        assert!(s.is_prefix_of(&all));
        assert!(s.is_prefix_of(&format!("{all} and more")));
        let mut changed = all.clone();
        let at = (2 * MAX_HELD..).find(|&i| all.is_char_boundary(i) && all.is_char_boundary(i + 1)).unwrap();
        changed.replace_range(at..at + 1, "X");
        assert!(!s.is_prefix_of(&changed), "a difference past the held text is seen");
        assert!(!s.is_prefix_of(&all[..all.len() - 1]));
        assert!(s.starts_with("0123") && !s.starts_with("x"));
    }

    #[test]
    fn a_complete_line_after_a_long_stream_adds_nothing() {
        let delta = |t: &str| {
            format!(
                "{{\"type\":\"stream_event\",\"event\":{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{t}\"}}}},\"session_id\":\"s\",\"parent_tool_use_id\":null}}\n"
            )
        };
        let piece = "abcdefghij0123456789";
        let count = 3 * MAX_HELD / piece.len();
        let mut input = String::new();
        for _ in 0..count {
            input.push_str(&delta(piece));
        }
        let full = piece.repeat(count);
        input.push_str(&format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[{{\"type\":\"text\",\"text\":\"{full}\"}}]}},\"session_id\":\"s\",\"parent_tool_use_id\":null}}\n"
        ));
        let events = crate::decode::parse(crate::decode::Agent::Claude, input.as_bytes());
        let text: String = events
            .iter()
            .filter_map(|e| match &e.update {
                crate::event::SessionUpdate::AgentMessageChunk { content } => content.as_text(),
                _ => None,
            })
            .collect();
        assert_eq!(text.len(), full.len(), "streamed once, the complete line adds nothing");
    }
}
