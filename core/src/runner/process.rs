//! Signals to a harness's process group, and how an exit status reads.
//!
//! The runner is implemented for Unix (a process group per harness, POSIX signals). Elsewhere
//! the crate still compiles — decoding, the run stream and replay are platform-free — and
//! starting a run fails with [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported)
//! ([`ensure_supported`]) before anything is spawned.

use std::process::ExitStatus;

use crate::error::{Error, ErrorKind};

/// Whether this platform can run harnesses: `Ok` on Unix, an `unsupported` error elsewhere.
pub fn ensure_supported() -> Result<(), Error> {
    if cfg!(unix) {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Unsupported,
            format!("running a harness is not implemented on {} yet", std::env::consts::OS),
        ))
    }
}

/// Send `signal` to the process group `pgid` (the harness and everything it started).
/// Returns false when the group no longer exists.
#[cfg(unix)]
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// No process groups here: no run is ever started ([`ensure_supported`]), so there is no group.
#[cfg(not(unix))]
pub fn signal_group(_pgid: i32, _signal: i32) -> bool {
    false
}

/// SIGTERM, SIGKILL, SIGSTOP and SIGCONT, re-exported so callers need no libc.
#[cfg(unix)]
pub mod signals {
    /// Polite termination.
    pub const TERM: i32 = libc::SIGTERM;
    /// Forced termination.
    pub const KILL: i32 = libc::SIGKILL;
    /// Pause.
    pub const STOP: i32 = libc::SIGSTOP;
    /// Resume.
    pub const CONT: i32 = libc::SIGCONT;
    /// Interrupt (Ctrl-C).
    pub const INT: i32 = libc::SIGINT;
}

/// The Linux numbers, so the names exist for code shared with Unix; nothing is sent with them.
#[cfg(not(unix))]
pub mod signals {
    /// Polite termination.
    pub const TERM: i32 = 15;
    /// Forced termination.
    pub const KILL: i32 = 9;
    /// Pause.
    pub const STOP: i32 = 19;
    /// Resume.
    pub const CONT: i32 = 18;
    /// Interrupt (Ctrl-C).
    pub const INT: i32 = 2;
}

/// The exit code and terminating signal of a finished process.
#[cfg(unix)]
pub fn exit_parts(status: &ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (status.code(), status.signal())
}

/// The exit code of a finished process (no signals here).
#[cfg(not(unix))]
pub fn exit_parts(status: &ExitStatus) -> (Option<i32>, Option<i32>) {
    (status.code(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runner_is_supported_exactly_on_unix() {
        let supported = ensure_supported();
        assert_eq!(supported.is_ok(), cfg!(unix), "{supported:?}");
        if let Err(e) = supported {
            assert_eq!(e.kind, ErrorKind::Unsupported);
            assert!(e.to_string().contains(std::env::consts::OS), "{e}");
        }
    }

    /// Where the runner is not implemented, a run is refused with `unsupported` (nothing spawned).
    #[cfg(not(unix))]
    #[test]
    fn starting_a_run_is_unsupported_here() {
        use crate::Agent;
        use crate::runner::{AgentConfig, RunOptions, Session};
        let session = Session::new(AgentConfig::new(Agent::Claude));
        let err = session.start_run(RunOptions::new("hello")).err().expect("a run cannot start here");
        assert_eq!(err.kind, ErrorKind::Unsupported);
    }
}
