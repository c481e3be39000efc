//! Version tolerance: reading envelopes a newer (or older) agentstream wrote.
//!
//! Adding a channel, a `sessionUpdate` kind or a lifecycle `reason` is a minor release: an
//! older reader skips what it has never heard of rather than falling over. Every line is one
//! of three things:
//!
//! | line | what the reader does |
//! |---|---|
//! | an envelope of a kind this version knows, that parses | the [`Envelope`] |
//! | not an event: not JSON, not an object, no kind (no `channel`; a `sequence`-only object such as a keep-alive; a content event without `update.sessionUpdate`, a lifecycle event without `reason`), a kind of the wrong JSON type (`"channel": 7`, `"sessionUpdate": null`), or a kind this version does not know | skipped and counted ([`Skip`], [`EnvelopeStats`]); the stream goes on |
//! | a kind this version knows whose envelope or event does not parse | rejected: [`StreamError::BadEvent`] naming the channel and the kind it saw (`content` `agent_message_chunk`, `lifecycle` `run_complete`, `stdout`), and what is wrong; the stream goes on with the next line |
//!
//! A known kind is never decoded by guesswork: a delta read wrongly renders as an answer nobody
//! wrote. Unknown extra fields, on the envelope or inside a known event, are ignored. Removing
//! or renaming a kind or a field is breaking.
//!
//! [`decode_envelope`] reads one line; [`EnvelopeReader`] reads a stream of them (any
//! chunking), counting what it skipped and rejected.

use serde_json::Value;

use super::envelope::Envelope;
use super::error::StreamError;
use super::item::StreamItem;
use crate::channel::Channel;
use crate::framing::{DEFAULT_MAX_LINE_BYTES, Frame, LineFramer};
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

/// Why a line is not an event (it is skipped, counted, and the stream goes on).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// Empty or whitespace only.
    Blank,
    /// Not JSON (or a line over the reader's length limit).
    NotJson,
    /// JSON, but not an object.
    NotAnObject,
    /// An object that names no kind: no `channel` (e.g. a `sequence`-only keep-alive), or a
    /// content event without `update.sessionUpdate`, a lifecycle event without `reason`.
    NoKind,
    /// The kind is there but not a string (`"channel": 7`, `"sessionUpdate": null`).
    KindNotAString,
    /// A kind this version does not know (a newer channel, update kind or lifecycle reason).
    UnknownKind(String),
}

/// One line of an envelope stream, read.
// A line is read once and its envelope moved out at once: boxing it would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EnvelopeLine {
    /// An envelope of a known kind.
    Event(Envelope),
    /// Not an event.
    Skipped(Skip),
}

/// Read one line of an envelope stream (see the module table). `Err` only for a known kind
/// whose envelope or event does not parse ([`StreamError::BadEvent`], naming the kind).
pub fn read_envelope_line(text: &str) -> Result<EnvelopeLine, StreamError> {
    if crate::decode::is_blank(text) {
        return Ok(EnvelopeLine::Skipped(Skip::Blank));
    }
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Ok(EnvelopeLine::Skipped(Skip::NotJson));
    };
    let Value::Object(mut envelope) = value else {
        return Ok(EnvelopeLine::Skipped(Skip::NotAnObject));
    };
    let channel = match kind_of(envelope.get("channel")) {
        Ok(name) => match name.parse::<Channel>() {
            Ok(channel) => channel,
            Err(_) => return Ok(EnvelopeLine::Skipped(Skip::UnknownKind(name.to_string()))),
        },
        Err(skip) => return Ok(EnvelopeLine::Skipped(skip)),
    };
    let event = envelope.remove("event");
    let kind = match channel {
        Channel::Content => {
            let update = event.as_ref().and_then(|e| e.get("update")).filter(|u| u.is_object());
            match kind_of(update.and_then(|u| u.get("sessionUpdate"))) {
                Ok(k) if KNOWN_SESSION_UPDATES.contains(&k) => k.to_string(),
                Ok(k) => return Ok(EnvelopeLine::Skipped(Skip::UnknownKind(k.to_string()))),
                Err(skip) => return Ok(EnvelopeLine::Skipped(skip)),
            }
        }
        Channel::Lifecycle => {
            let reason = event.as_ref().filter(|e| e.is_object()).and_then(|e| e.get("reason"));
            match kind_of(reason) {
                Ok(r) if known_reason(r) => r.to_string(),
                Ok(r) => return Ok(EnvelopeLine::Skipped(Skip::UnknownKind(r.to_string()))),
                Err(skip) => return Ok(EnvelopeLine::Skipped(skip)),
            }
        }
        Channel::Stdout | Channel::Stderr => channel.name().to_string(),
    };
    let bad = |message: String| StreamError::BadEvent { channel, kind: kind.clone(), message };
    let run_id = match envelope.remove("runId") {
        Some(Value::String(id)) => id,
        Some(other) => return Err(bad(format!("`runId` must be a string, not {}", json_type(&other)))),
        None => return Err(bad("`runId` is missing".to_string())),
    };
    let sequence = match envelope.get("sequence") {
        Some(v) => v.as_u64().ok_or_else(|| bad(format!("`sequence` must be a non-negative integer, not {v}")))?,
        None => return Err(bad("`sequence` is missing".to_string())),
    };
    let coalesced = match envelope.get("coalesced") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| bad(format!("`coalesced` must be a non-negative integer, not {v}")))?,
    };
    let event = event.ok_or_else(|| bad("`event` is missing".to_string()))?;
    let item = StreamItem::from_event_value(channel, event).map_err(|e| bad(e.to_string()))?;
    Ok(EnvelopeLine::Event(Envelope { run_id: run_id.into(), sequence, coalesced, item }))
}

/// Decode one envelope line, tolerating what this version does not know.
///
/// * Not JSON, or not an object → [`StreamError::MalformedEnvelope`] (a stream reader skips and
///   counts these: [`EnvelopeReader`]).
/// * Any other line that is not an event (no kind, a kind of the wrong JSON type, a kind this
///   version does not know: see the module table) → `Ok(None)` (skip it).
/// * A known kind whose envelope or event does not parse → [`StreamError::BadEvent`] naming the
///   channel and the kind.
/// * Unknown extra fields anywhere → ignored.
pub fn decode_envelope(json: &str) -> Result<Option<Envelope>, StreamError> {
    match read_envelope_line(json)? {
        EnvelopeLine::Event(envelope) => Ok(Some(envelope)),
        EnvelopeLine::Skipped(Skip::Blank | Skip::NotJson) => {
            Err(StreamError::MalformedEnvelope("the line is not JSON".to_string()))
        }
        EnvelopeLine::Skipped(Skip::NotAnObject) => {
            Err(StreamError::MalformedEnvelope("the line is JSON but not an object".to_string()))
        }
        EnvelopeLine::Skipped(_) => Ok(None),
    }
}

/// A kind member: its string, or why the line has none.
fn kind_of(value: Option<&Value>) -> Result<&str, Skip> {
    match value {
        None => Err(Skip::NoKind),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Skip::KindNotAString),
    }
}

fn known_reason(reason: &str) -> bool {
    serde_json::from_value::<LifecycleReason>(Value::String(reason.to_string())).is_ok()
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What an [`EnvelopeReader`] has read so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnvelopeStats {
    /// Lines read (blank ones included).
    pub lines: u64,
    /// Envelopes returned.
    pub events: u64,
    /// Lines that were not events (blank lines not included), skipped.
    pub skipped: u64,
    /// Lines of a known kind that did not parse, returned as errors.
    pub rejected: u64,
}

/// Reads a stream of envelope lines (e.g. the output of `agentstream run --json`), at any
/// chunking: each line becomes an [`Envelope`], is skipped and counted (not an event), or is
/// returned as an error naming the kind it saw (a known kind that does not parse). Nothing ends
/// the stream early: the line after a bad one is read as usual.
#[derive(Debug)]
pub struct EnvelopeReader {
    framer: LineFramer,
    tally: Tally,
}

/// What the reader has seen, kept apart from the framer so a framed line can be read while the
/// framer still holds the chunk.
#[derive(Debug, Default)]
struct Tally {
    stats: EnvelopeStats,
    /// Why each skipped line was skipped, in order.
    skips: Vec<Skip>,
}

impl Tally {
    fn read_line(&mut self, line: &str) -> Option<Result<Envelope, StreamError>> {
        self.stats.lines += 1;
        match read_envelope_line(line) {
            Ok(EnvelopeLine::Event(envelope)) => {
                self.stats.events += 1;
                Some(Ok(envelope))
            }
            Ok(EnvelopeLine::Skipped(Skip::Blank)) => None,
            Ok(EnvelopeLine::Skipped(skip)) => {
                self.stats.skipped += 1;
                self.skips.push(skip);
                None
            }
            Err(e) => {
                self.stats.rejected += 1;
                Some(Err(e))
            }
        }
    }

    fn frame(&mut self, frame: Frame<'_>, out: &mut Vec<Result<Envelope, StreamError>>) {
        match frame.text() {
            Some(text) => out.extend(self.read_line(&text)),
            // Over the length limit: not an event this reader can read.
            None => {
                self.stats.lines += 1;
                self.stats.skipped += 1;
                self.skips.push(Skip::NotJson);
            }
        }
    }
}

impl Default for EnvelopeReader {
    fn default() -> Self {
        Self::new()
    }
}

impl EnvelopeReader {
    /// A reader with the default line limit (16 MiB; a longer line is skipped as not JSON).
    pub fn new() -> Self {
        EnvelopeReader { framer: LineFramer::new(DEFAULT_MAX_LINE_BYTES), tally: Tally::default() }
    }

    /// Counts so far.
    pub fn stats(&self) -> EnvelopeStats {
        self.tally.stats
    }

    /// Why each skipped line was skipped, in order (blank lines not included).
    pub fn skipped(&self) -> &[Skip] {
        &self.tally.skips
    }

    /// Read one complete line (without its line ending): `None` when it is not an event.
    pub fn read_line(&mut self, line: &str) -> Option<Result<Envelope, StreamError>> {
        self.tally.read_line(line)
    }

    /// Feed bytes; returns what the lines they complete hold, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Result<Envelope, StreamError>> {
        let mut out = Vec::new();
        let EnvelopeReader { framer, tally } = self;
        framer.push(bytes, &mut |frame| tally.frame(frame, &mut out));
        out
    }

    /// End of input: a last line without a newline is read too.
    pub fn finish(&mut self) -> Vec<Result<Envelope, StreamError>> {
        let mut out = Vec::new();
        let EnvelopeReader { framer, tally } = self;
        framer.finish(&mut |frame| tally.frame(frame, &mut out));
        out
    }
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

    /// Lines that are not events: skipped, whatever else they hold.
    const NOT_EVENTS: [(&str, Skip); 11] = [
        (r#"{"runId":"r","sequence":0,"channel":"video","event":{"frame":1}}"#, Skip::UnknownKind(String::new())),
        (
            r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":"audio_chunk","x":1}}}"#,
            Skip::UnknownKind(String::new()),
        ),
        (
            r#"{"runId":"r","sequence":0,"channel":"lifecycle","event":{"reason":"sandbox_teleported"}}"#,
            Skip::UnknownKind(String::new()),
        ),
        (r#"{"sequence":4}"#, Skip::NoKind),
        (r#"{"runId":"r","sequence":4}"#, Skip::NoKind),
        (r#"{"runId":"r","sequence":0,"channel":"content","event":"text"}"#, Skip::NoKind),
        (r#"{"runId":"r","sequence":0,"channel":"lifecycle","event":{"sandbox":"ready"}}"#, Skip::NoKind),
        (r#"{"runId":"r","sequence":0,"channel":7,"event":"x"}"#, Skip::KindNotAString),
        (r#"{"runId":"r","sequence":0,"channel":null,"event":"x"}"#, Skip::KindNotAString),
        (
            r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":42}}}"#,
            Skip::KindNotAString,
        ),
        (
            r#"{"runId":"r","sequence":0,"channel":"lifecycle","event":{"reason":["run_complete"]}}"#,
            Skip::KindNotAString,
        ),
    ];

    #[test]
    fn what_is_not_an_event_is_skipped() {
        for (line, want) in NOT_EVENTS {
            assert_eq!(decode_envelope(line).unwrap(), None, "{line}");
            let got = match read_envelope_line(line).unwrap() {
                EnvelopeLine::Skipped(Skip::UnknownKind(_)) => Skip::UnknownKind(String::new()),
                EnvelopeLine::Skipped(skip) => skip,
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(got, want, "{line}");
        }
        for s in ["not json", "[1]", "42"] {
            assert!(matches!(decode_envelope(s), Err(StreamError::MalformedEnvelope(_))), "{s}");
        }
    }

    #[test]
    fn a_known_kind_that_does_not_parse_is_an_error_naming_the_kind() {
        let bad = [
            (
                r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":"agent_message_chunk"}}}"#,
                "content",
                "agent_message_chunk",
            ),
            (
                r#"{"runId":"r","sequence":0,"channel":"content","event":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"audio"}}}}"#,
                "content",
                "agent_message_chunk",
            ),
            (
                r#"{"runId":"r","sequence":0,"channel":"lifecycle","event":{"reason":"run_complete"}}"#,
                "lifecycle",
                "run_complete",
            ),
            (r#"{"runId":"r","sequence":0,"channel":"stdout","event":42}"#, "stdout", "stdout"),
            (r#"{"runId":"r","sequence":0,"channel":"stderr","event":null}"#, "stderr", "stderr"),
            (r#"{"runId":"r","channel":"stdout","event":"x"}"#, "stdout", "stdout"),
            (r#"{"runId":"r","sequence":"third","channel":"stdout","event":"x"}"#, "stdout", "stdout"),
            (r#"{"runId":5,"sequence":1,"channel":"stdout","event":"x"}"#, "stdout", "stdout"),
            (r#"{"runId":"r","sequence":1,"channel":"stdout"}"#, "stdout", "stdout"),
            (
                r#"{"sequence":1,"channel":"content","event":{"update":{"sessionUpdate":"plan","entries":[]}}}"#,
                "content",
                "plan",
            ),
        ];
        for (s, ch, kind) in bad {
            let e = decode_envelope(s).unwrap_err();
            assert!(
                matches!(&e, StreamError::BadEvent { channel, kind: k, .. } if channel.name() == ch && k == kind),
                "{s}: {e:?}"
            );
            let text = e.to_string();
            assert!(text.contains(ch) && text.contains(kind), "{s}: {text}");
        }
        let e = decode_envelope(r#"{"runId":"r","sequence":"third","channel":"stdout","event":"x"}"#).unwrap_err();
        assert!(e.to_string().contains("`sequence` must be a non-negative integer"), "{e}");
    }

    #[test]
    fn the_reader_counts_what_it_skips_and_never_stops_early() {
        let good = |n: u64| Envelope::new("r", n, StreamItem::Stdout(format!("line {n}\n")));
        let mut text = String::new();
        text.push_str(&good(0).to_json());
        text.push('\n');
        for (line, _) in NOT_EVENTS {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("garbage\n\n[1,2]\n");
        text.push_str(r#"{"runId":"r","sequence":1,"channel":"stdout","event":42}"#);
        text.push('\n');
        text.push_str(&good(2).to_json()); // no final newline
        for chunk in [text.len(), 1, 7] {
            let mut reader = EnvelopeReader::new();
            let mut got = Vec::new();
            for piece in text.as_bytes().chunks(chunk) {
                got.extend(reader.feed(piece));
            }
            got.extend(reader.finish());
            let ok: Vec<_> = got.iter().filter_map(|r| r.as_ref().ok()).cloned().collect();
            assert_eq!(ok, [good(0), good(2)], "chunks of {chunk}");
            let errors: Vec<_> = got.iter().filter_map(|r| r.as_ref().err()).collect();
            assert_eq!(errors.len(), 1);
            assert!(errors[0].to_string().contains("stdout"), "{}", errors[0]);
            let stats = reader.stats();
            assert_eq!(stats, EnvelopeStats { lines: 17, events: 2, skipped: 13, rejected: 1 });
            assert_eq!(reader.skipped().iter().filter(|s| matches!(s, Skip::NotJson | Skip::NotAnObject)).count(), 2);
        }
    }
}
