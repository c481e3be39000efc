//! The one error type of the run stream.

use std::fmt;

use crate::channel::Channel;

/// What can go wrong configuring a run stream, attaching its reader or decoding an envelope.
///
/// Posting, popping, cancelling and finishing never fail: those are infallible by design (the
/// producer never blocks and never errors on the reader's account).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamError {
    /// A [`Backpressure`](super::Backpressure) field is out of range.
    InvalidBackpressure {
        /// The field name (`byte_budget`, `stall_seconds`).
        field: &'static str,
        /// The rejected value, printed.
        value: String,
        /// The rule it broke.
        rule: &'static str,
    },
    /// [`Backpressure::shared`](super::Backpressure::shared) or
    /// [`SharedBudget::new`](super::SharedBudget::new) was asked to divide across zero streams.
    NoStreams,
    /// A second reader tried to attach: a run has one reader and is never replayed.
    ReaderAlreadyAttached,
    /// A reader tried to attach after items were already numbered (and, with no reader,
    /// discarded): it would start in the middle of the run.
    ReaderAttachedLate {
        /// The next sequence number the run would hand out (items `0..next_sequence` are gone).
        next_sequence: u64,
    },
    /// The text is not an envelope at all: not JSON, or not an object
    /// ([`decode_envelope`](super::decode_envelope) only; a stream reader skips these).
    MalformedEnvelope(String),
    /// The envelope names a kind this version knows (a channel, and for content and lifecycle
    /// events their `sessionUpdate` / `reason`), but the envelope or its event does not parse as
    /// that kind's shape. A known kind is never decoded by guesswork.
    BadEvent {
        /// The channel named by the envelope.
        channel: Channel,
        /// The kind it saw: the `sessionUpdate` (content), the `reason` (lifecycle), or the
        /// channel's name (stdout, stderr).
        kind: String,
        /// What did not parse.
        message: String,
    },
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::InvalidBackpressure { field, value, rule } => {
                write!(f, "invalid backpressure: {field} = {value}: {rule}")
            }
            StreamError::NoStreams => f.write_str("a shared byte budget cannot be divided across 0 streams"),
            StreamError::ReaderAlreadyAttached => {
                f.write_str("the run stream already has its reader: a run has one reader and is never replayed")
            }
            StreamError::ReaderAttachedLate { next_sequence } => write!(
                f,
                "a reader must attach before the run numbers its first item ({next_sequence} item(s) were already \
                 numbered and discarded)"
            ),
            StreamError::MalformedEnvelope(m) => write!(f, "malformed stream envelope: {m}"),
            StreamError::BadEvent { channel, kind, message } if kind == channel.name() => {
                write!(f, "a {channel} stream envelope does not parse: {message}")
            }
            StreamError::BadEvent { channel, kind, message } => {
                write!(f, "a {channel} stream envelope of kind `{kind}` does not parse: {message}")
            }
        }
    }
}

impl std::error::Error for StreamError {}
