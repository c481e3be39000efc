//! [`Envelope`]: a numbered item, and its wire form.
//!
//! ```json
//! {"runId": "run_…", "sequence": 7, "channel": "content", "event": {…}, "coalesced": 3}
//! ```
//!
//! camelCase keys in this order; `event` is an `OutputEvent` object (content), a
//! `LifecycleEvent` object (lifecycle) or a string (stdout, stderr); `coalesced` is ABSENT
//! when 0. This is what `agentstream run --json` prints, one envelope per line, and what every
//! binding receives. For reading envelopes written by another version use
//! [`decode_envelope`](super::decode_envelope), which skips what it does not know; the
//! `Deserialize` impl here is strict.

use std::sync::Arc;

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::item::StreamItem;
use crate::channel::Channel;

/// One numbered item of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The run it belongs to.
    pub run_id: Arc<str>,
    /// Its position in the run: one gapless sequence from 0 across all four channels.
    pub sequence: u64,
    /// How many later deltas were merged into this one under backpressure (their numbers are
    /// `sequence + 1 ..= sequence + coalesced`, consumed and delivered inside this envelope).
    pub coalesced: u64,
    /// The item.
    pub item: StreamItem,
}

impl Envelope {
    /// An envelope with `coalesced = 0`.
    pub fn new(run_id: impl Into<Arc<str>>, sequence: u64, item: StreamItem) -> Self {
        Envelope { run_id: run_id.into(), sequence, coalesced: 0, item }
    }

    /// The channel of the item.
    pub fn channel(&self) -> Channel {
        self.item.channel()
    }

    /// True for the run's terminal lifecycle item.
    pub fn is_terminal(&self) -> bool {
        self.item.is_terminal()
    }

    /// The last sequence number this envelope accounts for: `sequence + coalesced`.
    pub fn last_covered(&self) -> u64 {
        self.sequence + self.coalesced
    }

    /// The wire form as compact JSON (one line).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("envelopes always serialize")
    }
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(if self.coalesced > 0 { 5 } else { 4 }))?;
        m.serialize_entry("runId", &*self.run_id)?;
        m.serialize_entry("sequence", &self.sequence)?;
        m.serialize_entry("channel", self.channel().name())?;
        m.serialize_entry("event", &self.item.event())?;
        if self.coalesced > 0 {
            m.serialize_entry("coalesced", &self.coalesced)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            run_id: String,
            sequence: u64,
            channel: Channel,
            event: Value,
            #[serde(default)]
            coalesced: u64,
        }
        let w = Wire::deserialize(d)?;
        let item = StreamItem::from_event_value(w.channel, w.event)
            .map_err(|e| D::Error::custom(format!("the {} event does not parse: {e}", w.channel)))?;
        Ok(Envelope { run_id: w.run_id.into(), sequence: w.sequence, coalesced: w.coalesced, item })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{OutputEvent, SessionUpdate};
    use crate::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};

    #[test]
    fn exact_wire_form_per_channel() {
        let mut e = Envelope::new("r1", 7, StreamItem::Content(OutputEvent::new(SessionUpdate::message("hi"))));
        assert_eq!(
            e.to_json(),
            r#"{"runId":"r1","sequence":7,"channel":"content","event":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#
        );
        e.coalesced = 3;
        assert!(e.to_json().ends_with(r#"}},"coalesced":3}"#));
        assert_eq!(e.last_covered(), 10);

        let out = Envelope::new("r1", 0, StreamItem::Stdout("{\"a\":1}\n".into()));
        assert_eq!(out.to_json(), r#"{"runId":"r1","sequence":0,"channel":"stdout","event":"{\"a\":1}\n"}"#);
        let err = Envelope::new("r1", 1, StreamItem::Stderr("oops".into()));
        assert_eq!(err.to_json(), r#"{"runId":"r1","sequence":1,"channel":"stderr","event":"oops"}"#);

        let lc = Envelope::new(
            "r1",
            2,
            StreamItem::Lifecycle(LifecycleEvent {
                sandbox_id: None,
                sandbox: SandboxState::Ready,
                agent: AgentState::Idle,
                timestamp: "2026-12-02T00:00:00.000Z".into(),
                browser: None,
                reason: LifecycleReason::RunComplete,
            }),
        );
        assert_eq!(
            lc.to_json(),
            r#"{"runId":"r1","sequence":2,"channel":"lifecycle","event":{"sandbox_id":null,"sandbox":"ready","agent":"idle","timestamp":"2026-12-02T00:00:00.000Z","reason":"run_complete"}}"#
        );
        assert!(lc.is_terminal());

        for env in [e, out, err, lc] {
            let back: Envelope = serde_json::from_str(&env.to_json()).unwrap();
            assert_eq!(back, env);
        }
    }

    #[test]
    fn strict_deserialize_rejects_unknown_channels() {
        let r = serde_json::from_str::<Envelope>(r#"{"runId":"r","sequence":0,"channel":"video","event":"x"}"#);
        assert!(r.is_err());
        let r = serde_json::from_str::<Envelope>(r#"{"runId":"r","sequence":0,"channel":"stdout","event":{}}"#);
        assert!(r.unwrap_err().to_string().contains("stdout"));
    }
}
