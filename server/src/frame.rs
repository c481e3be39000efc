//! What a subscriber receives: [`Frame`]s (one stream envelope each, serialized once for every
//! subscriber), [`Gap`] notices and [`Notice`]s about the backend.

use bytes::Bytes;
use serde::Serialize;

use agentstream_core::stream::Envelope;

/// One stream envelope in its wire form, with the facts the log needs to place it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The envelope's `sequence`: the SSE `id`, the resume point.
    pub sequence: u64,
    /// The last sequence number the envelope accounts for (`sequence + coalesced`).
    pub last_covered: u64,
    /// True for the run's terminal lifecycle envelope (always the last frame of a run).
    pub terminal: bool,
    /// The envelope as compact JSON (one line, no newline inside), exactly what
    /// `agentstream run --json` prints.
    pub json: Bytes,
    /// When the server received it from the run (Unix milliseconds): a replayed envelope keeps
    /// its original time, so a viewer that reconnects still measures durations right.
    pub received_ms: u64,
}

impl Frame {
    /// The frame of `envelope`, received at `received_ms`.
    pub fn of(envelope: &Envelope, received_ms: u64) -> Self {
        Frame {
            sequence: envelope.sequence,
            last_covered: envelope.last_covered(),
            terminal: envelope.is_terminal(),
            json: Bytes::from(envelope.to_json()),
            received_ms,
        }
    }

    /// What keeping this frame in a replay buffer costs, as the byte bounds count it: its JSON
    /// plus [`FRAME_BOOKKEEPING_BYTES`].
    pub fn kept_bytes(&self) -> usize {
        self.json.len() + FRAME_BOOKKEEPING_BYTES
    }
}

/// Bytes a replay buffer spends on each frame besides its JSON (the ring's slot, the shared
/// frame, the allocations' headers), counted by the byte bounds so that they bound memory, not
/// just JSON: without it a run of many small envelopes would hold several times its
/// `replay_bytes`.
pub const FRAME_BOOKKEEPING_BYTES: usize = 128;

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Why a subscriber is missing envelopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GapReason {
    /// The resume point is older than the run's replay buffer: the envelopes after it were
    /// evicted. The stream goes on from the oldest envelope kept.
    Evicted,
    /// The subscriber fell so far behind the run that the envelopes it had not read yet were
    /// evicted. The stream ends after this notice; reconnecting resumes from the oldest kept.
    TooSlow,
}

/// An explicit notice that envelopes are missing, never a silent hole. Wire form (SSE
/// `event: gap`, or a WebSocket text message):
///
/// ```json
/// {"type":"gap","runId":"run_…","reason":"evicted","after":41,"missing":120,"resumeFrom":162,
///  "message":"…"}
/// ```
///
/// `after` is absent for a subscription from the start; `resumeFrom` is the sequence of the next
/// envelope that will be delivered (absent when the stream ends with this notice). `missing`
/// counts the sequence numbers skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    /// Always `"gap"`: what tells this message from an envelope.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The run.
    pub run_id: String,
    /// Why.
    pub reason: GapReason,
    /// The sequence the subscriber had reached (absent: it had nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// How many sequence numbers it will not see.
    pub missing: u64,
    /// Where the stream goes on (absent when it ends here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<u64>,
    /// For people.
    pub message: String,
}

impl Gap {
    /// A gap for a subscriber at `after` whose next `missing` numbers were evicted.
    pub fn new(run_id: &str, reason: GapReason, after: Option<u64>, missing: u64, resume_from: Option<u64>) -> Self {
        let message = match reason {
            GapReason::Evicted => format!(
                "{missing} sequence number(s) after {} are older than the replay buffer and cannot be replayed",
                after.map_or_else(|| "the start".to_string(), |a| a.to_string())
            ),
            GapReason::TooSlow => format!(
                "this subscriber fell {missing} sequence number(s) behind the run and was dropped; \
                 reconnect to resume from the oldest envelope kept"
            ),
        };
        Gap { kind: "gap", run_id: run_id.to_string(), reason, after, missing, resume_from, message }
    }

    /// The wire form (compact JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("gaps serialize")
    }
}

/// What a [`Notice`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeReason {
    /// The connection to the cluster's messaging (NATS) is lost: the run goes on on its worker,
    /// but this stream is stalled until the connection returns.
    BackendUnavailable,
    /// The connection is back: the stream goes on where it stopped, nothing lost.
    BackendRestored,
}

/// A notice about the stream's delivery, not part of the run (no sequence number). Wire form
/// (SSE `event: notice`, or a WebSocket text message):
///
/// ```json
/// {"type":"notice","runId":"run_…","reason":"backend_unavailable","message":"…"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// Always `"notice"`: what tells this message from an envelope or a gap.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The run.
    pub run_id: String,
    /// What happened.
    pub reason: NoticeReason,
    /// For people.
    pub message: String,
}

impl Notice {
    /// A notice for `run_id`.
    pub fn new(run_id: &str, reason: NoticeReason) -> Self {
        let message = match reason {
            NoticeReason::BackendUnavailable => {
                "the server lost its connection to the cluster (NATS); the run goes on, and this stream resumes \
                 where it stopped when the connection returns"
            }
            NoticeReason::BackendRestored => "the connection to the cluster (NATS) is back; the stream goes on",
        };
        Notice { kind: "notice", run_id: run_id.to_string(), reason, message: message.to_string() }
    }

    /// The wire form (compact JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("notices serialize")
    }
}

/// One thing a subscription delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// The next envelope.
    Frame(std::sync::Arc<Frame>),
    /// Envelopes this subscriber will not get.
    Gap(Gap),
    /// Something about the delivery itself (e.g. the backend's connection lost or back).
    Notice(Notice),
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentstream_core::stream::StreamItem;

    #[test]
    fn a_frame_is_the_envelope_wire_form() {
        let mut env = Envelope::new("r", 4, StreamItem::Stdout("x\n".into()));
        env.coalesced = 2;
        let f = Frame::of(&env, 5);
        assert_eq!((f.sequence, f.last_covered, f.terminal), (4, 6, false));
        assert_eq!(&f.json[..], env.to_json().as_bytes());
        assert!(!f.json.contains(&b'\n'), "one line");
    }

    #[test]
    fn gap_wire_form() {
        let g = Gap::new("r", GapReason::Evicted, Some(3), 10, Some(14));
        let v: serde_json::Value = serde_json::from_str(&g.to_json()).unwrap();
        assert_eq!(v["type"], "gap");
        assert_eq!(v["reason"], "evicted");
        assert_eq!(v["after"], 3);
        assert_eq!(v["resumeFrom"], 14);
        assert!(v["message"].as_str().unwrap().contains("10 sequence"));
        let g = Gap::new("r", GapReason::TooSlow, None, 5, None);
        assert!(!g.to_json().contains("\"after\""));
    }
}
