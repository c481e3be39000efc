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
/// allocating.
pub fn item_weight(item: &StreamItem) -> usize {
    match item {
        StreamItem::Stdout(s) | StreamItem::Stderr(s) => escaped_len(s) + 2,
        other => json_len(&other.event()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{OutputEvent, SessionUpdate};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn escaped_len_matches_serde_json(s in "\\PC*|[\\x00-\\x7f]*") {
            prop_assert_eq!(escaped_len(&s) + 2, serde_json::to_string(&s).unwrap().len());
        }

        #[test]
        fn item_weight_is_the_event_json_length(s in "[\\x00-\\x7f]{0,40}|\\PC{0,20}") {
            for item in [
                StreamItem::Stdout(s.clone()),
                StreamItem::Stderr(s.clone()),
                StreamItem::Content(OutputEvent::new(SessionUpdate::message(s.clone()))),
            ] {
                prop_assert_eq!(item_weight(&item), item.event_json().len());
            }
        }
    }
}
