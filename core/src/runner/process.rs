//! Signals to a harness's process group, and how an exit status reads.

use std::process::ExitStatus;

/// Send `signal` to the process group `pgid` (the harness and everything it started).
/// Returns false when the group no longer exists.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// SIGTERM, SIGKILL, SIGSTOP and SIGCONT, re-exported so callers need no libc.
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

/// The exit code and terminating signal of a finished process.
pub fn exit_parts(status: &ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (status.code(), status.signal())
}
