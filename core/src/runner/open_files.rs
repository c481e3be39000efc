//! The process's limit of open files: raised for a program that holds many connections (the
//! server), given back to the harnesses it starts.
//!
//! Most systems start a process with a soft limit of 1024 open files and a much higher hard
//! limit, which the process may raise its soft limit to. A server holding a descriptor per
//! connection wants the hard limit. Its children should not inherit it: a program that uses
//! `select(2)` (or an `fd_set` of its own) breaks on descriptors of 1024 and above, and it only
//! gets those when its limit allows them. So a program that raises its limit with
//! [`raise_open_file_limit`] has every harness (and its supervisor) started with the limit it had
//! before — as the Go runtime does for its programs' children.

use crate::error::{Error, ErrorKind};

/// The process's soft limit of open files before and after [`raise_open_file_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFileLimit {
    /// The soft limit the process had (and its harnesses get).
    pub before: u64,
    /// The soft limit it has now: its hard limit (or the kernel's ceiling, `fs.nr_open`, when the
    /// hard limit is unlimited).
    pub now: u64,
}

#[cfg(unix)]
mod imp {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::{Error, ErrorKind, OpenFileLimit};

    /// The soft and hard limits children are started with; `UNSET` until the limit is raised.
    static CHILD_SOFT: AtomicU64 = AtomicU64::new(UNSET);
    static CHILD_HARD: AtomicU64 = AtomicU64::new(UNSET);
    const UNSET: u64 = u64::MAX;

    fn get() -> std::io::Result<libc::rlimit> {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes one rlimit into the struct it is given, which lives on this stack.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            Ok(limit)
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// The most a soft limit may be when the hard limit is unlimited (Linux refuses more than
    /// `fs.nr_open`).
    fn ceiling() -> u64 {
        std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(1 << 20)
    }

    pub fn soft() -> Option<u64> {
        get().ok().map(|l| l.rlim_cur).filter(|&n| n != libc::RLIM_INFINITY)
    }

    pub fn raise() -> Result<OpenFileLimit, Error> {
        let failed =
            |e: std::io::Error| Error::new(ErrorKind::Internal, format!("cannot raise the limit of open files: {e}"));
        let limit = get().map_err(failed)?;
        let wanted = if limit.rlim_max == libc::RLIM_INFINITY { ceiling() } else { limit.rlim_max };
        if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= wanted {
            return Ok(OpenFileLimit { before: limit.rlim_cur, now: limit.rlim_cur });
        }
        // Recorded first: a run started while the limit changes gets the old one either way.
        // The hard limit before the soft one, which a child reads first (set means both are).
        // Only the first raise records (a later one returned above, the limit being raised).
        if CHILD_SOFT.load(Ordering::Acquire) == UNSET {
            CHILD_HARD.store(limit.rlim_max, Ordering::Release);
            let _ = CHILD_SOFT.compare_exchange(UNSET, limit.rlim_cur, Ordering::AcqRel, Ordering::Acquire);
        }
        let raised = libc::rlimit { rlim_cur: wanted, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the struct it is given, which lives on this stack.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(failed(std::io::Error::last_os_error()));
        }
        Ok(OpenFileLimit { before: limit.rlim_cur, now: wanted })
    }

    /// In a child about to exec (async-signal-safe: two atomic loads and a system call).
    pub fn restore_in_child() {
        let (soft, hard) = (CHILD_SOFT.load(Ordering::Acquire), CHILD_HARD.load(Ordering::Acquire));
        if soft != UNSET {
            let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            // SAFETY: setrlimit reads the struct it is given, which lives on this stack.
            unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
        }
    }
}

/// This process's soft limit of open files; `None` when it is unlimited or cannot be read (or
/// off Unix).
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    return imp::soft();
    #[cfg(not(unix))]
    None
}

/// Raise this process's soft limit of open files to its hard limit, and start every later
/// harness (and its supervisor) with the soft limit it had before. Call it once, early, in a
/// program that holds many descriptors (`agentstream serve` does, before it reads its
/// configuration, whose default `max_connections` follows the limit). Returns both limits; when
/// the soft limit was already the highest allowed, they are equal. An error (refused by the
/// system, or not Unix) leaves the limit as it was.
pub fn raise_open_file_limit() -> Result<OpenFileLimit, Error> {
    #[cfg(unix)]
    return imp::raise();
    #[cfg(not(unix))]
    Err(Error::new(ErrorKind::Unsupported, "the limit of open files is raised on Unix only"))
}

/// What a child started by the runner does before it execs: take back the limit the process had
/// before [`raise_open_file_limit`] (nothing if it was never raised). Async-signal-safe.
#[cfg(unix)]
pub(crate) fn restore_in_child() {
    imp::restore_in_child();
}
