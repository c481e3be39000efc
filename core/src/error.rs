//! The one error table of the API edge: every binding maps [`ErrorKind`] to its native error
//! (a Python exception subclass, a JS `Error` with `.code`, a C enum value, ...), so the names,
//! numeric codes and advice are the same in every language.
//!
//! Names are stable snake_case; codes are stable numbers in a private range (1000+) so they never
//! collide with errno or exit codes. Never renumber: add at the end.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of failure an API call reports.
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
    /// A bug in agentstream (a Rust panic caught at the boundary).
    Internal,
    /// Nothing is running (pause, resume or interrupt without an active run).
    NotRunning,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::HarnessNotFound,
        ErrorKind::AlreadyRunning,
        ErrorKind::SpawnFailed,
        ErrorKind::InvalidArgument,
        ErrorKind::Cancelled,
        ErrorKind::Timeout,
        ErrorKind::DecodeLimit,
        ErrorKind::Internal,
        ErrorKind::NotRunning,
    ];

    /// The stable snake_case name (`harness_not_found`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::HarnessNotFound => "harness_not_found",
            ErrorKind::AlreadyRunning => "already_running",
            ErrorKind::SpawnFailed => "spawn_failed",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Timeout => "timeout",
            ErrorKind::DecodeLimit => "decode_limit",
            ErrorKind::Internal => "internal",
            ErrorKind::NotRunning => "not_running",
        }
    }

    /// The stable numeric code (1001, 1002, ...).
    pub fn code(self) -> u32 {
        match self {
            ErrorKind::HarnessNotFound => 1001,
            ErrorKind::AlreadyRunning => 1002,
            ErrorKind::SpawnFailed => 1003,
            ErrorKind::InvalidArgument => 1004,
            ErrorKind::Cancelled => 1005,
            ErrorKind::Timeout => 1006,
            ErrorKind::DecodeLimit => 1007,
            ErrorKind::Internal => 1008,
            ErrorKind::NotRunning => 1009,
        }
    }

    /// The kind with this name, if any.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the caller can do about it, in one sentence (appended to messages by [`Error`]).
    pub fn advice(self) -> &'static str {
        match self {
            ErrorKind::HarnessNotFound => {
                "install the harness CLI and put it on PATH, or set the config's `bin` to its path"
            }
            ErrorKind::AlreadyRunning => "wait for the current run to finish, or cancel it, before starting another",
            ErrorKind::SpawnFailed => "check that the harness binary is executable and the working directory exists",
            ErrorKind::InvalidArgument => "fix the argument named in the message",
            ErrorKind::Cancelled => "the run was stopped on request; start a new run to continue",
            ErrorKind::Timeout => "raise the run's timeout, or give the agent a smaller task",
            ErrorKind::DecodeLimit => "raise max_line_bytes, or let the decoder skip oversize lines",
            ErrorKind::Internal => "this is a bug in agentstream; please report it with the message",
            ErrorKind::NotRunning => "start a run first",
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_are_unique_and_round_trip() {
        let mut codes = std::collections::HashSet::new();
        for k in ErrorKind::ALL {
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
}
