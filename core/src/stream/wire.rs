//! Version tolerance: reading envelopes a newer (or older) agentstream wrote.
//!
//! Adding a channel, a `sessionUpdate` kind or a lifecycle `reason` is a minor release: an
//! older reader skips what it has never heard of ([`decode_envelope`] returns `Ok(None)`)
//! rather than falling over. A kind it DOES know that does not parse is an error naming the
//! channel — a delta decoded by guesswork renders as an answer nobody wrote. Unknown extra
//! fields, on the envelope or inside a known event, are ignored. Removing or renaming a kind
//! or a field is breaking.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::envelope::Envelope;
use super::error::StreamError;
use super::item::StreamItem;
use crate::channel::Channel;
use crate::lifecycle::LifecycleReason;

/// The `sessionUpdate` kinds this version knows.
pub const KNOWN_SESSION_UPDATES: [&str; 8] = [
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "error",
    "usage",
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    run_id: String,
    sequence: u64,
    channel: String,
    #[serde(borrow)]
    event: &'a RawValue,
    #[serde(default)]
    coalesced: u64,
}

/// Decode one envelope line, tolerating what this version does not know.
///
/// * Not JSON, not an object, or `runId` / `sequence` / `channel` / `event` missing or mistyped
///   → [`StreamError::MalformedEnvelope`].
/// * A `channel` other than the four → `Ok(None)` (skip it).
/// * `content` whose `update.sessionUpdate` is a string this version does not know, or
///   `lifecycle` whose `reason` is a string this version does not know → `Ok(None)`.
/// * A known channel (and kind) whose event does not parse → [`StreamError::BadEvent`] naming
///   the channel.
/// * Unknown extra fields anywhere → ignored.
pub fn decode_envelope(json: &str) -> Result<Option<Envelope>, StreamError> {
    let w: Wire<'_> = serde_json::from_str(json).map_err(|e| StreamError::MalformedEnvelope(e.to_string()))?;
    let Ok(channel) = w.channel.parse::<Channel>() else {
        return Ok(None);
    };
    let bad = |message: String| StreamError::BadEvent { channel, message };
    let event: Value = serde_json::from_str(w.event.get()).map_err(|e| bad(e.to_string()))?;
    match channel {
        Channel::Content => {
            let kind = event.get("update").and_then(|u| u.get("sessionUpdate")).and_then(Value::as_str);
            if kind.is_some_and(|k| !KNOWN_SESSION_UPDATES.contains(&k)) {
                return Ok(None);
            }
        }
        Channel::Lifecycle => {
            if let Some(reason) = event.get("reason").and_then(Value::as_str) {
                if serde_json::from_value::<LifecycleReason>(Value::String(reason.to_string())).is_err() {
                    return Ok(None);
                }
            }
        }
        Channel::Stdout | Channel::Stderr => {}
    }
    let item = StreamItem::from_event_value(channel, event).map_err(|e| bad(e.to_string()))?;
    Ok(Some(Envelope { run_id: w.run_id.into(), sequence: w.sequence, coalesced: w.coalesced, item }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{OutputEvent, SessionUpdate};

    #[test]
    fn known_kinds_list_matches_the_model() {
        use crate::event::*;
        let samples = [
            SessionUpdate::message("a"),
            SessionUpdate::thought("a"),
            SessionUpdate::user_message("a"),
            SessionUpdate::ToolCall(ToolCall {
                tool_call_id: "t".into(),
                title: "t".into(),
                tool_name: None,
                kind: ToolKind::Other,
                status: ToolCallStatus::Pending,
                raw_input: None,
                content: None,
                locations: None,
            }),
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new("t")),
            SessionUpdate::Plan { entries: vec![] },
            SessionUpdate::error("e", false),
            SessionUpdate::Usage { scope: UsageScope::Run, usage: TokenUsage::default() },
        ];
        let names: Vec<&str> = samples.iter().map(|s| s.kind_name()).collect();
        assert_eq!(names, KNOWN_SESSION_UPDATES);
    }

    #[test]
    fn round_trips_and_ignores_extra_fields() {
        let env = Envelope::new("r", 3, StreamItem::Content(OutputEvent::new(SessionUpdate::message("hi"))));
        assert_eq!(decode_envelope(&env.to_json()).unwrap(), Some(env.clone()));
        let extra = r#"{"runId":"r","sequence":3,"channel":"content","shard":9,
            "event":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"mood":1},"later":true}}"#;
        assert_eq!(decode_envelope(extra).unwrap(), Some(env));
    }

    #[test]
    fn unknown_is_skipped_known_bad_is_an_error() {
        let skip = [
            r#"{"runId":"r","sequence":0,"channel":"video","event":{"frame":1}}"#,
            r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":"audio_chunk","x":1}}}"#,
            r#"{"runId":"r","sequence":0,"channel":"lifecycle","event":{"reason":"sandbox_teleported"}}"#,
        ];
        for s in skip {
            assert_eq!(decode_envelope(s).unwrap(), None, "{s}");
        }
        let bad = [
            (
                r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":"agent_message_chunk"}}}"#,
                "content",
            ),
            (
                r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"audio"}}}}"#,
                "content",
            ),
            (r#"{"runId":"r","sequence":0,"channel":"content","event":"text"}"#, "content"),
            (r#"{"runId":"r","sequence":0,"channel":"lifecycle","event":{"reason":"run_complete"}}"#, "lifecycle"),
            (r#"{"runId":"r","sequence":0,"channel":"stdout","event":42}"#, "stdout"),
            (r#"{"runId":"r","sequence":0,"channel":"stderr","event":null}"#, "stderr"),
        ];
        for (s, ch) in bad {
            let e = decode_envelope(s).unwrap_err();
            assert!(matches!(&e, StreamError::BadEvent { channel, .. } if channel.name() == ch), "{s}: {e}");
            assert!(e.to_string().contains(ch));
        }
        for s in [
            "not json",
            "[1]",
            r#"{"runId":"r","channel":"stdout","event":"x"}"#,
            r#"{"runId":"r","sequence":"third","channel":"stdout","event":"x"}"#,
        ] {
            assert!(matches!(decode_envelope(s), Err(StreamError::MalformedEnvelope(_))), "{s}");
        }
    }
}
