//! The weight of an item: the byte length of its `event` member as compact JSON.
//!
//! Weights are EXACT, not estimated, and cheap: a counting writer serializes without
//! allocating, and a raw or text delta costs one pass over its bytes. Merging stays exact
//! because serde_json escapes per character: the JSON of `a + b` as a string is the JSON of
//! `a` plus the escaped bytes of `b`, so a merge adds [`escaped_len`] of the absorbed text.
//! The envelope's own fields (`runId`, `sequence`, `channel`, `coalesced`) are not counted:
//! they are a few dozen bytes per item and do not grow with content.

use serde::Serialize;

use super::item::StreamItem;
use crate::event::{ContentBlock, OutputEvent, SessionUpdate};

/// Extra bytes serde_json writes for each input byte: `\"`, `\\`, `\n`-style two-byte escapes,
/// and six-byte `\u00XX` for the other control characters (ser.rs `ESCAPE`).
const EXTRA: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = 5;
        i += 1;
    }
    t[0x08] = 1;
    t[0x09] = 1;
    t[0x0A] = 1;
    t[0x0C] = 1;
    t[0x0D] = 1;
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t
};

/// Length of `s` as serde_json writes it inside a JSON string, without the quotes.
pub fn escaped_len(s: &str) -> usize {
    s.len() + s.bytes().map(|b| EXTRA[b as usize] as usize).sum::<usize>()
}

struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Length of `v` as compact JSON, without building the string.
pub fn json_len<T: Serialize + ?Sized>(v: &T) -> usize {
    let mut c = Counter(0);
    // Our item types always serialize (string keys only); a failure would count what was written.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// The weight of an item: the length of [`StreamItem::event_json`], computed without
/// allocating. Raw text and message/thought text deltas (the flood case) are counted directly
/// from their fields; everything else goes through a counting serializer.
pub fn item_weight(item: &StreamItem) -> usize {
    match item {
        StreamItem::Stdout(s) | StreamItem::Stderr(s) => escaped_len(s) + 2,
        StreamItem::Content(ev) if ev.extra.is_none() => match &ev.update {
            SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text } } => {
                text_delta_len(ev, "agent_message_chunk", text)
            }
            SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { text } } => {
                text_delta_len(ev, "agent_thought_chunk", text)
            }
            _ => json_len(ev),
        },
        other => json_len(&other.event()),
    }
}

/// `{"sessionId":…,"update":{"sessionUpdate":"<kind>","content":{"type":"text","text":"…"}},
/// "timestamp":…,"model":…,"messageId":…,"parentToolCallId":…}` with absent fields omitted
/// (the serde form of [`OutputEvent`] without `extra`).
fn text_delta_len(ev: &OutputEvent, kind: &str, text: &str) -> usize {
    const UPDATE_HEAD: &str = r#""update":{"sessionUpdate":""#;
    const UPDATE_MID: &str = r#"","content":{"type":"text","text":""#;
    const UPDATE_TAIL: &str = r#""}}"#;
    let mut members = 1;
    let mut len = UPDATE_HEAD.len() + kind.len() + UPDATE_MID.len() + escaped_len(text) + UPDATE_TAIL.len();
    for (name, value) in [
        ("sessionId", &ev.session_id),
        ("timestamp", &ev.timestamp),
        ("model", &ev.model),
        ("messageId", &ev.message_id),
        ("parentToolCallId", &ev.parent_tool_call_id),
    ] {
        if let Some(v) = value {
            members += 1;
            len += name.len() + escaped_len(v) + 5; // "name":"value"
        }
    }
    len + 2 + (members - 1) // braces and commas
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn escaped_len_matches_serde_json(s in "\\PC*|[\\x00-\\x7f]*") {
            prop_assert_eq!(escaped_len(&s) + 2, serde_json::to_string(&s).unwrap().len());
        }

        #[test]
        fn item_weight_is_the_event_json_length(
            s in "[\\x00-\\x7f]{0,40}|\\PC{0,20}",
            fields in proptest::collection::vec(proptest::option::of("[a-z\"\\\\\n]{0,6}"), 5),
            thought in any::<bool>(),
            extra in any::<bool>(),
        ) {
            let mut ev = OutputEvent::new(if thought { SessionUpdate::thought(s.clone()) } else { SessionUpdate::message(s.clone()) });
            ev.session_id = fields[0].clone();
            ev.timestamp = fields[1].clone();
            ev.model = fields[2].clone();
            ev.message_id = fields[3].clone();
            ev.parent_tool_call_id = fields[4].clone();
            if extra {
                ev.extra = Some([("k".to_string(), serde_json::json!([1, "x"]))].into_iter().collect());
            }
            for item in [
                StreamItem::Stdout(s.clone()),
                StreamItem::Stderr(s.clone()),
                StreamItem::Content(ev.clone()),
                StreamItem::Content(OutputEvent::new(SessionUpdate::user_message(s.clone()))),
            ] {
                prop_assert_eq!(item_weight(&item), item.event_json().len());
            }
        }
    }
}
