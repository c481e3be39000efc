//! [`StreamItem`]: what a run delivers, on one of the four channels.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::channel::Channel;
use crate::event::OutputEvent;
use crate::lifecycle::LifecycleEvent;
use crate::redact::{RawStream, Redactor};

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

    /// Mask the raw text of a `stdout` or `stderr` item for outputs that leave the process to
    /// others (a server's streams, a shared page: [`Redactor::mask_raw_text`]); content and
    /// lifecycle items are left as they are (the core masked their tool inputs already).
    pub fn mask_raw(&mut self, redactor: &mut Redactor) {
        let (stream, text) = match self {
            StreamItem::Stdout(text) => (RawStream::Stdout, text),
            StreamItem::Stderr(text) => (RawStream::Stderr, text),
            _ => return,
        };
        if let Cow::Owned(masked) = redactor.mask_raw_stream_text(stream, text) {
            *text = masked;
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

/// A set of channels: the ones a reader reads (see
/// [`RunStream::set_reader_channels`](super::RunStream::set_reader_channels)).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChannelSet(u8);

impl ChannelSet {
    /// All four channels.
    pub const ALL: ChannelSet = ChannelSet(0b1111);
    /// No channel.
    pub const NONE: ChannelSet = ChannelSet(0);

    fn bit(channel: Channel) -> u8 {
        match channel {
            Channel::Content => 1,
            Channel::Lifecycle => 2,
            Channel::Stdout => 4,
            Channel::Stderr => 8,
        }
    }

    /// The set of `channels`.
    pub fn of(channels: impl IntoIterator<Item = Channel>) -> Self {
        channels.into_iter().fold(ChannelSet::NONE, ChannelSet::with)
    }

    /// This set and `channel`.
    pub fn with(self, channel: Channel) -> Self {
        ChannelSet(self.0 | Self::bit(channel))
    }

    /// This set without `channel`.
    pub fn without(self, channel: Channel) -> Self {
        ChannelSet(self.0 & !Self::bit(channel))
    }

    /// Whether `channel` is in the set.
    pub fn contains(self, channel: Channel) -> bool {
        self.0 & Self::bit(channel) != 0
    }

    /// Whether the set has no channel.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set as bits (content 1, lifecycle 2, stdout 4, stderr 8), e.g. for an atomic.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// The set of `bits` (see [`bits`](Self::bits); other bits are ignored).
    pub fn from_bits(bits: u8) -> Self {
        ChannelSet(bits & Self::ALL.0)
    }
}

impl Default for ChannelSet {
    fn default() -> Self {
        ChannelSet::ALL
    }
}

impl std::fmt::Debug for ChannelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(Channel::ALL.into_iter().filter(|c| self.contains(*c))).finish()
    }
}

/// What a producer hands [`RunStream::post_batch`](super::RunStream::post_batch).
// Not boxed, like StreamItem: an item is the common case and a box would cost an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Post {
    /// An item, posted as by [`RunStream::post`](super::RunStream::post).
    Item(StreamItem),
    /// A raw `stdout` or `stderr` item of a channel outside the reader's set, numbered without
    /// being built (it would be numbered and discarded anyway).
    UnreadRaw,
}

impl From<StreamItem> for Post {
    fn from(item: StreamItem) -> Self {
        Post::Item(item)
    }
}
