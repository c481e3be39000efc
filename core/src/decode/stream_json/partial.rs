//! Partial messages (`--include-partial-messages`): streamed deltas remembered per scope and
//! reconciled with the complete `assistant` lines (see the protocol docs in [`super`]).

use std::collections::HashMap;

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
    text: Streamed,
    thought: Streamed,
    pub(crate) message_id: Option<SharedStr>,
    pub(crate) model: Option<SharedStr>,
    pub(crate) start_usage: Option<Usage>,
}

impl Scope {
    fn buffer(&mut self, piece: Piece) -> &mut Streamed {
        match piece {
            Piece::Text => &mut self.text,
            Piece::Thought => &mut self.thought,
        }
    }

    /// Text held as text by both streams.
    fn held(&self) -> usize {
        self.text.head.len() + self.thought.head.len()
    }

    /// Nothing to remember: a scope like this is the same as one never seen.
    fn is_blank(&self) -> bool {
        self.text.is_empty()
            && self.thought.is_empty()
            && self.message_id.is_none()
            && self.model.is_none()
            && self.start_usage.is_none()
    }
}

/// Streamed text not yet confirmed by a complete line, in bounded memory: the first bytes (up
/// to [`MAX_HELD`], or what the scopes' shared budget leaves) as text, the rest only as its
/// length and a hash — enough to tell whether a complete block continues the stream. (A flood
/// of deltas never confirmed must not grow a decoder without bound.)
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    head: String,
    /// Bytes streamed in all: `head`, then `len - head.len()` more, hashed.
    len: usize,
    tail_hash: u64,
}

/// The streamed text one stream of a scope holds as text; past it, a length and a hash.
const MAX_HELD: usize = 1024 * 1024;

/// The streamed text all subagent scopes together hold as text. Each subagent (by parent tool
/// id) has a scope until its message is confirmed; a harness with hundreds of them in flight
/// must not make the decoder hold `MAX_HELD` for each. Past the budget a scope keeps only a
/// length and a hash, which still recognizes a complete block that repeats the stream.
const SUBAGENTS_HELD: usize = 4 * MAX_HELD;

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
    /// Append `text`, holding at most `room` more bytes of it as text; returns how many it held.
    fn push_str(&mut self, text: &str, room: usize) -> usize {
        let cut = if self.len == self.head.len() {
            crate::char_boundary::floor(text, MAX_HELD.saturating_sub(self.head.len()).min(room))
        } else {
            0
        };
        self.head.push_str(&text[..cut]);
        self.tail_hash = fnv(self.tail_hash, &text.as_bytes()[cut..]);
        self.len += text.len();
        cut
    }

    fn clear(&mut self) {
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

/// Per-scope streamed text not yet confirmed by a complete `assistant` line. Subagent scopes
/// are found by parent id in constant time, share [`SUBAGENTS_HELD`], and are forgotten as
/// soon as they hold nothing: memory follows the subagents with something in flight, not
/// every subagent a run ever had.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    main: Scope,
    subagents: HashMap<String, Scope>,
    /// Text held by the subagent scopes, in all.
    subagents_held: usize,
}

impl Streams {
    /// The scope of `parent`, made if it is new. Callers that may leave it blank call
    /// [`Streams::forget_if_blank`] after.
    pub(crate) fn scope(&mut self, parent: Option<&str>) -> &mut Scope {
        match parent {
            None => &mut self.main,
            Some(id) => {
                if !self.subagents.contains_key(id) {
                    self.subagents.insert(id.to_string(), Scope::default());
                }
                self.subagents.get_mut(id).expect("inserted above")
            }
        }
    }

    fn existing(&mut self, parent: Option<&str>) -> Option<&mut Scope> {
        match parent {
            None => Some(&mut self.main),
            Some(id) => self.subagents.get_mut(id),
        }
    }

    /// Run `change` on an existing scope, keeping the subagents' held total true and dropping
    /// a subagent scope the change left blank.
    fn change<R>(&mut self, parent: Option<&str>, change: impl FnOnce(&mut Scope) -> R) -> Option<R> {
        let scope = self.existing(parent)?;
        let before = scope.held();
        let out = change(scope);
        let (after, blank) = (scope.held(), scope.is_blank());
        if let Some(id) = parent {
            self.subagents_held = self.subagents_held + after - before;
            if blank {
                self.subagents.remove(id);
            }
        }
        Some(out)
    }

    /// Drop a subagent scope that holds nothing (one [`Streams::scope`] made for a delta that
    /// carried nothing to keep).
    pub(crate) fn forget_if_blank(&mut self, parent: Option<&str>) {
        self.change(parent, |_| ());
    }

    /// A new message starts in a scope: its unconfirmed text is dropped.
    pub(crate) fn start_message(&mut self, parent: Option<&str>) -> &mut Scope {
        self.clear_text(parent);
        self.scope(parent)
    }

    /// A delta of `piece` streamed `text` in a scope.
    pub(crate) fn push(&mut self, parent: Option<&str>, piece: Piece, text: &str) {
        let room = match parent {
            None => usize::MAX,
            Some(_) => SUBAGENTS_HELD.saturating_sub(self.subagents_held),
        };
        let held = self.scope(parent).buffer(piece).push_str(text, room);
        if parent.is_some() {
            self.subagents_held += held;
        }
    }

    /// Where the part of a complete block's `full` text that still has to be emitted starts:
    /// the streamed prefix is consumed; text that does not continue the stream is emitted whole
    /// (0); `full.len()` when the stream carried all of it.
    pub fn reconcile(&mut self, parent: Option<&str>, piece: Piece, full: &str) -> usize {
        let at = self.change(parent, |scope| {
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
        });
        at.unwrap_or(0)
    }

    /// Drop the unconfirmed text of a scope.
    pub fn clear_text(&mut self, parent: Option<&str>) {
        self.change(parent, |s| {
            s.text.clear();
            s.thought.clear();
        });
    }

    /// Forget the streamed message of a scope.
    pub fn end_message(&mut self, parent: Option<&str>) {
        self.change(parent, |s| {
            s.message_id = None;
            s.model = None;
            s.start_usage = None;
        });
    }

    /// A complete line finalized the scope's message (qwen): later deltas belong to a message
    /// whose id is not known yet; the model (configuration-wide in qwen) carries over.
    pub fn line_ended_message(&mut self, parent: Option<&str>, model: Option<&SharedStr>) {
        self.scope(parent);
        self.change(parent, |scope| {
            scope.message_id = None;
            scope.start_usage = None;
            if let Some(m) = model {
                scope.model = Some(m.clone());
            }
        });
    }

    /// Forget everything (end of a run).
    pub fn clear(&mut self) {
        *self = Streams::default();
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
            s.push_str(piece, usize::MAX);
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

    /// The subagents' held text, counted again from their scopes.
    fn held_by_subagents(s: &Streams) -> usize {
        s.subagents.values().map(Scope::held).sum()
    }

    #[test]
    fn subagent_scopes_share_one_budget_and_still_reconcile() {
        let mut s = Streams::default();
        let piece = "subagent text é ".repeat(4096);
        let mut streamed = String::new();
        while streamed.len() < 3 * MAX_HELD {
            streamed.push_str(&piece);
        }
        let parents: Vec<String> = (0..12).map(|i| format!("toolu_{i}")).collect();
        for p in &parents {
            s.push(Some(p), Piece::Text, &streamed);
            s.push(Some(p), Piece::Thought, &piece);
        }
        assert_eq!(s.subagents_held, held_by_subagents(&s));
        assert!(s.subagents_held <= SUBAGENTS_HELD, "{} held", s.subagents_held);
        // The main agent's stream does not draw on the subagents' budget.
        s.push(None, Piece::Text, &streamed);
        assert!((MAX_HELD - 4..=MAX_HELD).contains(&s.main.text.head.len()));
        // Every scope, held in full or as a length and a hash, recognizes its complete block.
        for p in &parents {
            assert_eq!(s.reconcile(Some(p), Piece::Text, &format!("{streamed}!")), streamed.len(), "{p}");
            assert_eq!(s.subagents_held, held_by_subagents(&s));
        }
        assert_eq!(s.reconcile(None, Piece::Text, &streamed), streamed.len());
    }

    #[test]
    fn a_subagent_scope_is_forgotten_once_it_holds_nothing() {
        let mut s = Streams::default();
        for i in 0..1000 {
            let p = format!("toolu_{i}");
            s.start_message(Some(&p)).message_id = Some(SharedStr::from("msg"));
            s.push(Some(&p), Piece::Text, "Hello");
            s.push(Some(&p), Piece::Thought, "Hmm");
            assert_eq!(s.reconcile(Some(&p), Piece::Text, "Hello"), 5);
            assert_eq!(s.reconcile(Some(&p), Piece::Thought, "Hmm"), 3);
            assert_eq!(s.subagents.len(), 1, "the message is still open");
            s.end_message(Some(&p));
        }
        assert!(s.subagents.is_empty() && s.subagents_held == 0);
        // A message start that names nothing leaves nothing behind either.
        s.start_message(Some("toolu_x"));
        s.forget_if_blank(Some("toolu_x"));
        assert!(s.subagents.is_empty());
        // qwen's model carries over, so that scope stays.
        s.line_ended_message(Some("toolu_q"), Some(&SharedStr::from("qwen3")));
        assert_eq!(s.scope(Some("toolu_q")).model.as_deref(), Some("qwen3"));
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
