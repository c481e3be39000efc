//! The one error table of the API edge: every binding maps [`ErrorKind`] to its native error
//! (a Python exception subclass, a JS `Error` with `.code`, a C enum value, ...), so the names,
//! numeric codes and advice are the same in every language.
//!
//! Names are stable snake_case; codes are stable numbers in a private range (1000+) so they never
//! collide with errno or exit codes. Never renumber: add at the end.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of failure an API call reports.
///
/// The ONE error table of every language: C status codes (`AGENTSTREAM_STATUS_<NAME>` = the
/// code), Go error values (`errors.Is`), Python exception classes, JS `Error.code`, C#, Java and
/// Kotlin exceptions are all generated or mapped from [`ErrorKind::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The harness executable could not be found.
    HarnessNotFound,
    /// A run or command is already going on in this session.
    AlreadyRunning,
    /// The harness was found but could not be started.
    SpawnFailed,
    /// An argument is not valid (an unknown agent or channel name, a bad option value).
    InvalidArgument,
    /// The run was cancelled.
    Cancelled,
    /// The run went past its time limit.
    Timeout,
    /// Input went past a configured decode limit (a line longer than `max_line_bytes`).
    DecodeLimit,
    /// A bug in agentstream (an internal failure that is not a panic).
    Internal,
    /// Nothing is running (pause or resume without an active run).
    NotRunning,
    /// A required argument was missing (a NULL pointer at the C ABI).
    NullArgument,
    /// A handle that is not live: already closed or freed, or never returned by the library.
    InvalidHandle,
    /// The object is in use by a call that has not returned (a re-entrant call from inside one
    /// of its own callbacks, or two threads at once where one at a time is required).
    Busy,
    /// A caller's buffer was too small for the text (the text was truncated).
    BufferTooSmall,
    /// The run has not ended yet: its result exists only once its terminal event was delivered
    /// (or a wait ran out of time first).
    StillRunning,
    /// A Rust panic was caught at the API edge (a bug in agentstream).
    Panic,
    /// The harness cannot continue a previous session (it has no resume option), or the
    /// session to continue is unknown.
    CannotResume,
    /// Not available on this platform (e.g. running a harness where no process runner exists).
    Unsupported,
}

/// One row of the error table.
struct Row {
    kind: ErrorKind,
    name: &'static str,
    code: u32,
    advice: &'static str,
}

/// The error table: stable names and codes (never renumber: append), and the advice each
/// message ends with. Codes are in a private range (1000+) so they never collide with errno or
/// exit codes; 0 means success where a status is returned (the C ABI).
const TABLE: [Row; 17] = [
    Row {
        kind: ErrorKind::HarnessNotFound,
        name: "harness_not_found",
        code: 1001,
        advice: "install the harness CLI and put it on PATH, or set the config's `bin` to its path",
    },
    Row {
        kind: ErrorKind::AlreadyRunning,
        name: "already_running",
        code: 1002,
        advice: "wait for the current run to finish, or cancel it, before starting another",
    },
    Row {
        kind: ErrorKind::SpawnFailed,
        name: "spawn_failed",
        code: 1003,
        advice: "check that the harness binary is executable and the working directory exists",
    },
    Row {
        kind: ErrorKind::InvalidArgument,
        name: "invalid_argument",
        code: 1004,
        advice: "fix the argument named in the message",
    },
    Row {
        kind: ErrorKind::Cancelled,
        name: "cancelled",
        code: 1005,
        advice: "the run was stopped on request; start a new run to continue",
    },
    Row {
        kind: ErrorKind::Timeout,
        name: "timeout",
        code: 1006,
        advice: "raise the run's timeout, or give the agent a smaller task",
    },
    Row {
        kind: ErrorKind::DecodeLimit,
        name: "decode_limit",
        code: 1007,
        advice: "raise max_line_bytes, or let the decoder skip oversize lines",
    },
    Row {
        kind: ErrorKind::Internal,
        name: "internal",
        code: 1008,
        advice: "this is a bug in agentstream; please report it with the message",
    },
    Row { kind: ErrorKind::NotRunning, name: "not_running", code: 1009, advice: "start a run first" },
    Row {
        kind: ErrorKind::NullArgument,
        name: "null_argument",
        code: 1010,
        advice: "pass a value for the argument named in the message",
    },
    Row {
        kind: ErrorKind::InvalidHandle,
        name: "invalid_handle",
        code: 1011,
        advice: "use a handle the library returned and has not closed or freed",
    },
    Row {
        kind: ErrorKind::Busy,
        name: "busy",
        code: 1012,
        advice: "do not call the object from inside its own callbacks, or from two threads at once",
    },
    Row {
        kind: ErrorKind::BufferTooSmall,
        name: "buffer_too_small",
        code: 1013,
        advice: "call again with a larger buffer",
    },
    Row {
        kind: ErrorKind::StillRunning,
        name: "still_running",
        code: 1014,
        advice: "read the run's events to the end, or wait for it, before asking for its result",
    },
    Row {
        kind: ErrorKind::Panic,
        name: "panic",
        code: 1015,
        advice: "this is a bug in agentstream; please report it with the message, and discard the object involved",
    },
    Row {
        kind: ErrorKind::CannotResume,
        name: "cannot_resume",
        code: 1016,
        advice: "start a fresh session (no `resume`), or use a harness that can continue a session",
    },
    Row {
        kind: ErrorKind::Unsupported,
        name: "unsupported",
        code: 1017,
        advice: "use a platform where this is supported (running harnesses needs Linux or another Unix)",
    },
];

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 17] = [
        ErrorKind::HarnessNotFound,
        ErrorKind::AlreadyRunning,
        ErrorKind::SpawnFailed,
        ErrorKind::InvalidArgument,
        ErrorKind::Cancelled,
        ErrorKind::Timeout,
        ErrorKind::DecodeLimit,
        ErrorKind::Internal,
        ErrorKind::NotRunning,
        ErrorKind::NullArgument,
        ErrorKind::InvalidHandle,
        ErrorKind::Busy,
        ErrorKind::BufferTooSmall,
        ErrorKind::StillRunning,
        ErrorKind::Panic,
        ErrorKind::CannotResume,
        ErrorKind::Unsupported,
    ];

    fn row(self) -> &'static Row {
        // The table is in `ALL` order (a test checks it), so the discriminant is the index.
        &TABLE[self as usize]
    }

    /// The stable snake_case name (`harness_not_found`, ...).
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The stable numeric code (1001, 1002, ...).
    pub fn code(self) -> u32 {
        self.row().code
    }

    /// The kind with this name, if any.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        TABLE.iter().find(|r| r.name == name).map(|r| r.kind)
    }

    /// The kind with this code, if any.
    pub fn from_code(code: u32) -> Option<ErrorKind> {
        TABLE.iter().find(|r| r.code == code).map(|r| r.kind)
    }

    /// What the caller can do about it, in one sentence (appended to messages by [`Error`]).
    pub fn advice(self) -> &'static str {
        self.row().advice
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error at the API edge: a kind plus a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What happened (the advice of the kind is appended by `Display` unless already there).
    pub message: String,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }

    /// The message followed by the kind's advice: `<message>; <advice>`.
    pub fn message_with_advice(&self) -> String {
        let advice = self.kind.advice();
        if self.message.is_empty() {
            advice.to_string()
        } else if self.message.contains(advice) || self.kind == ErrorKind::InvalidArgument {
            // Invalid-argument messages already say what is valid (they list the names).
            self.message.clone()
        } else {
            format!("{}; {}", self.message, advice)
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message_with_advice())
    }
}

impl std::error::Error for Error {}

impl From<crate::decode::UnknownAgent> for Error {
    fn from(e: crate::decode::UnknownAgent) -> Self {
        Error::new(ErrorKind::InvalidArgument, e.to_string())
    }
}

impl From<crate::channel::UnknownChannel> for Error {
    fn from(e: crate::channel::UnknownChannel) -> Self {
        Error::new(ErrorKind::InvalidArgument, e.to_string())
    }
}

/// The text a panic was raised with (`panic!("…")`'s message), when its payload is text: what
/// the core and every binding report when they catch a panic at their edge.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_are_unique_and_round_trip() {
        let mut codes = std::collections::HashSet::new();
        for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(TABLE[i].kind, k, "TABLE and ALL are in the same order");
            assert_eq!(k as usize, i, "ALL is in declaration order");
            assert_eq!(ErrorKind::from_code(k.code()), Some(k));
            assert!(codes.insert(k.code()), "duplicate code {}", k.code());
            assert_eq!(ErrorKind::from_name(k.name()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::json!(k.name()));
            assert!(!k.advice().is_empty());
        }
        assert_eq!(ErrorKind::from_name("nope"), None);
    }

    #[test]
    fn messages_say_what_to_do() {
        let e = Error::new(ErrorKind::Timeout, "the run took longer than 5s");
        assert_eq!(e.to_string(), format!("the run took longer than 5s; {}", ErrorKind::Timeout.advice()));
        let e: Error = "nope".parse::<crate::Agent>().unwrap_err().into();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("claude"), "{e}");
        let e: Error = "nope".parse::<crate::Channel>().unwrap_err().into();
        assert!(e.to_string().contains("lifecycle"), "{e}");
    }

    #[test]
    fn a_panics_text_is_read_from_either_payload() {
        let literal = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_text(literal.as_ref()), Some("plain"));
        let formatted = std::panic::catch_unwind(|| panic!("formatted {}", 7)).unwrap_err();
        assert_eq!(panic_text(formatted.as_ref()), Some("formatted 7"));
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_text(other.as_ref()), None);
    }
}
