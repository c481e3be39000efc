//! The errors that cross the uniffi boundary: the core's one error table as one exception class
//! per kind ([`AgentstreamError`]), and what a foreign listener reports ([`ListenerError`]).

use agentstream_core::{Error, ErrorKind};

/// An error of agentstream: one variant per kind of the core's error table (the same stable
/// names and numeric codes in every language; Kotlin and Swift read the number from their
/// generated `ErrorTable`). The message says what happened and, where it helps, what to do.
#[derive(Debug, uniffi::Error)]
#[uniffi(flat_error)]
pub enum AgentstreamError {
    /// `harness_not_found` (1001): the harness executable could not be found.
    HarnessNotFound(String),
    /// `already_running` (1002): a run or command is already going on in this client.
    AlreadyRunning(String),
    /// `spawn_failed` (1003): the harness was found but could not be started.
    SpawnFailed(String),
    /// `invalid_argument` (1004): an argument is not valid (an unknown agent or channel
    /// name, a bad option value); the message names it in the caller's spelling.
    InvalidArgument(String),
    /// `cancelled` (1005): the run was cancelled.
    Cancelled(String),
    /// `timeout` (1006): the run went past its time limit.
    Timeout(String),
    /// `decode_limit` (1007): input went past a configured decode limit.
    DecodeLimit(String),
    /// `internal` (1008): a bug in agentstream (an internal failure that is not a panic).
    Internal(String),
    /// `not_running` (1009): nothing is running (pause or resume without an active run).
    NotRunning(String),
    /// `null_argument` (1010): a required argument was missing.
    NullArgument(String),
    /// `invalid_handle` (1011): a handle that is not live.
    InvalidHandle(String),
    /// `busy` (1012): the object is in use by a call that has not returned (a call from
    /// inside one of the run's own listeners that would wait for itself, or two readers at once).
    Busy(String),
    /// `buffer_too_small` (1013): a caller's buffer was too small.
    BufferTooSmall(String),
    /// `still_running` (1014): the run has not ended yet: its result exists only once its
    /// terminal event was delivered (or a wait ran out of time first).
    StillRunning(String),
    /// `panic` (1015): a Rust panic was caught at the API edge (a bug in agentstream).
    Panic(String),
    /// `cannot_resume` (1016): the harness cannot continue a previous session.
    CannotResume(String),
    /// `unsupported` (1017): not available on this platform.
    Unsupported(String),
}

impl std::fmt::Display for AgentstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for AgentstreamError {}

impl AgentstreamError {
    fn message(&self) -> &str {
        match self {
            AgentstreamError::HarnessNotFound(m)
            | AgentstreamError::AlreadyRunning(m)
            | AgentstreamError::SpawnFailed(m)
            | AgentstreamError::InvalidArgument(m)
            | AgentstreamError::Cancelled(m)
            | AgentstreamError::Timeout(m)
            | AgentstreamError::DecodeLimit(m)
            | AgentstreamError::Internal(m)
            | AgentstreamError::NotRunning(m)
            | AgentstreamError::NullArgument(m)
            | AgentstreamError::InvalidHandle(m)
            | AgentstreamError::Busy(m)
            | AgentstreamError::BufferTooSmall(m)
            | AgentstreamError::StillRunning(m)
            | AgentstreamError::Panic(m)
            | AgentstreamError::CannotResume(m)
            | AgentstreamError::Unsupported(m) => m,
        }
    }
}

impl From<Error> for AgentstreamError {
    fn from(e: Error) -> Self {
        let m = e.message_with_advice();
        // Exhaustive: a kind added to the core's table fails to compile here until it has its
        // exception class.
        match e.kind {
            ErrorKind::HarnessNotFound => AgentstreamError::HarnessNotFound(m),
            ErrorKind::AlreadyRunning => AgentstreamError::AlreadyRunning(m),
            ErrorKind::SpawnFailed => AgentstreamError::SpawnFailed(m),
            ErrorKind::InvalidArgument => AgentstreamError::InvalidArgument(m),
            ErrorKind::Cancelled => AgentstreamError::Cancelled(m),
            ErrorKind::Timeout => AgentstreamError::Timeout(m),
            ErrorKind::DecodeLimit => AgentstreamError::DecodeLimit(m),
            ErrorKind::Internal => AgentstreamError::Internal(m),
            ErrorKind::NotRunning => AgentstreamError::NotRunning(m),
            ErrorKind::NullArgument => AgentstreamError::NullArgument(m),
            ErrorKind::InvalidHandle => AgentstreamError::InvalidHandle(m),
            ErrorKind::Busy => AgentstreamError::Busy(m),
            ErrorKind::BufferTooSmall => AgentstreamError::BufferTooSmall(m),
            ErrorKind::StillRunning => AgentstreamError::StillRunning(m),
            ErrorKind::Panic => AgentstreamError::Panic(m),
            ErrorKind::CannotResume => AgentstreamError::CannotResume(m),
            ErrorKind::Unsupported => AgentstreamError::Unsupported(m),
        }
    }
}

/// An error of the core's kind `kind` with `message`.
pub(crate) fn error(kind: ErrorKind, message: impl Into<String>) -> AgentstreamError {
    Error::new(kind, message).into()
}

/// The result of every fallible export.
pub type Result<T, E = AgentstreamError> = std::result::Result<T, E>;

/// What a listener implemented in Kotlin or Swift reports when it fails. The run goes on: the
/// failure is counted in the result's `handler_errors`, and the first failure of each listener
/// is handed back to the caller to report (with the stack the binding put in `reason`).
///
/// Any other exception a listener throws arrives as `Failed` too (its text as the reason):
/// nothing a listener does can unwind into Rust.
#[derive(Debug, uniffi::Error)]
pub enum ListenerError {
    /// The listener failed; `reason` says how (a Kotlin binding puts the stack trace there).
    Failed {
        /// What went wrong, as the listener's language renders its exception.
        reason: String,
    },
}

impl std::fmt::Display for ListenerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenerError::Failed { reason } => f.write_str(reason),
        }
    }
}

impl std::error::Error for ListenerError {}

impl From<uniffi::UnexpectedUniFFICallbackError> for ListenerError {
    /// An exception the listener's interface does not declare (a Kotlin `RuntimeException`, a
    /// Swift error of another type): reported like a declared failure, never a panic.
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        ListenerError::Failed { reason: e.reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_to_its_own_variant_with_the_message_and_advice() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            let e = AgentstreamError::from(Error::new(kind, "boom"));
            seen.insert(std::mem::discriminant(&e));
            assert!(e.to_string().starts_with("boom"), "{kind}: {e}");
        }
        assert_eq!(seen.len(), ErrorKind::ALL.len(), "one variant per kind");
        let e = AgentstreamError::from(Error::new(ErrorKind::HarnessNotFound, "claude not found"));
        assert!(e.to_string().contains(ErrorKind::HarnessNotFound.advice()), "{e}");
    }

    #[test]
    fn an_unexpected_foreign_exception_is_a_listener_failure() {
        let e = ListenerError::from(uniffi::UnexpectedUniFFICallbackError::new("java.lang.IllegalStateException: x"));
        assert_eq!(e.to_string(), "java.lang.IllegalStateException: x");
    }
}
