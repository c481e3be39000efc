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
    pub(crate) text: String,
    pub(crate) thought: String,
    pub(crate) message_id: Option<SharedStr>,
    pub(crate) model: Option<SharedStr>,
    pub(crate) start_usage: Option<Usage>,
}

impl Scope {
    pub(crate) fn buffer(&mut self, piece: Piece) -> &mut String {
        match piece {
            Piece::Text => &mut self.text,
            Piece::Thought => &mut self.thought,
        }
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
        } else if full.starts_with(buf.as_str()) {
            let at = buf.len();
            buf.clear();
            at
        } else if buf.starts_with(full) {
            buf.drain(..full.len());
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
