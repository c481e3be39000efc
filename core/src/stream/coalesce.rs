//! Which items may merge, and how (decisions.md §3).
//!
//! Only TEXT DELTAS merge, and only into a delta of the same kind whose attribution is equal:
//!
//! | kind | item | merges into a tail that is |
//! |---|---|---|
//! | message | content `agent_message_chunk` with text content | a message delta with the same `sessionId`, `model`, `messageId`, `parentToolCallId` and `extra` |
//! | thought | content `agent_thought_chunk` with text content | a thought delta, same fields |
//! | stdout | a `stdout` item | a `stdout` item |
//! | stderr | a `stderr` item | a `stderr` item |
//!
//! Merging appends the text exactly, so merging never changes what a consumer reassembles nor
//! who it is attributed to. The one envelope field NOT required to match is `timestamp`: the
//! merged delta keeps the earlier piece's (the time its text began); requiring equal timestamps
//! would stop merging for every harness that stamps each line, which is exactly the flood
//! backpressure exists for. Image chunks, `user_message_chunk`, tool events, plans, errors,
//! usage and lifecycle items never merge.

use super::item::StreamItem;
use super::weight::escaped_len;
use crate::event::{ContentBlock, OutputEvent, SessionUpdate};

/// The kinds of text delta that may merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaKind {
    /// `agent_message_chunk` text.
    Message,
    /// `agent_thought_chunk` text.
    Thought,
    /// Raw stdout.
    Stdout,
    /// Raw stderr.
    Stderr,
}

/// The delta kind of an item, or `None` for an item that never merges.
pub fn delta_kind(item: &StreamItem) -> Option<DeltaKind> {
    match item {
        StreamItem::Stdout(_) => Some(DeltaKind::Stdout),
        StreamItem::Stderr(_) => Some(DeltaKind::Stderr),
        StreamItem::Content(ev) => match &ev.update {
            SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { .. } } => Some(DeltaKind::Message),
            SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { .. } } => Some(DeltaKind::Thought),
            _ => None,
        },
        StreamItem::Lifecycle(_) => None,
    }
}

fn text_mut(ev: &mut OutputEvent) -> Option<&mut String> {
    match &mut ev.update {
        SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text } }
        | SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { text } } => Some(text),
        _ => None,
    }
}

fn same_attribution(a: &OutputEvent, b: &OutputEvent) -> bool {
    a.session_id == b.session_id
        && a.message_id == b.message_id
        && a.parent_tool_call_id == b.parent_tool_call_id
        && a.model == b.model
        && a.extra == b.extra
}

/// Merge `item` into `tail` when both are text deltas of the same kind and attribution.
/// `Some(added)` gives the bytes the tail's weight grew by; `None` leaves the tail untouched.
/// Only the text is copied, so the item is borrowed (items are large; moving them is not free).
pub fn try_merge(tail: &mut StreamItem, item: &StreamItem) -> Option<usize> {
    match (tail, item) {
        (StreamItem::Stdout(t), StreamItem::Stdout(s)) | (StreamItem::Stderr(t), StreamItem::Stderr(s)) => {
            t.push_str(s);
            Some(escaped_len(s))
        }
        (StreamItem::Content(t), StreamItem::Content(e)) => {
            let text = match (&t.update, &e.update) {
                (
                    SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { .. } },
                    SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text } },
                )
                | (
                    SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { .. } },
                    SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { text } },
                ) => text,
                _ => return None,
            };
            if !same_attribution(t, e) {
                return None;
            }
            text_mut(t)?.push_str(text);
            Some(escaped_len(text))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ImageContent, SharedStr};
    use crate::stream::weight::item_weight;

    fn msg(text: &str, mid: Option<&str>) -> StreamItem {
        let mut ev = OutputEvent::new(SessionUpdate::message(text));
        ev.message_id = mid.map(SharedStr::from);
        StreamItem::Content(ev)
    }

    #[test]
    fn merges_same_kind_and_attribution_exactly() {
        let mut tail = msg("Hel", Some("m1"));
        let w0 = item_weight(&tail);
        let added = try_merge(&mut tail, &msg("lo \"x\"\n", Some("m1"))).unwrap();
        assert_eq!(tail, msg("Hello \"x\"\n", Some("m1")));
        assert_eq!(w0 + added, item_weight(&tail));

        let mut out = StreamItem::Stdout("a\n".into());
        assert_eq!(try_merge(&mut out, &StreamItem::Stdout("b\n".into())), Some(2 + 1));
        assert_eq!(out, StreamItem::Stdout("a\nb\n".into()));
    }

    #[test]
    fn keeps_the_earlier_timestamp() {
        let mut a = OutputEvent::new(SessionUpdate::thought("a"));
        a.timestamp = Some("t1".into());
        let mut b = OutputEvent::new(SessionUpdate::thought("b"));
        b.timestamp = Some("t2".into());
        let mut tail = StreamItem::Content(a);
        assert!(try_merge(&mut tail, &StreamItem::Content(b)).is_some());
        assert_eq!(tail.as_content().unwrap().timestamp.as_deref(), Some("t1"));
    }

    #[test]
    fn never_merges_across_kinds_attribution_or_non_text() {
        let cases: Vec<(StreamItem, StreamItem)> = vec![
            (msg("a", Some("m1")), msg("b", Some("m2"))),
            (msg("a", None), StreamItem::Content(OutputEvent::new(SessionUpdate::thought("b")))),
            (StreamItem::Stdout("a".into()), StreamItem::Stderr("b".into())),
            (msg("a", None), StreamItem::Stdout("b".into())),
            (
                msg("a", None),
                StreamItem::Content(OutputEvent::new(SessionUpdate::AgentMessageChunk {
                    content: ContentBlock::Image(ImageContent {
                        data: "x".into(),
                        mime_type: "image/png".into(),
                        uri: None,
                    }),
                })),
            ),
            (
                StreamItem::Content(OutputEvent::new(SessionUpdate::user_message("a"))),
                StreamItem::Content(OutputEvent::new(SessionUpdate::user_message("b"))),
            ),
        ];
        for (mut tail, item) in cases {
            let before = tail.clone();
            assert_eq!(try_merge(&mut tail, &item), None);
            assert_eq!(tail, before);
        }
        assert_eq!(delta_kind(&StreamItem::Content(OutputEvent::new(SessionUpdate::user_message("a")))), None);
    }
}
