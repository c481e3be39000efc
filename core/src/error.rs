//! The error kinds every binding maps to its own error types (decisions.md §7).
//!
//! One table, stable snake_case names: Python picks an exception class per kind, JavaScript sets
//! `err.code` to [`ErrorKind::code`] (`"INVALID_ARGUMENT"`), C returns a status, Go/C#/Java
//! carry the kind on their error type. The kinds are those of the runner's `RunError` plus
//! `invalid_argument` for bad input at the API edge (an unknown agent or channel name) and
//! `internal` for a bug (a caught panic).
//!
//! Decoding itself never fails (decisions.md §2): bad lines and over-long lines are counted
//! in `DecodeStats` and reported as diagnostics, not raised.

use std::any::Any;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::channel::UnknownChannel;
use crate::decode::UnknownAgent;

/// What went wrong, in categories stable across every language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A bad value from the caller: an unknown agent or channel name, an invalid option.
    InvalidArgument,
    /// The harness executable was not found.
    HarnessNotFound,
    /// The session already has a run in progress.
    AlreadyRunning,
    /// The harness process could not be started.
    SpawnFailed,
    /// The run was cancelled.
    Cancelled,
    /// The run exceeded its timeout.
    Timeout,
    /// A bug in agentstream (e.g. a caught panic). Please report it.
    Internal,
}

impl ErrorKind {
    /// Every kind, in documentation order.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::InvalidArgument,
        ErrorKind::HarnessNotFound,
        ErrorKind::AlreadyRunning,
        ErrorKind::SpawnFailed,
        ErrorKind::Cancelled,
        ErrorKind::Timeout,
        ErrorKind::Internal,
    ];

    /// The snake_case name, e.g. `invalid_argument` (the serde form).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::HarnessNotFound => "harness_not_found",
            ErrorKind::AlreadyRunning => "already_running",
            ErrorKind::SpawnFailed => "spawn_failed",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Internal => "internal",
        }
    }

    /// The SCREAMING_SNAKE_CASE code, e.g. `INVALID_ARGUMENT` (JavaScript's `err.code`, C's
    /// enum constant suffix).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::HarnessNotFound => "HARNESS_NOT_FOUND",
            ErrorKind::AlreadyRunning => "ALREADY_RUNNING",
            ErrorKind::SpawnFailed => "SPAWN_FAILED",
            ErrorKind::Cancelled => "CANCELLED",
            ErrorKind::Timeout => "TIMEOUT",
            ErrorKind::Internal => "INTERNAL",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ErrorKind {
    type Err = ();

    /// Accepts the name (`invalid_argument`) or the code (`INVALID_ARGUMENT`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == s || k.code() == s).ok_or(())
    }
}

/// An error at the API edge: a kind plus a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Error {
    /// The category.
    pub kind: ErrorKind,
    /// What happened, for people.
    pub message: String,
}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }

    /// An `invalid_argument` error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// The `internal` error for a caught panic, with the panic's message when it has one.
    pub fn from_panic(payload: &(dyn Any + Send)) -> Self {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_string());
        Error::new(ErrorKind::Internal, format!("internal error in agentstream (a bug, please report it): {what}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<UnknownAgent> for Error {
    fn from(e: UnknownAgent) -> Self {
        Error::invalid_argument(e.to_string())
    }
}

impl From<UnknownChannel> for Error {
    fn from(e: UnknownChannel) -> Self {
        Error::invalid_argument(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_codes_and_serde_agree() {
        for k in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(k.name().into()));
            assert_eq!(k.code(), k.name().to_ascii_uppercase());
            assert_eq!(k.name().parse::<ErrorKind>(), Ok(k));
            assert_eq!(k.code().parse::<ErrorKind>(), Ok(k));
        }
        assert!("nope".parse::<ErrorKind>().is_err());
    }

    #[test]
    fn edge_errors_map_to_invalid_argument_and_panics_to_internal() {
        let e: Error = "cursor".parse::<crate::Agent>().unwrap_err().into();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("claude"), "{e}");
        let e: Error = "message".parse::<crate::Channel>().unwrap_err().into();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("lifecycle"), "{e}");
        let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
        let e = Error::from_panic(payload.as_ref());
        assert_eq!(e.kind, ErrorKind::Internal);
        assert!(e.message.ends_with("boom 1"), "{e}");
    }
}
