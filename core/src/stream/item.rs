//! [`StreamItem`]: what a run delivers, on one of the four channels.

use serde::Serialize;
use serde_json::Value;

use crate::channel::Channel;
use crate::event::OutputEvent;
use crate::lifecycle::LifecycleEvent;

/// One item of a run's stream, on one of the four channels (decisions.md §1).
// Not boxed: content items are the common case, so a box would add one allocation per item
// to save space only on raw lines; a buffer holds few items (merging keeps it short).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// A parsed ACP-style event (the `content` channel).
    Content(OutputEvent),
    /// A sandbox/agent state transition (the `lifecycle` channel). The run's terminal item is
    /// one of these, produced by [`RunStream::finish`](super::RunStream::finish) only.
    Lifecycle(LifecycleEvent),
    /// One raw stdout line as the harness printed it, with its `"\n"` (the `stdout` channel).
    Stdout(String),
    /// Raw stderr text as received, not split into lines (the `stderr` channel).
    Stderr(String),
}

impl StreamItem {
    /// The channel it travels on.
    pub fn channel(&self) -> Channel {
        match self {
            StreamItem::Content(_) => Channel::Content,
            StreamItem::Lifecycle(_) => Channel::Lifecycle,
            StreamItem::Stdout(_) => Channel::Stdout,
            StreamItem::Stderr(_) => Channel::Stderr,
        }
    }

    /// True for a lifecycle item whose reason ends a run or command (`run_complete`, …).
    pub fn is_terminal(&self) -> bool {
        matches!(self, StreamItem::Lifecycle(ev) if ev.reason.is_terminal())
    }

    /// The content event, if this is one.
    pub fn as_content(&self) -> Option<&OutputEvent> {
        match self {
            StreamItem::Content(ev) => Some(ev),
            _ => None,
        }
    }

    /// The lifecycle event, if this is one.
    pub fn as_lifecycle(&self) -> Option<&LifecycleEvent> {
        match self {
            StreamItem::Lifecycle(ev) => Some(ev),
            _ => None,
        }
    }

    /// The raw text of a stdout or stderr item.
    pub fn as_raw_text(&self) -> Option<&str> {
        match self {
            StreamItem::Stdout(s) | StreamItem::Stderr(s) => Some(s),
            _ => None,
        }
    }

    /// A serializable view of the payload alone: the envelope's `event` member (an
    /// `OutputEvent` object, a `LifecycleEvent` object, or a string).
    pub fn event(&self) -> EventRef<'_> {
        EventRef(self)
    }

    /// The payload as compact JSON (the envelope's `event` member).
    pub fn event_json(&self) -> String {
        serde_json::to_string(&self.event()).expect("stream items always serialize")
    }

    /// Rebuild an item from its channel and its `event` JSON value (strict: the value must have
    /// the channel's shape).
    pub fn from_event_value(channel: Channel, event: Value) -> Result<Self, serde_json::Error> {
        Ok(match channel {
            Channel::Content => StreamItem::Content(serde_json::from_value(event)?),
            Channel::Lifecycle => StreamItem::Lifecycle(serde_json::from_value(event)?),
            Channel::Stdout => StreamItem::Stdout(serde_json::from_value(event)?),
            Channel::Stderr => StreamItem::Stderr(serde_json::from_value(event)?),
        })
    }
}

impl From<OutputEvent> for StreamItem {
    fn from(ev: OutputEvent) -> Self {
        StreamItem::Content(ev)
    }
}

impl From<LifecycleEvent> for StreamItem {
    fn from(ev: LifecycleEvent) -> Self {
        StreamItem::Lifecycle(ev)
    }
}

/// The payload of a [`StreamItem`], serialized without its channel: what goes in an
/// envelope's `event` member.
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a>(&'a StreamItem);

impl Serialize for EventRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            StreamItem::Content(ev) => ev.serialize(s),
            StreamItem::Lifecycle(ev) => ev.serialize(s),
            StreamItem::Stdout(t) | StreamItem::Stderr(t) => s.serialize_str(t),
        }
    }
}
